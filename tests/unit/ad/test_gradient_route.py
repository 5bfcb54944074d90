"""A compiled gradient's short route (Note [The gradient's short route],
rlang/ad/gradient_route.py): the second and later calls of a gradient with
arguments of kinds seen before give what the general route gives, with its errors,
and leave the caller's arrays as they were."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ad import gradient_route

SOURCE = """
function f(a: f64[:], y: f64, b: f64[:], n: i64)
    for i = 0:length(a) - 1
        a[i] += 1.0 / 3.0 + 0.1 * b[i]
    end
    y += a[0] * a[1] * n
    @safe assert(y < 100.0, "y too big")
end

function g(y: f64, x: f64[:])
    for i = 0:length(x) - 1
        y += sin(x[i]) * x[i]
    end
end
"""
START = np.array([-0.975575, 0.7, 1.0 / 7.0, 1e-17])


@pytest.fixture
def routes(monkeypatch):
    """Whether each gradient call of a compiled module took the short route."""
    taken = []
    quick = gradient_route.quick_gradient

    def counting(function, args, loss, value=False):
        result = quick(function, args, loss, value)
        if function.module.compiled is not None:
            taken.append(result is not None)
        return result
    monkeypatch.setattr(gradient_route, "quick_gradient", counting)
    return taken


@pytest.mark.parametrize("invcheck", [True, False])
def test_later_calls_take_the_route_and_agree_with_the_interpreter(routes, invcheck):
    compiled = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    reference = rlang.loads(SOURCE, backend="interp")
    rng = np.random.default_rng(3)
    for call in range(4):
        a, b = START + rng.normal(size=4) * call, rng.normal(size=4)
        before = a.copy()
        got = rlang.gradient(compiled.f, [a, 0.5, b, 2], loss="y")
        want = rlang.gradient(reference.f, [a.copy(), 0.5, b.copy(), 2], loss="y")
        assert a.tobytes() == before.tobytes()          # the caller's array, bit for bit
        for ours, theirs in zip(got, want):
            if theirs is None:
                assert ours is None
            else:
                np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)
    assert routes[1:] == [True] * 3         # (the first call makes the plan)


def test_the_route_serves_grad_and_other_shapes(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    grad = rlang.grad(m.g, "y", argnums=1)
    for n in (3, 3, 7, 1):
        x = np.linspace(0.1, 1.0, n)
        np.testing.assert_allclose(grad(0.0, x), np.sin(x) + x * np.cos(x), rtol=1e-14)
    # the first call makes the plan, the second takes the route, which then has a
    # builtin that the later calls take (Note [Gradient calls without Python])
    assert routes == [False, True]
    assert gradient_route.route_of(m.g, [0.0, x], "y").call


def test_a_read_only_array_gets_the_general_routes_error(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    b = np.ones(4)
    rlang.gradient(m.f, [START.copy(), 0.0, b, 1], loss="y")
    a = START.copy()
    a.flags.writeable = False
    with pytest.raises(rlang.RlangTypeError, match="read-only array"):
        rlang.gradient(m.f, [a, 0.0, b, 1], loss="y")


def test_shared_memory_gets_the_aliasing_error_on_the_route(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    rlang.gradient(m.f, [START.copy(), 0.0, np.ones(4), 1], loss="y")
    a = START.copy()
    with pytest.raises(rlang.RlangError, match="same memory"):
        rlang.gradient(m.f, [a, 0.0, a, 1], loss="y")
    assert a.tobytes() == START.tobytes()


def test_an_error_in_the_run_is_the_general_routes_and_the_arrays_come_back(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    b = np.ones(4)
    rlang.gradient(m.f, [START.copy(), 0.0, b, 1], loss="y")
    a = START.copy()
    with pytest.raises(rlang.RlangError, match="y too big"):
        rlang.gradient(m.f, [a, 0.0, b, -1000], loss="y")
    assert a.tobytes() == START.tobytes()
    assert routes == [False]      # (raised on the route, as the general one raises it)


def test_a_loss_element_outside_smaller_arrays_is_the_general_routes_error(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    grad = rlang.grad(m.f, ("a", (3,)), argnums=0)
    grad(START.copy(), 0.0, np.ones(4), 1)
    grad(START.copy(), 0.0, np.ones(4), 1)
    with pytest.raises(rlang.RlangError, match="out of bounds|outside|index"):
        grad(START[:2].copy(), 0.0, np.ones(2), 1)
    assert routes == [False, True, False]


def test_value_and_grad_takes_the_route_with_the_losss_value(routes):
    m = rlang.loads(SOURCE, backend="llvm")
    both = rlang.value_and_grad(m.g, "y", argnums=1)
    for n in (4, 4, 2):
        x = np.linspace(0.1, 1.0, n)
        value, gradient = both(0.25, x)
        assert type(value) is float and value == pytest.approx(0.25 + np.sum(np.sin(x) * x))
        np.testing.assert_allclose(gradient, np.sin(x) + x * np.cos(x), rtol=1e-14)
    element = rlang.value_and_grad(m.f, ("a", (1,)), argnums=2)
    for _ in range(2):
        a = START.copy()
        value, gradient = element(a, 0.0, np.ones(4), 1)
        assert value == START[1] + 1.0 / 3.0 + 0.1 and a.tobytes() == START.tobytes()
        np.testing.assert_array_equal(gradient, [0.0, 0.1, 0.0, 0.0])
    # the third call of `both` takes the route's builtin (Note [Gradient calls
    # without Python]), which the transform calls itself
    assert routes == [False, True, False, True]
    assert gradient_route.route_of(m.g, [0.25, x], "y").value_call


# ---- Note [Two entry points on one buffer] (rlang/backends/llvm/paired.py)

@pytest.fixture
def pairs(monkeypatch):
    """The packed calls the route made: (with a forward?, how many calls ran).  The
    routes get no builtin (Note [Gradient calls without Python]), which would make
    the later calls in its place."""
    from rlang.backends.llvm import backend

    monkeypatch.setattr(backend.LlvmFunctions, "native_call", lambda self, entries, call: None)

    made = []
    paired = backend.LlvmFunctions.paired

    def counting(self, forward, backward):
        pair = paired(self, forward, backward)
        if not pair:
            return pair
        record = [forward is not None, 0]
        made.append(record)

        def call(values, between=None):
            record[1] += 1
            return pair(values, between)
        return call
    monkeypatch.setattr(backend.LlvmFunctions, "paired", counting)
    return made


def _unpaired(monkeypatch):
    from rlang.backends.llvm import backend

    monkeypatch.setattr(backend.LlvmFunctions, "paired", lambda self, f, b: None)


@pytest.mark.parametrize("invcheck", [True, False])
def test_the_packed_call_gives_the_two_calls_bits(pairs, monkeypatch, invcheck):
    rng = np.random.default_rng(5)
    calls = [[START + rng.normal(size=4), 0.5, rng.normal(size=4), 2] for _ in range(4)]
    got = []
    m = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    for args in calls:
        got.append(rlang.gradient(m.f, [a.copy() if isinstance(a, np.ndarray) else a
                                        for a in args], loss="y"))
    # with invcheck on, f writes `a`, so the forward runs (paired with the pass); off,
    # the pass runs alone only where f just adds to its arguments: here it does not
    assert [with_forward for with_forward, _ in pairs] == [True] and pairs[0][1] == 3
    _unpaired(monkeypatch)
    m = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    for args, ours in zip(calls, got):
        theirs = rlang.gradient(m.f, [a.copy() if isinstance(a, np.ndarray) else a
                                      for a in args], loss="y")
        for x, y in zip(ours, theirs):
            assert (x is None and y is None) or np.asarray(x).tobytes() == np.asarray(y).tobytes()


def test_a_pass_alone_is_one_packed_call_with_the_general_routes_bits(pairs, monkeypatch):
    m = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    grad = rlang.grad(m.g, "y")
    xs = [np.linspace(-1.0, 2.0, 5) + k for k in range(3)]
    got = [grad(0.25, x) for x in xs]
    assert pairs == [[False, 2]]        # g only adds to y: no forward run
    _unpaired(monkeypatch)
    m = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    grad = rlang.grad(m.g, "y")
    for x, ours in zip(xs, got):
        theirs = grad(0.25, x)
        assert type(ours[0]) is float and ours[0] == theirs[0] == 1.0
        assert ours[1].tobytes() == theirs[1].tobytes()


def test_an_error_in_the_packed_forward_is_raised_with_the_caller_s_arrays_back(pairs):
    m = rlang.loads(SOURCE, backend="llvm")
    b = np.ones(4)
    rlang.gradient(m.f, [START.copy(), 0.0, b, 1], loss="y")
    rlang.gradient(m.f, [START.copy(), 0.0, b, 1], loss="y")
    a = START.copy()
    with pytest.raises(rlang.RlangError, match="y too big") as raised:
        rlang.gradient(m.f, [a, 0.0, b, -1000], loss="y")
    assert a.tobytes() == START.tobytes()
    assert pairs == [[True, 2]]
    general = rlang.loads(SOURCE, backend="llvm")
    with pytest.raises(rlang.RlangError) as expected:
        rlang.gradient(general.f, [START.copy(), 0.0, b, -1000], loss="y")
    assert str(raised.value) == str(expected.value)


def test_layouts_that_share_a_buffer():
    from rlang.backends.llvm.marshal import EntryLayout
    from rlang.ir import nodes as ir

    array = ir.ArrayType("f64", 1)
    forward = EntryLayout(("f64", array, "i64"), (), objects=True)
    backward = EntryLayout(("f64", array, "i64", "f64", array), (), objects=True)
    assert forward.leads(backward)
    assert not backward.leads(forward)
    assert not EntryLayout(("i64", array), (), objects=True).leads(backward)
    assert not EntryLayout(("f64", array), (), objects=False).leads(backward)


@pytest.mark.parametrize("loss", ["y", ("a", (1,))], ids=["scalar", "element"])
def test_value_and_grad_reads_the_loss_between_the_packed_calls(pairs, monkeypatch, loss):
    rng = np.random.default_rng(8)
    calls = [[START + rng.normal(size=4), 0.5, rng.normal(size=4), 2] for _ in range(3)]

    def run():
        m = rlang.loads(SOURCE, backend="llvm")
        both = rlang.value_and_grad(m.f, loss)
        out = []
        for args in calls:
            a = args[0].copy()
            out.append(both(a, *args[1:]))
            assert a.tobytes() == args[0].tobytes()
        return out
    got = run()
    assert pairs == [[True, 2]]
    _unpaired(monkeypatch)
    for (value, gradients), (theirs, expected) in zip(got, run()):
        assert type(value) is float and value == theirs
        for x, y in zip(gradients, expected):
            assert (x is None and y is None) or np.asarray(x).tobytes() == np.asarray(y).tobytes()
