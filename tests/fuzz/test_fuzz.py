"""The fuzzer (tests/fuzz/, issue #23): its runner catches what it must, its cases are
their numbers, and a fixed-seed slice of every family finds no defect.

`RLANG_FUZZ_COUNT` sets the slice's size (default 270: a few minutes on two cores);
`python -m tests.fuzz --count N --seed S` runs more."""
from __future__ import annotations

import os

import pytest

from .cases import FAMILIES, SELFTEST, Case, cases, describe, spec_of
from .runner import run

SLICE_SEED = 2026
SLICE_COUNT = int(os.environ.get("RLANG_FUZZ_COUNT", "270"))


def test_the_runner_reports_crashes_hangs_and_tracebacks(tmp_path):
    selftests = cases(0, 12, [SELFTEST])
    expected = [spec_of(case) for case in selftests]
    assert {"ok", "error", "traceback", "crash", "hang"} <= set(expected), \
        "pick a seed whose selftest cases cover every outcome"
    report = run(selftests, jobs=2, timeout=4.0, report_dir=tmp_path)
    assert sum(report.counts.values()) == len(selftests)
    assert dict(report.counts) == {k: expected.count(k) for k in set(expected)}
    defects = {(f.case.index, f.kind) for f in report.findings}
    assert defects == {(c.index, k) for c, k in zip(selftests, expected)
                       if k in ("traceback", "crash", "hang")}
    for finding in report.findings:
        text = (tmp_path / f"selftest-0-{finding.case.index}.txt").read_text()
        assert f"--case {finding.case.index}" in text and finding.kind in text
    crash = next(f for f in report.findings if f.kind == "crash")
    assert "SIGSEGV" in crash.detail


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_case_is_made_from_its_numbers_alone(family):
    for index in range(5):
        case = Case(family, 11, index)
        assert repr(spec_of(case)) == repr(spec_of(case))
        assert describe(case)
    specs = {repr(spec_of(Case(family, 11, k))) for k in range(5)}
    assert len(specs) > 1


def test_a_fixed_seed_slice_finds_no_defect(tmp_path):
    report = run(cases(SLICE_SEED, SLICE_COUNT), jobs=2, timeout=120.0, report_dir=tmp_path)
    assert sum(report.counts.values()) == SLICE_COUNT
    assert set(report.families) == set(FAMILIES)
    shown = "\n\n".join(path.read_text()[:3000] for path in sorted(tmp_path.glob("*.txt"))[:5])
    assert not report.findings, f"{report.summary()}\n{shown}"


def test_gradients_within_their_inputs_last_bits_are_no_disagreement():
    """A program whose gradient pass magnifies the compiled exp's last bit (Note
    [Gradients as exact as their inputs], tests/gradient_agreement.py) agrees within
    how far one ulp of its inputs moves the interpreter's gradient; the same gradient
    off by 1e-8 of it does not."""
    import numpy as np

    import rlang

    from .paths import share_test_helpers
    from .programs import _within_spread
    share_test_helpers()
    from gradient_agreement import MAGNIFYING_PROGRAM as _MAGNIFYING

    spec = {"source": _MAGNIFYING, "top": "f", "loss": "v[1]",
            "args": [0.0, 0.0, 0.75, 0.0, np.array([0.9375, 0.5, 0.0]), 0]}
    modules = {b: rlang.loads(_MAGNIFYING, backend=b) for b in ("interp", "llvm")}
    got = {b: rlang.gradient(m.f, [a.copy() if isinstance(a, np.ndarray) else a
                                   for a in spec["args"]], loss="v[1]")
           for b, m in modules.items()}
    assert abs(got["llvm"][2] - got["interp"][2]) > 1e-12 * abs(got["interp"][2])
    assert _within_spread(spec, modules["interp"], got)
    off = dict(got, llvm=[None if g is None else g * (1 + 1e-8) for g in got["llvm"]])
    assert not _within_spread(spec, modules["interp"], off)
