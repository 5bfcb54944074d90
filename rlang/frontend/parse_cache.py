"""Parsed programs kept on disk: `parsed(text, file)` is `parser.parse(text, file)`,
from the disk cache where this rlang parsed the same text under the same name
before (Note [Parsed programs on disk]).

Note [Parsed programs on disk]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A process that loads a program whose code the llvm backend's disk cache holds
still parsed its files: 40 ms for GradBench's GMM and the two standard-library
files it includes, and 28 ms to import lark first, of the 240 ms from `rlang.load`
to the first gradient.  A program's AST depends only on its text, the name it is
read under (spans carry it) and rlang's own code, so the AST is kept, pickled
(22 KB for GMM, 0.75 ms to read back), under a digest of the three.

- Only files are kept: a program given as a string ("<string>") is parsed, as
  tests and tools make thousands of them.
- Reading an entry registers the text for error messages, as parsing does.
- A text that does not parse is never kept, so its error is the parser's.
- An entry that cannot be read or written (a damaged file, an unwritable
  directory, an AST nested too deep for pickle) only costs the parse.
- Pickling recurses as deep as the tree, so it runs on the deep-stack thread
  (rlang/deep.py), as the parser does: in the main thread a deeply nested
  expression crashed the process.  Reading an entry back does not recurse (the
  unpickler keeps its own stack, and a record's state is set without calls), so
  a program found in the cache is read in the caller's thread: starting the
  deep-stack thread for each of GMM's three files cost a few ms of its first
  gradient.
"""
from __future__ import annotations

import hashlib
import pickle

from ..deep import run_deep
from ..disk_cache import cache_dir, package_digest, write_atomically
from ..span import register_source

#: Bump when the entries' format changes (rlang's sources are in package_digest).
FORMAT = "1"


def parsed(text: str, file: str):
    """The ast.Program of `text` (named `file`), parsed or read from the cache."""
    if not isinstance(text, str) or file.startswith("<"):  # (the parser's error; text
        return run_deep(_parse, text, file)                 # given as a string)
    path = cache_dir() / "parsed" / f"{_digest(text, file)}.rpa"
    try:
        program = pickle.loads(path.read_bytes())
    except Exception:       # noqa: BLE001 - absent or damaged: parse
        program = None
    if program is not None:
        register_source(file, text)
        return program
    return run_deep(_parsed_and_kept, text, file, path)  # (pickling recurses as deep
    #                                                      as the AST)


def _digest(text: str, file: str) -> str:
    return hashlib.sha256(f"{FORMAT}|{package_digest()}|{len(file)}|{file}|".encode()
                          + text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _parsed_and_kept(text: str, file: str, path):
    program = _parse(text, file)
    try:
        write_atomically(path, pickle.dumps(program, protocol=pickle.HIGHEST_PROTOCOL))
    except (OSError, RecursionError, pickle.PicklingError):
        pass
    return program


def _parse(text, file: str):
    from .parser import parse      # lark: imported on the first parse, not by `import rlang`

    return parse(text, file)
