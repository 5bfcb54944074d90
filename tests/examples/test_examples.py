"""Run every program in examples/ through the command line and compare its output.

Each `examples/NAME.rev` must have an `examples/NAME.expected` holding exactly the
stdout of `rlang run examples/NAME.rev` (main's store and any `@safe` prints).  The
expected files were computed independently of the interpreter (by hand or with a
few lines of Python), so these tests check the interpreter, not just its stability.

`WORKER_RUNS` also runs the worker function of an example directly, forward and with
`--inverse` (the output of a forward run given back as input must give back the
input), through `rlang run FILE FUNCTION ARGS… [--inverse]`; `FAILING_RUNS` gives
inputs that a worker must reject with a clean error.  Every example must also give
the same output with `--no-invcheck`, and open with a `#` comment block.

The CLI is run as `python -m rlang.cli` from the repository root, so the tests work
without installing the package.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.rev"))
TIMEOUT_S = 600


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "rlang.cli", "run", *args],
        cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8",
        timeout=TIMEOUT_S,
    )


def assert_output(proc: subprocess.CompletedProcess, expected: str) -> None:
    assert proc.returncode == 0, f"exit status {proc.returncode}\nstderr:\n{proc.stderr}"
    assert proc.stdout == expected, f"stderr:\n{proc.stderr}"


#: The examples the project promises (more may be added).
REQUIRED = {
    "multiplier", "fibonacci", "sqrt", "factor", "perm_to_code", "rle", "bennett",
    "affine", "unitary", "sparse_dot", "qr",
}


def test_required_examples_exist():
    missing = REQUIRED - {path.stem for path in EXAMPLE_FILES}
    assert not missing, f"missing examples: {sorted(missing)}"


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_output(path: Path):
    expected_path = path.with_suffix(".expected")
    assert expected_path.exists(), f"{path.name} has no {expected_path.name}"
    proc = run_cli(f"examples/{path.name}")
    assert_output(proc, expected_path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_output_without_invcheck(path: Path):
    """Turning the reversibility checks off must not change what a correct program does."""
    expected_path = path.with_suffix(".expected")
    assert expected_path.exists(), f"{path.name} has no {expected_path.name}"
    proc = run_cli(f"examples/{path.name}", "--no-invcheck")
    assert_output(proc, expected_path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_example_starts_with_comment_block(path: Path):
    lines = path.read_text(encoding="utf-8").splitlines()
    header = []
    for line in lines:
        if not line.startswith("#"):
            break
        header.append(line)
    assert len(header) >= 2, f"{path.name} must open with a `#` comment block saying what it shows"


# ------------------------------------------------------------------ worker runs

def _floats(values) -> str:
    return "[" + ", ".join(repr(float(v)).replace("e+", "e") for v in values) + "]"


def _lines(*pairs) -> str:
    return "".join(f"{name} = {value}\n" for name, value in pairs)


_BENNETT_OUT = _floats([1.0] + [0.0] * 255 + [2.0 ** 256])
_BENNETT_IN = _floats([1.0] + [0.0] * 256)
_QR_A = "[[1.0, 3.0, 9.0], [1.0, 1.0, 1.0], [1.0, 3.0, 5.0], [1.0, 1.0, -3.0]]"
_QR_Q = "[[0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.5, 0.5, -0.5], [0.5, -0.5, -0.5]]"
_QR_R = "[[2.0, 4.0, 6.0], [0.0, 2.0, 8.0], [0.0, 0.0, 4.0]]"
_SPARSE = (
    ("acolptr", "[0, 2, 4, 6, 6, 7]"),
    ("arowval", "[0, 2, 1, 3, 0, 3, 1]"),
    ("anzval", "[1.0, 4.0, 3.0, 5.0, 2.0, 6.0, 8.0]"),
    ("bcolptr", "[0, 2, 3, 5, 6, 6]"),
    ("browval", "[0, 2, 1, 1, 3, 2]"),
    ("bnzval", "[0.5, 1.0, 2.0, 1.0, -1.0, 7.0]"),
)
_SPARSE_ARGS = [value for _, value in _SPARSE]
_W = "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"

#: (id, example, function, args, inverse?, expected stdout)
WORKER_RUNS = [
    ("multiplier-fwd", "multiplier", "multiplier", ["2", "3", "5"], False,
     _lines(("y!", 17), ("a", 3), ("b", 5))),
    ("multiplier-inv", "multiplier", "multiplier", ["17", "3", "5"], True,
     _lines(("y!", 2), ("a", 3), ("b", 5))),
    ("rrfib-fwd", "fibonacci", "rrfib", ["0", "10"], False, _lines(("out!", 89), ("n", 10))),
    ("rrfib-inv", "fibonacci", "rrfib", ["89", "10"], True, _lines(("out!", 0), ("n", 10))),
    ("rrfib-inv-from-100", "fibonacci", "rrfib", ["100", "6"], True,
     _lines(("out!", 87), ("n", 6))),
    ("root-fwd", "sqrt", "root", ["66", "0"], False, _lines(("num", 2), ("r", 8))),
    ("root-inv", "sqrt", "root", ["2", "8"], True, _lines(("num", 66), ("r", 0))),
    ("root-fwd-square", "sqrt", "root", ["1000000", "0"], False,
     _lines(("num", 0), ("r", 1000))),
    ("root-inv-17", "sqrt", "root", ["1", "4"], True, _lines(("num", 17), ("r", 0))),
    ("factor-fwd", "factor", "factor", ["840", "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"], False,
     _lines(("num", 0), ("fact", "[0, 2, 2, 2, 3, 5, 7, 0, 0, 0]"))),
    ("factor-inv", "factor", "factor", ["0", "[0, 2, 2, 2, 3, 5, 7, 0, 0, 0]"], True,
     _lines(("num", 840), ("fact", "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"))),
    ("factor-fwd-prime", "factor", "factor", ["97", "[0, 0, 0]"], False,
     _lines(("num", 0), ("fact", "[0, 97, 0]"))),
    ("factor-inv-1001", "factor", "factor", ["0", "[0, 7, 11, 13, 0, 0]"], True,
     _lines(("num", 1001), ("fact", "[0, 0, 0, 0, 0, 0]"))),
    ("factor-inv-1024", "factor", "factor",
     ["0", "[0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0]"], True,
     _lines(("num", 1024), ("fact", "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"))),
    ("perm-fwd", "perm_to_code", "perm_to_code", ["[3, 7, 0, 5, 1, 6, 2, 4]"], False,
     _lines(("x", "[0, 1, 0, 2, 1, 4, 2, 4]"))),
    ("perm-inv", "perm_to_code", "perm_to_code", ["[0, 1, 0, 2, 1, 4, 2, 4]"], True,
     _lines(("x", "[3, 7, 0, 5, 1, 6, 2, 4]"))),
    ("encode-fwd", "rle", "encode", ["[5, 5, 7, 0]", "[0, 0, 0, 0, 0, 0, 0, 0]"], False,
     _lines(("text", "[0, 0, 0, 0]"), ("arc", "[5, 2, 7, 1, 0, 0, 0, 0]"))),
    ("encode-inv", "rle", "encode", ["[0, 0, 0, 0]", "[5, 2, 7, 1, 0, 0, 0, 0]"], True,
     _lines(("text", "[5, 5, 7, 0]"), ("arc", "[0, 0, 0, 0, 0, 0, 0, 0]"))),
    ("bennett-small", "bennett", "bennett", ["[1.0, 0.0, 0.0, 0.0, 0.0]", "2", "0", "4"], False,
     _lines(("state", "[1.0, 0.0, 0.0, 0.0, 16.0]"), ("k", 2), ("base", 0), ("len", 4))),
    ("bennett-inv", "bennett", "bennett", [_BENNETT_OUT, "4", "0", "256"], True,
     _lines(("state", _BENNETT_IN), ("k", 4), ("base", 0), ("len", 256))),
    ("affine-fwd", "affine", "i_affine!",
     ["[0.0, 0.0]", _W, "[0.25, 0.5]", "[1.0, 0.5, -1.0]"], False,
     _lines(("y!", "[-0.75, 1.0]"), ("W", _W), ("b", "[0.25, 0.5]"), ("x", "[1.0, 0.5, -1.0]"))),
    ("affine-inv", "affine", "i_affine!",
     ["[-0.75, 1.0]", _W, "[0.25, 0.5]", "[1.0, 0.5, -1.0]"], True,
     _lines(("y!", "[0.0, 0.0]"), ("W", _W), ("b", "[0.25, 0.5]"), ("x", "[1.0, 0.5, -1.0]"))),
    ("sparse-fwd", "sparse_dot", "sparse_dot", ["0.0", "4", "5", *_SPARSE_ARGS], False,
     _lines(("r!", 4.5), ("m", 4), ("n", 5), *_SPARSE)),
    ("sparse-inv", "sparse_dot", "sparse_dot", ["4.5", "4", "5", *_SPARSE_ARGS], True,
     _lines(("r!", 0.0), ("m", 4), ("n", 5), *_SPARSE)),
    ("qr-inv", "qr", "qr!", [_QR_Q, _QR_R, _QR_A], True,
     _lines(("Q!", "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]"),
            ("R!", "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]"), ("A", _QR_A))),
]


@pytest.mark.parametrize(
    "example, function, args, inverse, expected",
    [run[1:] for run in WORKER_RUNS],
    ids=[run[0] for run in WORKER_RUNS],
)
def test_worker_run(example, function, args, inverse, expected):
    path = EXAMPLES / f"{example}.rev"
    assert path.exists(), f"no example {path.name}"
    extra = ["--inverse"] if inverse else []
    proc = run_cli(f"examples/{path.name}", function, *args, *extra)
    assert_output(proc, expected)


#: Worker runs that must fail with a clean error (exit status 1, no traceback):
#: (id, example, function, args, inverse?)
FAILING_RUNS = [
    # 84 = 9 * 9 + 3, so (20, 8) is not an output of root: a post-condition fails
    ("root-inv-not-an-output", "sqrt", "root", ["20", "8"], True),
    # not a permutation: x[0] > x[2] is false but x[0] >= x[2] holds afterwards
    ("perm-not-a-permutation", "perm_to_code", "perm_to_code", ["[0, 1, 0]"], False),
    # an empty text: the encoder runs off the end of text
    ("encode-empty-text", "rle", "encode", ["[0, 0]", "[0, 0, 0, 0]"], False),
]


@pytest.mark.parametrize(
    "example, function, args, inverse",
    [run[1:] for run in FAILING_RUNS],
    ids=[run[0] for run in FAILING_RUNS],
)
def test_worker_run_fails_cleanly(example, function, args, inverse):
    extra = ["--inverse"] if inverse else []
    proc = run_cli(f"examples/{example}.rev", function, *args, *extra)
    assert proc.returncode == 1, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert f"examples/{example}.rev:" in proc.stderr and "error" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
