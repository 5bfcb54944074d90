"""Calls of functions as builtins (Note [Calls without ctypes],
rlang/backends/llvm/call_builtins.py): from a function's second call, its calls on
Python floats, ints and NumPy arrays go through a builtin function generated over
CPython's C API.  They give the interpreter's values and the general call's errors,
every argument the general call converts or refuses still goes there, code that
prints or recurses gets no builtin, and code with loops on threads uses its builtin
only with one thread."""
from __future__ import annotations

import math
import sys
import threading

import numpy as np
import pytest

import rlang

from gradient_agreement import assert_same_error, llvm_and_interpreter

SOURCE = """
function mix!(y!: f64, n!: i64, x: f64, k: i64)
    y! += x * x - f64(k)
    n! += k * 3 - 1
end

function divide!(q!: i64, a: i64, b: i64)
    q! += a // b
end

function called!(y!: f64, x: f64)
    divide_twice!(y!, x)
end

function divide_twice!(y!: f64, x: f64)
    q ← 0
    divide!(q, 7, i64(x))
    y! += f64(q) * 2.0
    q -= 7 // i64(x)
    q → 0
end

function shout!(y!: f64, x: f64)
    y! += x
    @safe print(y!)
end

function down!(s!: f64, k: i64)
    if (k > 0, ~)
        s! += f64(k)
        down!(s!, k - 1)
    end
end

function spread!(s!: f64, c: f64)
    y ← zeros(f64, 64)
    @parallel for i = 0:63
        y[i] += c * f64(i)
    end
    for i = 0:63
        s! += y[i]
    end
    for i = 0:63
        y[i] -= c * f64(i)
    end
    y → zeros(f64, 64)
end
"""

VALUES = [(0.0, 0, 1.5, 2), (-0.0, -5, -0.0, 0), (math.inf, 2**62, 3.0, -2**40),
          (math.nan, -(2**63), 1e300, 7), (2.5, 2**63 - 10, -1e-320, 3)]


@pytest.fixture
def modules(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "scalars.rev"
    path.write_text(SOURCE)
    return (rlang.load(str(path), backend="llvm"), rlang.load(str(path), backend="interp"))


def _warm(module, name: str, args: tuple, inverse: bool = False):
    """Two calls with these kinds of arguments: the second makes the builtin."""
    f = module[name]
    f = ~f if inverse else f
    f(*args)
    f(*args)
    return module.compiled.call_builtins.get((name, inverse))


def _same(got: tuple, expected: tuple) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert type(a) is type(b)
        assert (a == b and math.copysign(1, a) == math.copysign(1, b)) if \
            isinstance(a, float) and not math.isnan(a) else (a == b or math.isnan(b))


def test_the_second_call_makes_a_builtin_that_gives_the_interpreters_values(modules):
    llvm, interp = modules
    assert llvm.compiled.call_builtins == {}
    assert _warm(llvm, "mix!", VALUES[0]) is not None
    for args in VALUES:
        _same(llvm["mix!"](*args), interp["mix!"](*args))
        _same(llvm.mix_(*args), interp["mix!"](*args))     # (the same Function kind)
    assert _warm(llvm, "mix!", VALUES[0], inverse=True) is not None
    for args in VALUES:
        _same((~llvm["mix!"])(*args), (~interp["mix!"])(*args))


def test_arguments_the_general_call_converts_or_refuses_go_there(modules):
    llvm, interp = modules
    builtin, _ = _warm(llvm, "mix!", VALUES[0])
    _same(builtin(0.0, 0, 1.5, 2**63 - 1), interp["mix!"](0.0, 0, 1.5, 2**63 - 1))
    converted = [(1, 0, 2, 3), (np.float64(1.5), np.int64(2), 0.5, np.int64(4))]
    for args in converted:
        assert builtin(*args) == ()
        _same(llvm["mix!"](*args), interp["mix!"](*args))
    for args in [(0.0, 0, 1.5, 2**63), (0.0, 0, 1.5, True), (0.0, 0, "x", 1),
                 (0.0, 0, 1.5), (0.0, 0, 1.5, 2, 3)]:
        assert builtin(*args) == ()
        with pytest.raises(rlang.RlangError) as got:
            llvm["mix!"](*args)
        with pytest.raises(rlang.RlangError) as expected:
            interp["mix!"](*args)
        assert got.value.message == expected.value.message
    _same(llvm["mix!"](0.0, 0, x=1.5, k=2), interp["mix!"](0.0, 0, 1.5, 2))


def test_a_failed_check_raises_the_general_calls_error(modules):
    llvm, interp = modules
    assert _warm(llvm, "divide!", (0, 7, 2)) is not None
    assert _warm(llvm, "called!", (0.0, 2.0)) is not None
    for name, bad, good in [("divide!", (0, 7, 0), (0, 7, 2)),
                            ("called!", (0.0, 0.0), (0.0, 2.0))]:
        with pytest.raises(rlang.RlangError) as got:
            llvm[name](*bad)
        with pytest.raises(rlang.RlangError) as expected:
            interp[name](*bad)
        assert_same_error(got.value, expected.value)
        _same(llvm[name](*good), interp[name](*good))    # (the builtin again)


def test_an_error_shows_the_frame_variables_of_one_run(modules, capsys):
    llvm, _ = modules
    _warm(llvm, "called!", (0.0, 2.0))
    with pytest.raises(rlang.RlangError) as first:
        llvm["called!"](0.0, 0.0)
    general = rlang.load(llvm.unit.file, backend="llvm")      # no builtin made
    with pytest.raises(rlang.RlangError) as expected:
        general["called!"](0.0, 0.0)
    assert general.compiled.call_builtins == {}
    assert first.value.render() == expected.value.render()


def test_code_that_prints_gets_no_builtin(modules, capsys):
    llvm, _ = modules
    assert _warm(llvm, "shout!", (1.0, 2.0)) is None
    assert llvm["shout!"](1.0, 2.0) == (3.0, 2.0)


def test_recursive_code_gets_no_builtin(modules):
    llvm, interp = modules
    assert _warm(llvm, "down!", (0.0, 50)) is None
    assert llvm["down!"](0.0, 50) == interp["down!"](0.0, 50)


def test_code_with_parallel_loops_takes_its_builtin_on_one_thread_only(modules,
                                                                      monkeypatch):
    """The builtin's context says one thread: with more, the general call runs the
    loop's blocks on the pool."""
    from rlang.backends.llvm import backend

    llvm, interp = modules
    general = []
    original = backend.LlvmFunctions.call
    monkeypatch.setattr(backend.LlvmFunctions, "call",
                        lambda self, *a, **k: general.append(a[0]) or original(self, *a, **k))
    before = rlang.get_num_threads()
    try:
        rlang.set_num_threads(1)
        builtin, native = _warm(llvm, "spread!", (0.0, 0.5))
        assert native.threaded_loops
        general.clear()
        assert llvm["spread!"](0.0, 0.5) == interp["spread!"](0.0, 0.5)
        assert builtin(0.0, 0.5) == interp["spread!"](0.0, 0.5) and general == []
        rlang.set_num_threads(3)
        assert llvm["spread!"](0.0, 0.5) == interp["spread!"](0.0, 0.5)
        assert general == ["spread!"]
    finally:
        rlang.set_num_threads(before)


def test_calls_from_threads_run_at_once_and_agree(modules):
    llvm, interp = modules
    _warm(llvm, "mix!", VALUES[0])
    expected = [interp["mix!"](float(i), i, 0.5 * i, i % 7) for i in range(200)]
    results, errors = {}, []

    def work(t):
        try:
            for i in range(200):
                got = llvm["mix!"](float(i), i, 0.5 * i, i % 7)
                if got != expected[i]:
                    errors.append((t, i, got))
        except Exception as error:      # noqa: BLE001 - reported below
            errors.append(error)
        results[t] = True

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(results) == 4


def test_the_builtin_keeps_no_reference_it_does_not_own(modules):
    llvm, _ = modules
    _warm(llvm, "mix!", VALUES[0])
    x, k = 1.25, 10**12
    before = sys.getrefcount(x), sys.getrefcount(k)
    for _ in range(1000):
        llvm["mix!"](0.0, 0, x, k)
    assert (sys.getrefcount(x), sys.getrefcount(k)) == before


def test_the_builtin_keeps_its_code_alive(tmp_path, monkeypatch):
    import gc

    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "alone.rev"
    path.write_text(SOURCE)
    module = rlang.load(str(path), backend="llvm")
    builtin, _ = _warm(module, "mix!", VALUES[0])
    expected = module["mix!"](2.0, 3, 0.5, 4)
    del module
    gc.collect()
    assert builtin(2.0, 3, 0.5, 4) == expected


def test_janus_procedures_get_one_and_keep_their_overflow_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "add.ja"
    path.write_text("procedure add(int a, int b)\n    a += b * 3\n\nprocedure main()\n"
                    "    int a\n    int b\n    b += 2\n    call add(a, b)\n")
    llvm, interp = rlang.load(str(path), backend="llvm"), rlang.load(str(path))
    assert _warm(llvm, "add", (1, 2)) is not None
    assert llvm["add"](5, -7) == interp["add"](5, -7) == (-16, -7)
    with pytest.raises(rlang.RlangError) as got:        # jana's ints are unbounded;
        llvm["add"](0, 2**62)                           # compiled code says so
    with pytest.raises(rlang.RlangError) as expected:
        rlang.load(str(path), backend="llvm")["add"](0, 2**62)
    assert got.value.render() == expected.value.render()
    assert "integer overflow" in got.value.message


ARRAYS = """
function scale!(s!: f64, a!: f64[:], b: f64[:, :], k: i64)
    for i = 0:length(a!)-1
        a![i] += b[i, 0] * f64(k)
        s! += a![i]
    end
end
"""


@pytest.fixture(params=[True, False], ids=["invcheck", "invcheck-off"])
def arrays(request, tmp_path, monkeypatch):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    return llvm_and_interpreter(ARRAYS, tmp_path / "arrays.rev", request.param)


def _array_args(rng, n=4):
    return [float(rng.normal()), rng.normal(size=n), rng.normal(size=(n, 3)), 3]


def test_calls_with_arrays_update_them_in_place_as_the_interpreter(arrays):
    llvm, interp = arrays
    rng = np.random.default_rng(1)
    builtin, _ = _warm(llvm, "scale!", _array_args(rng))
    for n in (1, 4, 9):
        args = _array_args(rng, n)
        theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        a = args[1]
        got = builtin(*args)
        expected = interp["scale!"](*theirs)
        assert got[1] is a and got[2] is args[2]
        assert got[0] == pytest.approx(expected[0], rel=1e-14) and got[3] == 3
        np.testing.assert_allclose(a, expected[1], rtol=1e-15)


def test_arrays_of_other_kinds_go_to_the_general_call(arrays):
    llvm, interp = arrays
    rng = np.random.default_rng(2)
    builtin, _ = _warm(llvm, "scale!", _array_args(rng))
    s, a, b, k = _array_args(rng)
    wide = np.zeros((4, 6))
    read_only = a.copy()
    read_only.flags.writeable = False
    for case in ([s, a.astype(np.float32), b, k], [s, a, np.asfortranarray(b), k],
                 [s, a, wide[:, ::2], k], [s, a[::2], b[:2], k], [s, read_only, b, k],
                 [s, a, b, np.int64(k)], [s, list(a), b, k]):
        assert builtin(*case) == ()
        theirs = [_like(x) for x in case]
        try:
            expected = interp["scale!"](*theirs)
        except rlang.RlangError as error:
            with pytest.raises(rlang.RlangError) as got:
                llvm["scale!"](*case)
            assert got.value.message == error.message
        else:
            got = llvm["scale!"](*case)
            assert got[0] == pytest.approx(expected[0], rel=1e-14)


def _like(value):
    """A copy of an array, read-only where it is; other values as they are."""
    if not isinstance(value, np.ndarray):
        return value
    copy = value.copy()
    copy.flags.writeable = value.flags.writeable
    return copy


def test_a_read_only_array_only_read_is_taken(arrays):
    llvm, interp = arrays
    rng = np.random.default_rng(3)
    builtin, _ = _warm(llvm, "scale!", _array_args(rng))
    s, a, b, k = _array_args(rng)
    b.flags.writeable = False
    expected = interp["scale!"](s, a.copy(), b, k)
    got = builtin(s, a, b, k)
    assert got[0] == pytest.approx(expected[0], rel=1e-14)


def test_overlapping_arrays_follow_the_general_rule(arrays):
    llvm, interp = arrays
    builtin, _ = _warm(llvm, "scale!", _array_args(np.random.default_rng(4)))
    memory = np.arange(12.0)
    a, b = memory[:4], memory.reshape(4, 3)     # a is b's first row and more
    if llvm.compiled.invcheck:
        assert builtin(0.0, a, b, 2) == ()
        with pytest.raises(rlang.RlangError) as got:
            llvm["scale!"](0.0, a, b, 2)
        with pytest.raises(rlang.RlangError) as expected:
            interp["scale!"](0.0, a, b, 2)
        assert got.value.message == expected.value.message
    apart = np.arange(4.0), np.arange(12.0).reshape(4, 3)
    assert builtin(0.0, *apart, 2)


def test_array_calls_keep_no_reference_they_do_not_own(arrays):
    llvm, _ = arrays
    args = _array_args(np.random.default_rng(5))
    args[3] = int("100003")             # (not one of CPython's shared small ints)
    _warm(llvm, "scale!", args)
    before = [sys.getrefcount(a) for a in args]
    for _ in range(500):
        result = llvm["scale!"](*args)
    del result
    assert [sys.getrefcount(a) for a in args] == before
