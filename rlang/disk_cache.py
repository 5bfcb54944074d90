"""Where rlang keeps what it computed once for later processes, and what that
depends on: `cache_dir()` (`$RLANG_CACHE_DIR`, else ~/.cache/rlang) and
`package_digest()`, a digest of rlang's own source files.  The llvm backend keeps
compiled modules there (backends/llvm/jit.py) and the analyses a warm first call
would otherwise lower a program for (`remembered`), the loader parsed programs
(frontend/parse_cache.py).  An entry that cannot be written only costs the next
process the work again.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

_PACKAGE_DIGEST: list = []


def cache_dir() -> Path:
    return Path(os.environ.get("RLANG_CACHE_DIR") or Path.home() / ".cache" / "rlang")


def package_digest() -> str:
    """A digest of the package's source files as the file system describes them
    (name, size, modification time), so that a changed rlang never reuses what an
    older one cached.  Reading the files' bytes instead cost 17 ms of a first call
    that the disk cache serves in 50 ms, and walking them with pathlib 6–8 ms where
    os.scandir takes 1–2."""
    if not _PACKAGE_DIGEST:
        package = os.path.dirname(os.path.abspath(__file__))       # rlang/
        lines = []
        _source_files(package, "", lines)
        digest = hashlib.sha256("".join(sorted(lines)).encode())
        _PACKAGE_DIGEST.append(digest.hexdigest()[:16])
    return _PACKAGE_DIGEST[0]


def _source_files(folder: str, relative: str, lines: list) -> None:
    """Append a line `name|size|mtime` for every .py file under `folder`."""
    with os.scandir(folder) as entries:
        for entry in entries:
            name = relative + entry.name
            if entry.is_dir(follow_symlinks=False):
                _source_files(entry.path, name + "/", lines)
            elif entry.name.endswith(".py"):
                status = entry.stat()
                lines.append(f"{name}|{status.st_size}|{status.st_mtime_ns}\n")


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file (a reader never sees half a
    file); an OSError (an unwritable cache) is left to the caller."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def remembered(key: str, compute):
    """`compute()`'s result (a small picklable value) for `key`, from the disk cache
    when an earlier process of this rlang stored it there, else computed and
    stored.  `key` must cover everything the result depends on."""
    digest = hashlib.sha256(f"{package_digest()}|{key}".encode()).hexdigest()[:32]
    path = cache_dir() / f"{digest}.value"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:       # noqa: BLE001 - missing or damaged: computed again
        pass
    value = compute()
    try:
        write_atomically(path, pickle.dumps(value))
    except OSError:
        pass
    return value
