"""Every program of tests/golden/outputs/ runs on llvm as on the interpreter: the same
`rlang run --json` output, or the same failure.  (Their golden files are the interpreter's output; two of them
printed different f32 values on llvm until the fuzzer found it, issue #23.)"""
from __future__ import annotations

import json
from pathlib import Path

import pytest


GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "outputs"
PROGRAMS = sorted(p for p in GOLDEN.glob("*.rev") if "function main(" in p.read_text())


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(1.0, abs(b)) or (a != a and b != b)
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_a_golden_program_runs_on_llvm_as_on_the_interpreter(cli, path):
    interp = cli("run", str(path), "--json")
    llvm = cli("run", str(path), "--json", "--backend", "llvm")
    assert llvm[0] == interp[0], f"{llvm[2]}\n{interp[2]}"
    if interp[0] == 0:
        got, expected = (json.loads(out.strip().splitlines()[-1]) for _, out, _ in (llvm, interp))
        assert _same(got, expected), f"llvm {got}\ninterpreter {expected}"
