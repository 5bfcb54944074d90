"""Generated programs over f64, fixed, ulog and complex values give the same results
on the llvm backend as on the interpreter (LANGUAGE.md §3, §9, §10; issue #5).

The programs are drawn by tests/property/systems.py (the generator of
tests/property/generators.py with the number systems added).  For each one:

- forward and inverse runs of the top function agree: integers, bools and fixed
  values bit for bit, floats, complex parts and ulog logarithms within 1e-12 of the
  magnitude of the values involved (`number_systems.agree`), the `@safe` output
  character for character; a run the interpreter stops with an error stops on llvm
  with the same error;
- running ~f after f on llvm gives what it gives on the interpreter, and gives back
  the integer, bool and fixed inputs exactly (floats are restored up to rounding,
  or not at all when a value overflowed);
- `rlang.gradient` agrees for a loss drawn among the float, fixed, ulog and complex
  views of the parameters, and `rlang.hessian` over the f64 inputs (or both
  backends refuse it with the same error).
"""
from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlang
from rlang.numbers import ULog
from gradient_agreement import assert_same_gradients
from number_systems import agree, magnitude

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
from systems import CPLX, CPLXS, F64, F64S, FIXED, FIXEDS, ULOG, ULOGS, system_cases  # noqa
from test_llvm_gradients import assert_same_matrix  # noqa: E402

#: `RLANG_PROPERTY_SCALE=20` multiplies the number of examples (and draws them at
#: random instead of from a fixed seed) for a longer search.
SCALE = float(os.environ.get("RLANG_PROPERTY_SCALE", "1"))


def _settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None,
                    derandomize=SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def outcome(fn, args):
    """(results or the RlangError raised, printed output) of one call on copies."""
    out = io.StringIO()
    with redirect_stdout(out):
        try:
            result = fn(*_copy(args))
        except rlang.RlangError as error:
            result = error
    return result, out.getvalue()


def assert_same_error(got, expected, context):
    assert isinstance(got, rlang.RlangError), f"{context}\nllvm gave {got!r}, " \
        f"interpreter raised {expected}"
    assert type(got) is type(expected) and got.message == expected.message, \
        f"{context}\nllvm: {got}\ninterpreter: {expected}"


def assert_agree(got, expected, scale, context, rtol=1e-12):
    assert len(got) == len(expected), context
    for k, (a, b) in enumerate(zip(got, expected)):
        assert agree(a, b, scale, rtol), f"{context}\nargument {k}: llvm {a!r}, " \
            f"expected {b!r} (scale {scale})"


@_settings(25)      # (40 took 40 s; RLANG_PROPERTY_SCALE raises it)
@given(system_cases())
def test_generated_system_programs_agree(case):
    gp, args = case
    interp, llvm = rlang.loads(gp.source), rlang.loads(gp.source, backend="llvm")
    context = f"{gp.source}\nargs {args}"
    forward = {}
    for direction in (lambda m: m[gp.top], lambda m: ~m[gp.top]):
        expected, expected_out = outcome(direction(interp), args)
        got, got_out = outcome(direction(llvm), args)
        forward.setdefault("interp", expected)
        forward.setdefault("llvm", got)
        if isinstance(expected, rlang.RlangError):
            assert_same_error(got, expected, context)
            continue
        assert not isinstance(got, rlang.RlangError), f"{context}\n{got}"
        assert_agree(got, expected, magnitude([*args, *expected]), context)
        assert got_out == expected_out, context
    if isinstance(forward["interp"], rlang.RlangError):
        return
    # ~f after f: as on the interpreter (floats are restored only up to rounding, or
    # not at all after an overflow), and integers, bools and fixed values exactly
    expected, _ = outcome(~interp[gp.top], list(forward["interp"]))
    back, _ = outcome(~llvm[gp.top], list(forward["llvm"]))
    if isinstance(expected, rlang.RlangError):
        assert_same_error(back, expected, context)
        return
    assert not isinstance(back, rlang.RlangError), f"{context}\n{back}"
    assert_agree(back, expected, magnitude([*args, *forward["interp"]]), context)
    exact = [k for k, a in enumerate(args) if not isinstance(a, (float, complex, ULog)) and
             not (isinstance(a, np.ndarray) and a.dtype.kind in "fc")]
    assert_agree([back[k] for k in exact], [args[k] for k in exact], 1.0, context)


def losses(gp) -> list:
    """The loss views of the top function: every float, fixed, ulog and complex
    parameter (complex: `.re` and `.im`) and the first element of such arrays."""
    views = []
    for p, kind, _ in gp.top_signature.params:
        if kind in (F64, FIXED, ULOG):
            views.append(p)
        elif kind == CPLX:
            views += [f"{p}.re", f"{p}.im"]
        elif kind in (F64S, FIXEDS, ULOGS):
            views.append(f"{p}[0]")
        elif kind == CPLXS:
            views.append(f"{p}[0].im")
    return views


def both_or_same_error(compute, context):
    """compute(backend) on the interpreter and on llvm: (llvm's, interpreter's) results,
    or None when the interpreter raised an error (then llvm raised the same)."""
    try:
        expected = compute("interp")
    except rlang.RlangError as error:
        try:
            got = compute("llvm")
        except rlang.RlangError as llvm_error:
            got = llvm_error
        assert_same_error(got, error, context)
        return None
    return compute("llvm"), expected


def compare_derivatives(derivative, assert_same, gp, args, loss) -> None:
    """`derivative` (rlang.gradient or rlang.hessian) of the top function on both
    backends: the same values (`assert_same`), or the same error."""
    def compute(backend):
        module = rlang.loads(gp.source, backend=backend)
        with redirect_stdout(io.StringIO()):
            return derivative(module[gp.top], _copy(args), loss=loss)

    context = f"{gp.source}\nargs {args}, loss {loss}"
    pair = both_or_same_error(compute, context)
    if pair is not None:
        assert_same(*pair, context)


@_settings(25)
@given(system_cases(), st.data())
def test_generated_system_gradients_agree(case, data):
    gp, args = case
    views = losses(gp)
    assume(views)
    loss = data.draw(st.sampled_from(views))

    compare_derivatives(rlang.gradient, assert_same_gradients, gp, args, loss)


@_settings(12)
@given(system_cases(systems=(F64,)), st.data())
def test_generated_float_hessians_agree(case, data):
    """Programs over i64, bool and f64 values."""
    gp, args = case
    assume(any(kind in (F64, F64S) for _, kind, _ in gp.top_signature.params))
    views = losses(gp)
    loss = data.draw(st.sampled_from(views))

    compare_derivatives(rlang.hessian, assert_same_matrix, gp, args, loss)


@_settings(12)
@given(system_cases(systems=(F64, ULOG)), st.data())
def test_generated_ulog_hessians_agree(case, data):
    """Programs over f64 and ulog values: tangents through ulog values (Note [Tangents
    of ulog values], rlang/numbers.py); ulog arguments are held constant.  The llvm
    backend refuses Hessians of programs that hold fixed or complex values
    (docs/backends.md)."""
    gp, args = case
    assume(any(kind in (F64, F64S) for _, kind, _ in gp.top_signature.params))
    views = losses(gp)
    assume(views)
    loss = data.draw(st.sampled_from(views))

    compare_derivatives(rlang.hessian, assert_same_matrix, gp, args, loss)
