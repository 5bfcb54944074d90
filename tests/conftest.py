"""Shared helpers of the test suite.

The tests run from the repository root without installing the package, so the root
is put on `sys.path` here.  Fixtures (each returns a helper function):

- `run_cli(*args)` runs `python -m rlang.cli ARGS…` in a fresh process from the
  repository root and returns (exit code, stdout, stderr).  It is what a user sees,
  tracebacks included, but costs a Python start-up (~1 s): use it sparingly.
- `cli(*args)` calls `rlang.cli.main(args)` in this process and captures stdout and
  stderr; it is fast, and what most command-line tests use.
- `write_rev(tmp_path, name, source)` writes a dedented program to a file.

The cuda backend's tests (and any other test that runs a kernel) use Numba's CUDA
simulator: NUMBA_ENABLE_CUDASIM is read when numba.cuda is first imported, so it is
set here, before any test imports it.  On a machine with a GPU, `RLANG_CUDA_REAL=1`
runs the same tests on the GPU instead.  PTX is emitted in a child process
(tests/backends/cuda/test_ptx_and_cli.py): the simulator and the real compiler cannot
share one process.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap

if os.environ.get("RLANG_CUDA_REAL", "0") in ("", "0"):
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("numba.cuda was imported before the tests set up the simulator")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# `rlang.load` without a backend means "auto" (llvm where it can run).  The tests
# that do not name a backend were written against the interpreter, the reference,
# so they keep it; the default itself is tested in tests/unit/test_default_backend.py
# and every backend is named explicitly where a test compares them.
os.environ.setdefault("RLANG_BACKEND", "interp")


def _run_cli(*args: str, cwd: Path | str = REPO, timeout: float = 120) -> tuple[int, str, str]:
    """`python -m rlang.cli ARGS…` in a subprocess: (exit code, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-m", "rlang.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)
    return done.returncode, done.stdout, done.stderr


def _cli(*args: str) -> tuple[int, str, str]:
    """`rlang.cli.main(ARGS)` in this process: (exit code, stdout, stderr)."""
    from rlang.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _write_rev(directory: Path, name: str, source: str) -> Path:
    """Write the dedented `source` to `directory/name` (creating folders) and return it."""
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def run_cli():
    return _run_cli


@pytest.fixture
def cli():
    return _cli


@pytest.fixture
def write_rev():
    return _write_rev
