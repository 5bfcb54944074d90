"""Checks on the GPU, refusals, examples and generated programs (issue #6).

- a check that fails inside a kernel (or a device function it calls) becomes the
  interpreter's error: class, message, span and call chain; the note says which
  iteration failed, and when several fail it is the first in the loop's order (the
  one the interpreter reports), whatever the threads' timing;
- constructs a kernel cannot hold are refused statically with BackendUnsupported;
- every example and Hypothesis-generated programs (with `@parallel for` loops over
  integer and bool arrays, and over f64, fixed, ulog and complex arrays) agree with
  the interpreter, forward and inverse.
"""
from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import rlang
from rlang.errors import CheckErrors
from rlang.types_rules import BackendUnsupported

from agreement import assert_same_error, copy, kernel_error, same

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
from array_extents import CASES as EXTENT_CASES, COMPILED_MESSAGES as EXTENT_MESSAGES, \
    PROGRAM as EXTENTS  # noqa: E402
from generators import cases  # noqa: E402
from number_systems import agree, magnitude  # noqa: E402
from systems import system_cases  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "examples").glob("*.rev"))

FAILING = '''
function bump(y, n)
    t ← n * 2.0
    y += t
    t → 3.0
end

function indexed(y: f64[:], x: f64[:], k)
    @parallel for i = 0:length(y) - 1
        y[i] += x[i + k]
    end
end

function deep(y: f64[:], n: f64[:])
    @parallel for i = 0:length(y) - 1
        bump(y[i], n[i])
    end
end

function divide(q: i64[:], d: i64[:])
    @parallel for i = 0:length(q) - 1
        q[i] += 100 // d[i]
    end
end
'''



@pytest.mark.parametrize("name,args,iteration", [
    ("indexed", (np.zeros(6), np.zeros(8), 3), "i = 5"),
    ("deep", (np.zeros(5), np.array([1.5, 1.5, 1.5, 2.0, 1.5])), "i = 3"),
    ("deep", (np.zeros(5), np.array([1.5, 1.0, 1.5, 1.5, 1.0])), "i = 1"),
    ("divide", (np.zeros(9, dtype=np.int64), np.array([1, 2, 3, 0, 5, 0, 7, 8, 9])), "i = 3"),
])
def test_kernel_checks_raise_the_interpreters_error(name, args, iteration):
    got, expected = kernel_error(FAILING, lambda m: m[name](*copy(args)))
    assert_same_error(got, expected)
    assert any(f"`{iteration}`" in note and "first, in the loop's order" in note
               for note in got.notes)
    assert "@parallel for" in got.render()


def test_the_lowest_failed_iteration_is_reported():
    """Iterations 3, 9, 17 … fail; whichever thread gets there first, the record kept
    is iteration 3's (its values are in the message)."""
    source = FAILING
    cuda = rlang.loads(source, backend="cuda")
    d = np.ones(40, dtype=np.int64)
    d[[3, 9, 17, 31, 39]] = 0
    with pytest.raises(rlang.RlangError) as got:
        cuda.divide(np.arange(40, dtype=np.int64), d)
    assert any("`i = 3`" in note for note in got.value.notes)


def test_a_backward_range_reports_its_first_failed_iteration():
    """Over `n - 1:-1:0` the first failure in the loop's order is the highest index:
    iteration 31 (of 5 failing), as the interpreter, running them in order, reports."""
    source = FAILING + """
function divide_down(q: i64[:], d: i64[:])
    @parallel for i = length(q) - 1:-1:0
        q[i] += 100 // d[i]
    end
end
"""
    d = np.ones(40, dtype=np.int64)
    d[[3, 9, 17, 31, 19]] = 0
    args = (np.arange(40, dtype=np.int64), d)
    got, expected = kernel_error(source, lambda m: m.divide_down(*copy(args)))
    assert_same_error(got, expected)
    assert any("`i = 31`" in note for note in got.notes), got.notes


def test_inverse_kernels_report_backward_frames():
    args = (np.zeros(4), np.array([1.5, 1.5, 2.5, 1.5]))
    assert_same_error(*kernel_error(FAILING, lambda m: (~m.deep)(*copy(args))))


@pytest.mark.parametrize("body,construct", [
    ("    a ← zeros(f64, 3)\n        y[i] += a[0]\n        a → zeros(f64, 3)\n",
     "array ancilla"),
    ('    @safe print(i)\n', "print"),
    ("    down(y[i], 3)\n", "recursive"),
])
def test_constructs_a_kernel_cannot_hold_are_refused(body, construct):
    source = f'''
function down(x, n)
    if n > 0
        x += 1.0
        m ← n - 1
        down(x, m)
        m → n - 1
    end
end

function f(y: f64[:])
    @parallel for i = 0:length(y) - 1
    {body}    end
end
'''
    m = rlang.loads(source, backend="cuda")
    with pytest.raises(BackendUnsupported, match=construct) as error:
        m.f(np.zeros(3))
    assert error.value.span is not None and error.value.span.line > 0


def test_shared_writes_named_by_the_program_are_refused():
    """An outer scalar written in a `@parallel for` (directly: the checker; through a
    call: the cuda backend)."""
    direct = "function f(y: f64[:], s)\n    @parallel for i = 0:length(y) - 1\n" \
             "        s += y[i]\n    end\nend\n"
    with pytest.raises(CheckErrors, match="every iteration"):
        rlang.loads(direct, backend="cuda")
    called = "function add(s, v)\n    s += v\nend\n" \
             "function f(y: f64[:], s)\n    @parallel for i = 0:length(y) - 1\n" \
             "        add(s, y[i])\n    end\nend\n"
    try:
        m = rlang.loads(called, backend="cuda")
    except CheckErrors as error:
        assert "every iteration" in str(error)
        return
    with pytest.raises(BackendUnsupported, match="written by every iteration"):
        m.f(np.ones(3), 0.0)


def test_stacks_are_refused():
    """Stacks are the one kind of value of §3 the cuda backend does not hold."""
    source = "function f(y: f64[:])\n    @parallel for i = 0:length(y) - 1\n" \
             "        s ← stack(f64)\n        PUSH(s, y[i])\n        POP(s, y[i])\n" \
             "        s → stack(f64)\n    end\nend\n"
    m = rlang.loads(source, backend="cuda")
    with pytest.raises(BackendUnsupported, match="PUSH|stack"):
        m.f(np.zeros(2))


def _store(module):
    out = io.StringIO()
    with redirect_stdout(out):
        store = module.run_main()
    return store, out.getvalue()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_agrees_with_interpreter(path):
    """Every example runs on the cuda backend (host code; none has a kernel) with the
    interpreter's store and output, or is refused naming a construct it lacks."""
    expected, expected_out = _store(rlang.load(path))
    try:
        got, got_out = _store(rlang.load(path, backend="cuda"))
    except BackendUnsupported as error:
        assert any(word in error.message for word in ("stack", "PUSH", "POP", "complex")), \
            error.message
        return
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (name, a), (_, b) in zip(got, expected):
        assert same(a, b), f"{name}: cuda {a!r}, interpreter {b!r}"
    assert got_out == expected_out


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(stacks=False))
def test_generated_programs_agree(case):
    _assert_generated_case_agrees(*case, lambda a, b, scale: same(a, b))


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(system_cases(parallel=6))
def test_generated_system_programs_agree(case):
    """Programs over f64, fixed, ulog and complex values too (tests/property/systems.py),
    their `@parallel for` loops over arrays of each: fixed bit for bit, the others
    within 1e-12 of the magnitudes involved."""
    _assert_generated_case_agrees(*case, agree)


def _assert_generated_case_agrees(gp, args, equal):
    """The top function of `gp` on `args`, forward and inverse, gives the interpreter's
    results (`equal(cuda's, interpreter's, magnitude)`), output and errors, or the
    cuda backend refuses it (e.g. a kernel calling a recursive function)."""
    interp = rlang.loads(gp.source)
    try:
        cuda = rlang.loads(gp.source, backend="cuda")
        with redirect_stdout(io.StringIO()):
            cuda[gp.top](*copy(args))
    except BackendUnsupported:
        return
    except rlang.RlangError:
        pass
    for direction in (lambda m: m[gp.top], lambda m: ~m[gp.top]):
        out_i, out_c = io.StringIO(), io.StringIO()
        with redirect_stdout(out_i):
            try:
                expected = direction(interp)(*copy(args))
            except rlang.RlangError as error:
                expected = error
        with redirect_stdout(out_c):
            try:
                got = direction(cuda)(*copy(args))
            except rlang.RlangError as error:
                got = error
        if isinstance(expected, rlang.RlangError):
            assert isinstance(got, rlang.RlangError), gp.source
            assert type(got) is type(expected) and got.message == expected.message, gp.source
            continue
        assert not isinstance(got, rlang.RlangError), f"{gp.source}\n{got}"
        scale = magnitude([*args, *expected])
        for a, b in zip(got, expected):
            assert equal(a, b, scale), f"{gp.source}\nargs {args}: cuda {a!r}, interpreter {b!r}"
        assert out_c.getvalue() == out_i.getvalue(), gp.source


def test_host_code_prints_arrays_as_the_interpreter_does():
    """`@safe print/show` outside kernels: an array a kernel just wrote is shown with
    its new elements, in every run (forward, inverse)."""
    source = '''
function scale!(y!: f64[:], z: complex[:], m: i64[:,:])
    @safe show(y!, z, m)
    @parallel for i = 0:length(y!) - 1
        y![i] += 2.0 * f64(i)
    end
    @safe print("after", y!)
end
'''
    args = (np.array([0.5, -1.0, 3.0]), np.array([1 + 2j, -1j]),
            np.arange(6, dtype=np.int64).reshape(2, 3))
    lines = []
    for backend in ("interp", "cuda"):
        m = rlang.loads(source, backend=backend)
        out = io.StringIO()
        with redirect_stdout(out):
            new = m.scale_(*copy(args))
            (~m.scale_)(*new)
        lines.append(out.getvalue())
    assert lines[0] == lines[1]
    assert "after [0.5, 1.0, 7.0]" in lines[1] and "m = [[0, 1, 2], [3, 4, 5]]" in lines[1]


COPIES = '''
function f(y!: f64[:], x: f64[:])
    t ← x
    @parallel for i = 0:length(y!) - 1
        y![i] += t[i] * t[i]
    end
    t → x
end

function g(y!: f64, x: f64[:,:], n: i64)
    t ← x
    t[0, 1] += 1.0
    y! += t[0, 1]
    t → x
end

function h(y!: f64, n: i64)
    t ← zeros(f64, n, 3)
    t[n - 1, 2] += y!
    t → zeros(f64, n, 3)
end
'''


def test_array_ancillas_copied_from_arrays_hold_the_copy():
    """`t ← x` in host code (it was allocated as zeros)."""
    args = (np.zeros(3), np.array([0.5, -1.5, 2.0]))
    m, ref = rlang.loads(COPIES, backend="cuda"), rlang.loads(COPIES, backend="interp")
    got, expected = m.f(*copy(args)), ref.f(*copy(args))
    assert all(map(same, got, expected)) and np.array_equal(got[0], [0.25, 2.25, 4.0])
    assert all(map(same, (~m.f)(*copy(got)), (~ref.f)(*copy(expected))))
    assert all(map(same, rlang.gradient(m.f, copy(args), ("y!", 1)),
                   rlang.gradient(ref.f, copy(args), ("y!", 1))))


@pytest.mark.parametrize("name,args", [
    ("g", (0.0, np.arange(6.0).reshape(2, 3), 0)),
    ("h", (1.0, 4)),
])
def test_failed_array_deallocations_show_the_arrays(name, args):
    got, expected = kernel_error(COPIES, lambda m: m[name](*copy(args)))
    assert_same_error(got, expected)
    assert "expected [[" in str(got) or "shape (4, 3))" in str(got)


@pytest.mark.parametrize("name, args, message", EXTENT_CASES, ids=[
    f"{c[0]}-{'-'.join(map(str, c[1]))}" for c in EXTENT_CASES])
def test_array_extents_end_as_on_the_interpreter(name, args, message):
    """tests/array_extents.py on the cuda backend's host code: deallocation checks
    compare shapes; a failed or impossible allocation is the interpreter's error."""
    outcomes = []
    for backend in ("interp", "cuda"):
        try:
            outcomes.append(rlang.loads(EXTENTS, backend=backend)[name](*args))
        except rlang.RlangError as error:
            outcomes.append(error)
    expected, got = outcomes
    if message is None:
        assert got == expected
    elif name in EXTENT_MESSAGES:
        assert (type(got), got.message, got.span) == (
            type(expected), EXTENT_MESSAGES[name], expected.span)
    else:
        assert expected.message.startswith(message)
        assert_same_error(got, expected)


def test_an_expression_deeper_than_generated_python_allows_is_refused():
    # 101 terms made generated code Python could not parse: an internal SyntaxError
    deep = "function f(x)\n    x += " + " + ".join(["1"] * 101) + "\nend\n"
    assert rlang.loads(deep, backend="interp").f(0) == (101,)
    with pytest.raises(BackendUnsupported, match="nested at most 60 deep") as info:
        rlang.loads(deep, backend="cuda").f(0)
    assert info.value.span is not None
    shallow = "function f(x)\n    x += " + " + ".join(["1"] * 50) + "\nend\n"
    assert rlang.loads(shallow, backend="cuda").f(0) == (50,)
