"""Golden tests: rev programs with their expected command-line output.

    tests/golden/errors/NAME.rev    + NAME.err   exact stderr of `rlang run` (exit status 1)
    tests/golden/errors/check_*.rev + NAME.err   exact stderr of `rlang check` (exit status 1)
    tests/golden/outputs/NAME.rev   + NAME.out   exact stdout of `rlang run` (exit status 0)
    tests/golden/inverse/NAME.rev   + NAME.inv   exact stdout of `rlang invert` (exit status 0)

A first line `# args: …` gives the rest of the command line (split like a shell
would: `# args: f 1 '[1.0, 2.0]' --inverse`): for `run`, the function, its
arguments and flags; for `invert`, the function to invert.

Every command runs as `python -m rlang.cli …` in a subprocess, from the repository
root, on the relative path `tests/golden/…/NAME.rev`, so the golden text does not
depend on the machine.  Besides the exact text, an error case must exit with status
1, print nothing on stdout (unless the program's `@safe` prints ran before the
failure) and never show "Traceback" or an internal error; an inverse must itself
parse and pass `rlang check`, inverting it again must give back the original
program as an AST (spans ignored), and for each `# semantics: FUNCTION ARGS…` line
at the top of an inverse case, FUNCTION of the printed inverse must undo FUNCTION of
the original on ARGS (run in-process through the Python API).

Regenerating: run

    RLANG_REGEN_GOLDEN=1 python -m pytest tests/golden -q

and the tests write the golden files (.err/.out/.inv) instead of comparing them.
Then read every changed file by eye (`git diff tests/golden`) before committing: the
point of these files is that a person has judged each message to be right.

Known bugs of rlang are listed in KNOWN_PROBLEMS below, each with its reason.  Those cases have no golden file, since the current text
is wrong; they are strict xfails that assert what the fixed behaviour must look
like, so they start failing (XPASS) once the bug is fixed: then remove the entry,
regenerate, review, and commit the new golden file.

The commands of all collected cases are started together on a small thread pool at
the first test, so the suite costs about (number of commands × start-up time of the
CLI) / number of CPUs.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
REGEN = os.environ.get("RLANG_REGEN_GOLDEN") == "1"
TIMEOUT_S = 120
WORKERS = max(2, min(16, 2 * (os.cpu_count() or 1)))

ERRORS = sorted((GOLDEN / "errors").glob("*.rev"))
OUTPUTS = sorted((GOLDEN / "outputs").glob("*.rev"))
INVERSES = sorted((GOLDEN / "inverse").glob("*.rev"))

#: Error cases whose stdout is not empty: the program's @safe prints ran first.
PRINTS_BEFORE_ERROR = {"run_assert_failed"}


# ------------------------------------------------------------------ known problems

#: What outputs/float_edge_values.rev must print (IEEE 754 / NumPy / Julia agree).
FLOAT_EDGE_VALUES = """\
a = -inf
b = -inf
c = -inf
d = inf
e = -inf
f = inf
g = nan
h = inf
k = -inf
m = -1.0
"""

def _text(proc) -> str:
    """stderr without the file names (a name such as `x_backward.rev` must not count)."""
    return re.sub(r"tests/golden/\S+?\.rev", "FILE", proc.stderr)


def _first_line(proc) -> str:
    return (_text(proc).splitlines() or [""])[0]


def _strict_json(proc) -> bool:
    def reject(constant):
        raise ValueError(f"{constant} is not JSON")
    try:
        json.loads(proc.stdout.splitlines()[-1], parse_constant=reject)
    except (ValueError, IndexError):
        return False
    return True


#: case id ("errors/NAME", "outputs/NAME", "inverse/NAME") -> (reason, fixed), where
#: `fixed(proc)` says whether the output looks the way it will once the bug is fixed
#: (on top of the checks every case of its kind gets).
KNOWN_PROBLEMS: dict[str, tuple[str, Callable]] = {
}


# ------------------------------------------------------------------ running the CLI

def case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def case_args(path: Path) -> list[str]:
    """The extra command-line words of a case, from a first line `# args: …`."""
    first = path.read_bytes().split(b"\n", 1)[0].decode("utf-8", errors="replace")
    if first.startswith("# args:"):
        return shlex.split(first[len("# args:"):])
    return []


def relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def command(path: Path) -> tuple[str, ...]:
    kind = path.parent.name
    if kind == "inverse":
        return ("invert", relative(path), *case_args(path))
    if kind == "errors" and path.name.startswith("check_"):
        return ("check", relative(path))
    return ("run", relative(path), *case_args(path))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "rlang.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, encoding="utf-8",
                          errors="replace", timeout=TIMEOUT_S)


def run_case(path: Path, scratch: Path):
    """The process of a case; for an inverse, also `rlang check` of the printed inverse
    (written to `scratch`)."""
    proc = run_cli(*command(path))
    if path.parent.name != "inverse" or proc.returncode != 0:
        return proc, None
    inverse_file = scratch / path.name
    inverse_file.write_text(proc.stdout, encoding="utf-8")
    return proc, run_cli("check", str(inverse_file))


class Runner:
    """Runs the cases' commands on a thread pool, each once per session."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.pool = ThreadPoolExecutor(max_workers=WORKERS)
        self.futures: dict[Path, Future] = {}

    def submit(self, path: Path) -> None:
        if path not in self.futures:
            self.futures[path] = self.pool.submit(run_case, path, self.scratch)

    def result(self, path: Path):
        self.submit(path)
        return self.futures[path].result()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture(scope="session")
def cli(request, tmp_path_factory) -> Runner:
    runner = Runner(tmp_path_factory.mktemp("inverses"))
    for item in request.session.items:       # start every collected case now
        callspec = getattr(item, "callspec", None)
        path = callspec.params.get("path") if callspec is not None else None
        if isinstance(path, Path) and path.is_relative_to(GOLDEN):
            runner.submit(path)
    yield runner
    runner.close()


def params(paths: list[Path]) -> list:
    out = []
    for path in paths:
        known = KNOWN_PROBLEMS.get(case_id(path))
        marks = [pytest.mark.xfail(strict=True, reason=known[0])] if known else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


def compare_golden(path: Path, suffix: str, proc, actual: str, what: str) -> None:
    """Compare `actual` with the golden file (or write it, when regenerating).  A known
    problem has no golden file: its `fixed` predicate is asserted instead."""
    golden = path.with_suffix(suffix)
    known = KNOWN_PROBLEMS.get(case_id(path))
    if known is not None:
        if REGEN and golden.exists():
            golden.unlink()          # never store text that enshrines a known bug
        assert known[1](proc), f"still shows the known problem: {known[0]}"
        return
    if REGEN:
        golden.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert golden.exists(), (f"{golden.name} is missing; run with RLANG_REGEN_GOLDEN=1 "
                             "and review the new file")
    expected = golden.read_text(encoding="utf-8")
    assert actual == expected, f"{what} differs from {relative(golden)}"


def describe(proc) -> str:
    return (f"exit status {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}"
            f"\n--- stderr\n{proc.stderr[-3000:]}")


def assert_no_crash(proc) -> None:
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, describe(proc)
    assert "internal error" not in text, describe(proc)


# ------------------------------------------------------------------------ the tests

def test_case_counts():
    assert len(ERRORS) >= 45
    assert len(OUTPUTS) >= 20
    assert len(INVERSES) >= 12
    assert sum(p.name.startswith("check_") for p in ERRORS) >= 3
    stems = {case_id(p) for p in ERRORS + OUTPUTS + INVERSES}
    assert set(KNOWN_PROBLEMS) <= stems, set(KNOWN_PROBLEMS) - stems


def test_no_stray_golden_files():
    """Every golden file belongs to a program, and known problems have none."""
    for directory, suffix in (("errors", ".err"), ("outputs", ".out"), ("inverse", ".inv")):
        for golden in (GOLDEN / directory).glob(f"*{suffix}"):
            program = golden.with_suffix(".rev")
            assert program.exists(), f"{relative(golden)} has no program"
            if not REGEN:
                assert case_id(program) not in KNOWN_PROBLEMS, \
                    f"{relative(golden)} enshrines a known problem"


@pytest.mark.parametrize("path", params(ERRORS))
def test_error(path: Path, cli: Runner):
    proc, _ = cli.result(path)
    assert_no_crash(proc)
    assert proc.returncode == 1, describe(proc)
    if path.stem in PRINTS_BEFORE_ERROR:
        assert proc.stdout != "", describe(proc)
    else:
        assert proc.stdout == "", describe(proc)
    assert proc.stderr.strip(), describe(proc)
    compare_golden(path, ".err", proc, proc.stderr, "stderr")


@pytest.mark.parametrize("path", params(OUTPUTS))
def test_output(path: Path, cli: Runner):
    proc, _ = cli.result(path)
    assert_no_crash(proc)
    assert proc.returncode == 0, describe(proc)
    assert proc.stderr == "", describe(proc)
    if "--json" in case_args(path):
        json.loads(proc.stdout.splitlines()[-1])    # the last line is one JSON object
    compare_golden(path, ".out", proc, proc.stdout, "stdout")


@pytest.mark.parametrize("path", params(INVERSES))
def test_inverse(path: Path, cli: Runner):
    from rlang.frontend.ast import Program
    from rlang.frontend.invert import invert_program
    from rlang.frontend.parser import parse

    proc, checked = cli.result(path)
    assert_no_crash(proc)
    assert proc.returncode == 0, describe(proc)
    assert proc.stderr == "", describe(proc)
    compare_golden(path, ".inv", proc, proc.stdout, "the printed inverse")

    # The printed inverse is valid rev: it parses and passes `rlang check`.
    assert checked.returncode == 0, describe(checked)
    assert checked.stdout.endswith(": ok\n"), describe(checked)

    # Inverting the inverse gives back the original program (as an AST).
    only = (case_args(path) or [None])[0]
    original = parse(path.read_text(encoding="utf-8"), relative(path))
    if only is not None:
        original = Program(tuple(item for item in original.items
                                 if getattr(item, "name", None) == only))
    inverse = parse(proc.stdout, f"<inverse of {relative(path)}>")
    assert invert_program(inverse, only) == original

    # The printed inverse computes the inverse: for each `# semantics: F ARGS…` line,
    # F of the printed program undoes F of the original program.
    check_semantics(path, proc.stdout)


def semantics_lines(path: Path) -> list[list[str]]:
    """The `# semantics: FUNCTION ARGS…` lines at the top of an inverse case."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if line.startswith("# semantics:"):
            out.append(shlex.split(line[len("# semantics:"):]))
    return out


def check_semantics(path: Path, inverse_source: str) -> None:
    import rlang
    from rlang.cli import parse_argument

    forward = rlang.load(str(path))
    backward = rlang.loads(inverse_source, file=f"<inverse of {relative(path)}>")
    for name, *words in semantics_lines(path):
        args = [parse_argument(word, k + 1) for k, word in enumerate(words)]
        after = forward[name](*copies(args))
        again = backward[name](*copies(after))
        assert same_values(again, args), (
            f"{name}{tuple(words)}: forward gives {show(after)}, and the printed inverse "
            f"turns that into {show(again)}, not back into the arguments")


def copies(values) -> list:
    import copy
    return [copy.deepcopy(value) for value in values]


def show(values) -> str:
    from rlang.values import format_value
    return "(" + ", ".join(format_value(value) for value in values) + ")"


def same_values(got, expected) -> bool:
    import math

    import numpy as np

    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not np.allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12):
                return False
        elif isinstance(a, float) or isinstance(b, float):
            if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12):
                return False
        elif a != b or type(a) is not type(b):
            return False
    return True
