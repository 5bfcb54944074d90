"""Gradient calls as builtins (Note [Gradient calls without Python],
rlang/backends/llvm/call_builtins.py): once a gradient's short route has made a
call on final code, its later calls with arguments of the same kinds go through a
builtin generated over CPython's and NumPy's C APIs.  Its gradients are the route's
to the last bit and the interpreter's within the usual tolerance; the caller's
arrays come back bit for bit; every argument it does not take, and every failed
check, goes to the general route with its errors; it leaks nothing."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.ad.gradient_route import route_of

from gradient_agreement import (agree_or_ill_conditioned, assert_same_error,
                                assert_same_gradients, llvm_and_interpreter)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_llvm_gradients import float_programs  # noqa: E402

SOURCE = """
function spring!(e!: f64, x: f64[:, :], w: f64[:], k: i64, c: f64)
    for i = 0:k-1
        for j = 0:length(w)-1
            e! += w[j] * x[i, j] * x[i, j] * c
        end
    end
end

function moved!(e!: f64, x!: f64[:], c: f64)
    for i = 0:length(x!)-1
        x![i] += c * c
        e! += x![i] * x![i]
    end
end

function guarded!(y!, x)
    t ← x
    y! += t * x
    @invcheckoff t → 5.0
end

function pair!(s!: f64, a!: f64[:], b: f64[:])
    for i = 0:length(b)-1
        a![i] += b[i] * s!
    end
end

function shout!(e!: f64, x: f64)
    e! += x * x
    @safe print(e!)
end
"""


@pytest.fixture(params=[True, False], ids=["invcheck", "invcheck-off"])
def modules(request, tmp_path, monkeypatch):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    return llvm_and_interpreter(SOURCE, tmp_path / "gradients.rev", request.param)


def _copied(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _warm(gradient, args, function, loss):
    """Three calls: the second settles the code, after it the route has a builtin."""
    for _ in range(3):
        gradient(*_copied(args))
    route = route_of(function, args, loss)
    return route.call if route else None


def _args(rng, n=5, m=3):
    return [0.0, rng.normal(size=(n, m)), rng.normal(size=m), n, float(rng.normal())]


def _identical(got, expected) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert type(g) is type(e)
        if isinstance(e, np.ndarray):
            assert g.dtype == e.dtype and g.shape == e.shape and g.tobytes() == e.tobytes()
        else:
            assert g == e or (g != g and e != e)


def test_the_builtin_gives_the_routes_gradients_to_the_last_bit(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["spring!"], "e!")
    rng = np.random.default_rng(1)
    builtin = _warm(gradient, _args(rng), llvm["spring!"], "e!")
    assert builtin
    for _ in range(5):
        args = _args(rng, n=int(rng.integers(1, 6)))
        got = builtin(*_copied(args))
        # the route's Python, on a transform made after the builtin is set aside
        route = route_of(llvm["spring!"], args, "e!")
        route.call = False
        expected = rlang.grad(llvm["spring!"], "e!")(*_copied(args))
        route.call = builtin
        _identical(got, expected)
        _identical(gradient(*_copied(args)), expected)
        assert_same_gradients(got, rlang.gradient(interp["spring!"], _copied(args), "e!"))


def test_the_arrays_come_back_bit_for_bit_and_the_gradients_are_new(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["moved!"], "e!")
    rng = np.random.default_rng(2)
    x = rng.normal(size=7)
    assert _warm(gradient, [0.0, x, 0.3], llvm["moved!"], "e!")
    kept = x.copy()
    first = gradient(0.0, x, 0.3)
    second = gradient(0.0, x, 0.3)
    assert x.tobytes() == kept.tobytes()
    assert first[1] is not second[1] and first[1] is not x
    assert_same_gradients(second, rlang.gradient(interp["moved!"], [0.0, x.copy(), 0.3], "e!"))


def test_the_loss_element_and_argnums(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["moved!"], ("x!", 2), argnums=(1, 2))
    x = np.linspace(-1.0, 1.0, 5)
    assert _warm(gradient, [0.0, x, 0.5], llvm["moved!"], ("x!", 2))
    got = gradient(0.0, x, 0.5)
    expected = rlang.gradient(interp["moved!"], [0.0, x.copy(), 0.5], ("x!", 2))
    assert_same_gradients(got, expected[1:])
    with pytest.raises(rlang.RlangError) as outside:       # the element is not there
        gradient(0.0, x[:2].copy(), 0.5)
    with pytest.raises(rlang.RlangError) as general:
        rlang.gradient(interp["moved!"], [0.0, x[:2].copy(), 0.5], ("x!", 2))
    assert outside.value.message == general.value.message


def test_arguments_of_other_kinds_go_to_the_general_route(modules):
    llvm, interp = modules
    function = llvm["spring!"]
    gradient = rlang.grad(function, "e!")
    rng = np.random.default_rng(3)
    args = _args(rng)
    builtin = _warm(gradient, args, function, "e!")
    e, x, w, k, c = args
    wide = np.zeros((5, 6))
    wide[:, ::2] = x
    others = [
        [e, x.astype(np.float32), w, k, c],         # another dtype
        [e, np.asfortranarray(x), w, k, c],         # another last stride
        [e, wide[:, ::2], w, k, c],                 # the same, strided
        [e, x, w, np.int64(k), c],                  # a NumPy scalar
        [e, x, w, k, 1],                            # an int for a float
        [e, x, w, k, True],
        [e, x, w.reshape(1, 3), k, c],              # another rank
        [e, x, w, k],                               # a missing argument
        [e, x, w, k, c, c],                         # one too many
        [e, x.astype(x.dtype.newbyteorder()), w, k, c],
    ]
    for case in others:                 # (as they are: a copy would be C-ordered)
        assert builtin(*case) == ()
        try:
            expected = rlang.gradient(interp["spring!"], case, "e!")
        except rlang.RlangError as error:
            with pytest.raises(rlang.RlangError) as got:
                gradient(*case)
            assert got.value.message == error.message
        else:
            assert_same_gradients(gradient(*case), expected)
    assert_same_gradients(gradient(e, x, w, k=k, c=c),
                          rlang.gradient(interp["spring!"], _copied(args), "e!"))


def test_a_read_only_array_that_is_written_goes_to_the_general_route(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["moved!"], "e!")
    x = np.ones(4)
    builtin = _warm(gradient, [0.0, x, 0.5], llvm["moved!"], "e!")
    x.flags.writeable = False
    assert builtin(0.0, x, 0.5) == ()
    with pytest.raises(rlang.RlangError) as got:
        gradient(0.0, x, 0.5)
    with pytest.raises(rlang.RlangError) as expected:
        rlang.gradient(interp["moved!"], [0.0, x, 0.5], "e!")
    assert got.value.message == expected.value.message


def test_aliased_arrays_follow_the_general_rule(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["pair!"], "s!")
    a, b = np.ones(6), np.arange(6.0)
    builtin = _warm(gradient, [0.5, a, b], llvm["pair!"], "s!")
    assert builtin
    apart = np.arange(12.0)
    assert_same_gradients(gradient(0.5, apart[:6], apart[6:]),
                          rlang.gradient(interp["pair!"], [0.5, apart[:6].copy(),
                                                           apart[6:].copy()], "s!"))
    shared = np.arange(6.0)
    if llvm.compiled.invcheck:
        assert builtin(0.5, shared, shared) == ()
        with pytest.raises(rlang.RlangError) as got:
            gradient(0.5, shared, shared)
        with pytest.raises(rlang.RlangError) as expected:
            rlang.gradient(interp["pair!"], [0.5, shared, shared], "s!")
        assert got.value.message == expected.value.message
    kept = shared.copy()
    try:
        gradient(0.5, shared, shared)
    except rlang.RlangError:
        pass
    assert shared.tobytes() == kept.tobytes()


def test_a_failed_check_raises_the_general_routes_error(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["guarded!"], "y!")
    assert _warm(gradient, [0.0, 5.0], llvm["guarded!"], "y!")
    if not llvm.compiled.invcheck:      # (no check left to fail: the interpreter's values)
        assert_same_gradients(gradient(0.0, 2.0),
                              rlang.gradient(interp["guarded!"], [0.0, 2.0], "y!"))
        return
    with pytest.raises(rlang.RlangError) as got:
        gradient(0.0, 2.0)
    fresh = rlang.load(llvm.unit.file, backend="llvm")
    with pytest.raises(rlang.RlangError) as expected:
        rlang.grad(fresh["guarded!"], "y!")(0.0, 2.0)
    assert_same_error(got.value, expected.value)
    assert got.value.render() == expected.value.render()
    assert gradient(0.0, 5.0) == rlang.gradient(interp["guarded!"], [0.0, 5.0], "y!")


def test_code_that_prints_gets_no_builtin(modules, capsys):
    llvm, _ = modules
    gradient = rlang.grad(llvm["shout!"], "e!")
    assert _warm(gradient, [0.0, 3.0], llvm["shout!"], "e!") is False
    assert gradient(0.0, 3.0) == (1.0, 6.0)


def test_the_driver_takes_the_builtin_too(modules):
    llvm, interp = modules
    rng = np.random.default_rng(4)
    args = _args(rng)
    for _ in range(3):
        rlang.gradient(llvm["spring!"], _copied(args), "e!")
    assert route_of(llvm["spring!"], args, "e!").call
    assert_same_gradients(rlang.gradient(llvm["spring!"], _copied(args), "e!"),
                          rlang.gradient(interp["spring!"], _copied(args), "e!"))


def test_the_builtin_keeps_no_reference_it_does_not_own(modules):
    llvm, _ = modules
    gradient = rlang.grad(llvm["spring!"], "e!")
    args = _args(np.random.default_rng(5))
    assert _warm(gradient, args, llvm["spring!"], "e!")
    before = [sys.getrefcount(a) for a in args]
    for _ in range(500):
        result = gradient(*args)
    assert [sys.getrefcount(a) for a in args] == before
    array = result[1]
    del result
    assert sys.getrefcount(array) == 2          # (the name and getrefcount's argument)


def test_calls_from_threads_agree(modules):
    llvm, interp = modules
    gradient = rlang.grad(llvm["spring!"], "e!")
    rng = np.random.default_rng(6)
    cases = [_args(rng) for _ in range(20)]
    assert _warm(gradient, cases[0], llvm["spring!"], "e!")
    expected = [gradient(*_copied(case)) for case in cases]

    def work(_):
        for _ in range(20):
            for case, want in zip(cases, expected):
                _identical(gradient(*_copied(case)), want)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))          # (raises what a thread raised)


@float_programs(max_examples=25)
def test_generated_float_programs(source, args, loss):
    llvm = rlang.loads(source, backend="llvm")
    interp = rlang.loads(source)
    gradient = rlang.grad(llvm.f, loss)
    for _ in range(3):
        first = gradient(*_copied(args))
    route = route_of(llvm.f, args, loss)
    got = gradient(*_copied(args))
    if route is not None and route.call:
        _identical(got, first)
    agree_or_ill_conditioned(got, rlang.gradient(interp.f, _copied(args), loss),
                             lambda a: rlang.gradient(interp.f, _copied(a), loss), args, source)
    vector = [0.5, None, -1.0, 0.25, np.linspace(-1.0, 1.0, len(args[4])), None]
    for _ in range(3):
        first = rlang.hvp(llvm.f, _copied(args), vector, loss)
    got = rlang.hvp(llvm.f, _copied(args), vector, loss)
    _identical(got, first)
    agree_or_ill_conditioned(got, rlang.hvp(interp.f, _copied(args), vector, loss),
                             lambda a: rlang.hvp(interp.f, _copied(a), vector, loss), args,
                             source, rtol=1e-10)
    # the pullback (rlang/ad/vjp_call.py): its builtin's bits, the interpreter's values
    pull = rlang.vjp(llvm.f, *_copied(args))[1]
    for _ in range(3):
        first = pull(vector)
    got = pull(vector)
    _identical(got, first)
    agree_or_ill_conditioned(got, rlang.vjp(interp.f, *_copied(args))[1](vector),
                             lambda a: rlang.vjp(interp.f, *_copied(a))[1](vector), args,
                             source)


# ---- rlang.hvp (rlang/ad/hvp_call.py)

def _hvp_call(llvm, name: str, args, loss):
    from rlang.ad.hvp_call import _key

    made = llvm.compiled.plans.get(_key(name, False, args, loss))
    return made[0] if made else made


def test_hvp_takes_a_builtin_that_gives_the_general_ways_bits(modules):
    llvm, interp = modules
    rng = np.random.default_rng(7)
    args = _args(rng)
    vector = [0.5, rng.normal(size=args[1].shape), None, None, -1.5]
    for _ in range(3):
        rlang.hvp(llvm["spring!"], _copied(args), vector, "e!")
    builtin = _hvp_call(llvm, "spring!", args, "e!")
    assert builtin
    for _ in range(4):
        args = _args(rng, n=int(rng.integers(1, 6)))
        vector = [float(rng.normal()), rng.normal(size=args[1].shape),
                  rng.normal(size=3), 7, None]
        kept = _copied(args)
        got = rlang.hvp(llvm["spring!"], args, vector, "e!")
        assert all(a.tobytes() == b.tobytes() for a, b in zip(args, kept)
                   if isinstance(a, np.ndarray))
        general = rlang.load(llvm.unit.file, backend="llvm", invcheck=llvm.compiled.invcheck)
        _identical(got, rlang.hvp(general["spring!"], _copied(args), vector, "e!"))
        assert_same_gradients(got, rlang.hvp(interp["spring!"], _copied(args), vector, "e!"))
        _identical(rlang.gradient(llvm["spring!"], _copied(args), "e!"),
                   builtin(*_copied(args), *vector)[0])


def test_hvp_builtin_passes_arrays_f_does_not_write_as_they_are(modules):
    """spring! reads x and w only: the builtin runs on them, not on copies, so a call
    allocates x's tangent (zeros), its gradient and the gradient's tangent (3 × x) but
    no copy of x, and read-only arrays go through it."""
    import tracemalloc

    llvm, interp = modules
    rng = np.random.default_rng(9)
    args = _args(rng, n=400, m=250)
    vector = [None, None, rng.normal(size=250), None, 1.0]
    for _ in range(3):
        rlang.hvp(llvm["spring!"], _copied(args), vector, "e!")
    builtin = _hvp_call(llvm, "spring!", args, "e!")
    assert builtin
    for a in args:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    tracemalloc.start()
    try:
        got = builtin(*args, *vector)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got and peak < 3.5 * args[1].nbytes
    assert_same_gradients(got[1], rlang.hvp(interp["spring!"], _copied(args), vector, "e!"))
    assert_same_gradients(got[0], rlang.gradient(interp["spring!"], _copied(args), "e!"))


# ---- rlang.jvp (rlang/ad/jvp_call.py)

def _jvp_call(llvm, name: str, args):
    from rlang.ad.jvp_call import _key

    made = llvm.compiled.plans.get(_key(name, False, args))
    return made[0] if made else made


def _general_jvp(llvm, name: str, args, tangents):
    """The general way's jvp, on a module loaded again (no builtin made yet)."""
    general = rlang.load(llvm.unit.file, backend="llvm", invcheck=llvm.compiled.invcheck)
    return rlang.jvp(general[name], _copied(args), tangents)


def test_jvp_takes_a_builtin_that_gives_the_general_ways_bits(modules):
    llvm, interp = modules
    rng = np.random.default_rng(11)
    args = _args(rng)
    for _ in range(3):
        rlang.jvp(llvm["spring!"], _copied(args), [0.5, np.ones(args[1].shape), None, None, 1.0])
    assert _jvp_call(llvm, "spring!", args)
    for _ in range(4):
        args = _args(rng, n=int(rng.integers(1, 6)))
        tangents = [float(rng.normal()), rng.normal(size=args[1].shape), rng.normal(size=3),
                    7, None]
        kept = _copied(args)
        got = rlang.jvp(llvm["spring!"], args, tangents)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(args, kept)
                   if isinstance(a, np.ndarray))
        assert all(g is not a for g, a in zip(got[0], args) if isinstance(a, np.ndarray))
        expected = _general_jvp(llvm, "spring!", args, tangents)
        _identical(got[0], expected[0])
        _identical(got[1], expected[1])
        want = rlang.jvp(interp["spring!"], _copied(args), tangents)
        assert_same_gradients(got[1], want[1])
        assert got[0][3] == want[0][3] and np.allclose(got[0][0], want[0][0], rtol=1e-12)


def test_jvp_builtin_gives_new_outputs_of_written_arrays(modules):
    llvm, interp = modules
    x = np.linspace(-1.0, 1.0, 6)
    tangents = [1.0, np.arange(6.0), 0.5]
    for _ in range(3):
        rlang.jvp(llvm["moved!"], [0.0, x.copy(), 0.3], tangents)
    builtin = _jvp_call(llvm, "moved!", [0.0, x, 0.3])
    assert builtin
    kept = x.copy()
    first, second = (builtin(0.0, x, 0.3, *tangents) for _ in range(2))
    assert x.tobytes() == kept.tobytes()
    assert first[0][1] is not second[0][1] and first[0][1] is not x
    _identical(first[1], second[1])
    want = rlang.jvp(interp["moved!"], [0.0, x.copy(), 0.3], tangents)
    assert_same_gradients(first[1], want[1])
    assert np.allclose(first[0][1], want[0][1], rtol=1e-14)


# ---- rlang.vjp's pullback (rlang/ad/vjp_call.py)

def _vjp_call(llvm, name: str, outputs):
    from rlang.ad.vjp_call import _key

    made = llvm.compiled.plans.get(_key(name, False, list(outputs)))
    return made[0] if made else made


def _general_pullback(llvm, name: str, args, cotangents):
    """The general way's pullback, on a module loaded again (no builtin made yet)."""
    general = rlang.load(llvm.unit.file, backend="llvm", invcheck=llvm.compiled.invcheck)
    return rlang.vjp(general[name], *_copied(args))[1](cotangents)


def _warm_pullback(llvm, name: str, args, cotangents):
    """(outputs, vjp_fn) after three pullbacks: the builtin is made by then."""
    outputs, pull = rlang.vjp(llvm[name], *_copied(args))
    for _ in range(3):
        pull(cotangents)
    return outputs, pull


def test_a_pullback_takes_a_builtin_that_gives_the_general_ways_bits(modules):
    llvm, interp = modules
    rng = np.random.default_rng(12)
    args = _args(rng)
    outputs, pull = _warm_pullback(llvm, "spring!", args, (1.0, None, None, None, None))
    assert _vjp_call(llvm, "spring!", outputs)
    kept = _copied(outputs)
    cases = [(1.0, None, None, None, None),
             (float(rng.normal()), rng.normal(size=args[1].shape), rng.normal(size=3), 7, 0.5),
             (None, None, rng.normal(size=3), None, None)]
    for cotangents in cases:
        got = pull(cotangents)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(outputs, kept)
                   if isinstance(a, np.ndarray))
        _identical(got, _general_pullback(llvm, "spring!", args, cotangents))
        assert_same_gradients(got, rlang.vjp(interp["spring!"], *_copied(args))[1](cotangents))


def test_a_pullback_builtin_leaves_the_outputs_the_pass_writes(modules):
    """moved!'s pass restores x! from its output: the builtin works on a copy, so
    every call starts from the same outputs and gives new gradients."""
    llvm, interp = modules
    args = [0.0, np.linspace(-1.0, 1.0, 6), 0.3]
    cotangents = (1.0, np.arange(6.0), 0.5)
    outputs, pull = _warm_pullback(llvm, "moved!", args, cotangents)
    builtin = _vjp_call(llvm, "moved!", outputs)
    assert builtin
    kept = outputs[1].copy()
    first, second = (builtin(*outputs, *cotangents) for _ in range(2))
    assert outputs[1].tobytes() == kept.tobytes()
    assert first[1] is not second[1] and first[1] is not outputs[1]
    _identical(first, second)
    assert_same_gradients(first, rlang.vjp(interp["moved!"], *_copied(args))[1](cotangents))


def test_cotangents_of_other_kinds_go_the_general_way(modules):
    """The pullback's builtin gives () for cotangents it does not take, and the
    general way converts or refuses them as the interpreter does."""
    llvm, interp = modules
    args = _args(np.random.default_rng(13))
    shape = args[1].shape
    outputs, pull = _warm_pullback(llvm, "spring!", args, (1.0, None, None, None, None))
    builtin = _vjp_call(llvm, "spring!", outputs)
    assert builtin
    others = [(1, None, None, None, None),                      # an int for a float
              (1.0, np.ones(shape).tolist(), None, None, None),  # a list
              (1.0, np.ones(shape, dtype=np.float32), None, None, None),
              (1.0, np.ones((2, 2)), None, None, None),          # another shape
              (1.0, None, None, None)]                           # too short
    for case in others:
        assert len(case) != len(outputs) or builtin(*outputs, *case) == ()
        try:
            expected = rlang.vjp(interp["spring!"], *_copied(args))[1](case)
        except rlang.RlangError as error:
            with pytest.raises(rlang.RlangError) as got:
                pull(case)
            assert got.value.message == error.message
        else:
            assert_same_gradients(pull(case), expected)


@pytest.mark.parametrize("driver", ["hvp", "jvp"])
def test_vectors_of_other_kinds_go_the_general_way(modules, driver):
    """The hvp's and the jvp's builtins give () for vectors (tangents) they do not
    take, and the general way converts or refuses them as the interpreter does."""
    llvm, interp = modules
    rng = np.random.default_rng(8)
    args = _args(rng)
    vector = [0.0, np.ones(args[1].shape), np.ones(3), None, 1.0]
    if driver == "hvp":
        def run(module, case):
            return rlang.hvp(module["spring!"], _copied(args), case, "e!")
    else:
        def run(module, case):
            return rlang.jvp(module["spring!"], _copied(args), case)[1]
    for _ in range(3):
        run(llvm, vector)
    builtin = _hvp_call(llvm, "spring!", args, "e!") if driver == "hvp" else \
        _jvp_call(llvm, "spring!", args)
    assert builtin
    others = [[1, *vector[1:]],                                # an int for a float
              [0.0, np.ones(args[1].shape).tolist(), *vector[2:]],     # a list
              [0.0, np.ones(args[1].shape, dtype=np.float32), *vector[2:]],
              [0.0, np.ones((2, 2)), *vector[2:]],              # another shape
              vector[:4]]                                       # too short
    for case in others:
        assert builtin(*args, *case) == ()
        try:
            expected = run(interp, case)
        except rlang.RlangError as error:
            with pytest.raises(rlang.RlangError) as got:
                run(llvm, case)
            assert got.value.message == error.message
        else:
            assert_same_gradients(run(llvm, case), expected)


def test_hvp_of_a_loss_element(modules):
    llvm, interp = modules
    x = np.linspace(-1.0, 1.0, 5)
    vector = [None, np.arange(5.0), 2.0]
    for _ in range(3):
        rlang.hvp(llvm["moved!"], [0.0, x.copy(), 0.5], vector, ("x!", 3))
    assert _hvp_call(llvm, "moved!", [0.0, x, 0.5], ("x!", 3))
    assert_same_gradients(rlang.hvp(llvm["moved!"], [0.0, x.copy(), 0.5], vector, ("x!", 3)),
                          rlang.hvp(interp["moved!"], [0.0, x.copy(), 0.5], vector, ("x!", 3)))
    with pytest.raises(rlang.RlangError) as got:
        rlang.hvp(llvm["moved!"], [0.0, x[:2].copy(), 0.5], [None, None, 1.0], ("x!", 3))
    with pytest.raises(rlang.RlangError) as expected:
        rlang.hvp(interp["moved!"], [0.0, x[:2].copy(), 0.5], [None, None, 1.0], ("x!", 3))
    assert got.value.message == expected.value.message


@pytest.mark.parametrize("name, loss, args", [
    ("spring!", "e!", None),
    ("moved!", ("x!", 1), [0.0, np.linspace(-1.0, 1.0, 4), 0.5]),
])
def test_value_and_grad_takes_its_own_builtin(modules, name, loss, args):
    llvm, interp = modules
    args = args or _args(np.random.default_rng(9))
    both = rlang.value_and_grad(llvm[name], loss)
    for _ in range(3):
        both(*_copied(args))
    route = route_of(llvm[name], args, loss)
    assert route.value_call
    kept = _copied(args)
    value, gradients = both(*args)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(args, kept)
               if isinstance(a, np.ndarray))
    expected = rlang.value_and_grad(interp[name], loss)(*_copied(args))
    assert type(value) is float and value == pytest.approx(expected[0], rel=1e-13)
    assert_same_gradients(gradients, expected[1])
    fresh = rlang.load(llvm.unit.file, backend="llvm", invcheck=llvm.compiled.invcheck)
    general = rlang.value_and_grad(fresh[name], loss)(*_copied(args))
    assert value == general[0]
    _identical(gradients, general[1])


def _spring_w_jvp(x, dx, k, c):
    """spring!'s ∂e/∂w = c Σ_{i<k} x[i, :]² and its derivative along dx on x."""
    return c * np.sum(x[:k] ** 2, axis=0), 2.0 * c * np.sum(x[:k] * dx[:k], axis=0)


def _spring_jvp_case(rng, n, m):
    return ([0.0, rng.normal(size=(n, m)), rng.normal(size=m), n, float(rng.normal())],
            rng.normal(size=(n, m)))


def test_jvp_of_a_picked_gradient_keeps_and_clears_its_scratch_arrays(modules):
    """`rlang.jvp(rlang.grad(f, loss, argnums))`: the builtin gives back the picked
    entries alone and keeps the arrays of the others for its next call (Note
    [Scratch arrays kept], call_builtin_code.py), zeroed or refilled at each call:
    other values and other extents, in turn, give their own results."""
    llvm, _ = modules
    gradient = rlang.grad(llvm["spring!"], "e!", argnums=2)
    rng = np.random.default_rng(10)
    cases = [_spring_jvp_case(rng, n, m) for n, m in ((6, 3), (6, 3), (4, 2), (6, 3), (9, 3))]
    for _ in range(3):
        for args, dx in cases:
            got = rlang.jvp(gradient, tuple(_copied(args)), (None, dx.copy(), None, None, None))
            expected = _spring_w_jvp(args[1], dx, args[3], args[4])
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-13)


def test_jvp_of_a_picked_gradient_does_not_allocate_the_others_again(modules):
    import tracemalloc

    llvm, _ = modules
    gradient = rlang.grad(llvm["spring!"], "e!", argnums=2)
    args, dx = _spring_jvp_case(np.random.default_rng(11), 4000, 50)
    direction = (None, dx, None, None, None)
    for _ in range(3):
        rlang.jvp(gradient, args, direction)
    tracemalloc.start()
    try:
        rlang.jvp(gradient, args, direction)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # x's gradient, its tangent and the copy of dx (1.6 MB each) came kept
    assert peak < args[1].nbytes // 4


def test_a_kept_gradient_the_pass_reads_is_zeroed_at_every_call(modules):
    """moved!'s c gradient is summed through x!'s, which argnums leaves out: the
    array kept for x!'s gradient must start from zeros at every call."""
    llvm, _ = modules
    gradient = rlang.grad(llvm["moved!"], "e!", argnums=2)
    rng = np.random.default_rng(12)
    for _ in range(3):
        for n in (5, 5, 3, 5):
            x, c = rng.normal(size=n), float(rng.normal())
            got = rlang.jvp(gradient, (0.0, x.copy(), c), (None, None, 1.0))
            shifted = x + c * c
            expected = (4 * c * np.sum(shifted), 4 * np.sum(shifted) + 8 * c * c * n)
            np.testing.assert_allclose(got, expected, rtol=1e-12)


# ---- gradients nobody reads (Note [Gradients nobody reads], rlang/ad/derivatives.py)

def _mentioned_entry_params(llvm, name: str, args, derivative: str) -> dict:
    """{entry parameter name: whether the optimised-IR pass mentions it} of the
    derivative `derivative` of `name` for `args`."""
    from rlang.ad.derivatives import complete
    from rlang.backends.llvm.backend import build_derivative
    from rlang.ir.passes import run_passes
    from rlang.ir.walk import mentioned_vars, walk
    from rlang.lower.argument_types import type_of_value

    types = tuple(type_of_value(v) for v in args)
    module, _ = build_derivative(llvm.unit, name, types, False, llvm.compiled.invcheck,
                                 derivative)
    module = run_passes(complete(module))
    used = set()
    for fn in module.functions.values():
        for stmt in walk(fn.body):
            used |= mentioned_vars(stmt)
    return {p.name: p in used for p in module.functions[module.entry].params}


def test_derivative_names_with_gradients_nobody_reads():
    from rlang.ad.symbols import split_unwanted, without_gradients

    assert without_gradients("tan_grad", [4, 0, 1]) == "tan_grad-0-1-4"
    assert without_gradients("tan_grad", ()) == "tan_grad"
    assert split_unwanted("tan_grad-0-1-4") == ("tan_grad", frozenset({0, 1, 4}))
    assert split_unwanted("grad4") == ("grad4", frozenset())


def test_a_pass_leaves_out_the_gradients_nobody_reads(modules):
    """spring!'s x is only read: with its gradient unwanted the pass mentions neither
    it nor its tangent; moved!'s x! is written, and the chain rule of c reads its
    gradient, which stays."""
    llvm, _ = modules
    spring = [0.0, np.ones((3, 2)), np.ones(2), 3, 0.5]
    whole = _mentioned_entry_params(llvm, "spring!", spring, "tan_grad")
    picked = _mentioned_entry_params(llvm, "spring!", spring, "tan_grad-0-1-4")
    assert whole["x·grad"] and whole["x·grad·tan"]
    assert not picked["x·grad"] and not picked["x·grad·tan"]
    assert picked["w·grad"] and picked["w·grad·tan"]
    moved = _mentioned_entry_params(llvm, "moved!", [0.0, np.ones(4), 0.5], "tan_grad-0-1")
    assert moved["x!·grad"] and moved["c·grad"]


def test_a_picked_gradient_has_the_same_bits_at_every_call(modules):
    """The general run of `rlang.jvp(rlang.grad(f, loss, argnums))` (its first call)
    and its builtin (the later ones) run the same pass without the unwanted
    gradients, so they give the same bits; the arrays the builtin keeps for those
    gradients are not zeroed again and change nothing."""
    llvm, interp = modules
    gradient = rlang.grad(llvm["spring!"], "e!", argnums=2)
    args, dx = _spring_jvp_case(np.random.default_rng(14), 7, 4)
    direction = (None, dx, None, None, None)
    first = rlang.jvp(gradient, tuple(_copied(args)), direction)
    assert any(key[3] == "tan_grad-0-1-4" for key in llvm.compiled._modules)
    for _ in range(4):
        _identical(rlang.jvp(gradient, tuple(_copied(args)), direction), first)
    whole = rlang.jvp(rlang.grad(interp["spring!"], "e!", argnums=2), tuple(_copied(args)),
                      direction)
    assert_same_gradients(first, whole)
