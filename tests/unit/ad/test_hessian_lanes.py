"""Hessians W columns a pass (Note [Hessians in lanes], rlang/ad/hessian_lanes.py),
all groups in one native call (Note [Hessian groups in one call],
rlang/backends/llvm/groups.py), and the laned tangent passes they run.

Every compiled Hessian here is compared with the interpreter's (the reference),
and the one-call path with the groups driven from Python."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import rlang
import rlang.ad.hessian_lanes as hessian_lanes
from rlang.ad.lanes import NotLaned

REPO = Path(__file__).resolve().parents[3]

SOURCE = """
function mixed(k, y, a, x: f64[:], n, w: f64[:,:])
    k += 1
    for i = 0:length(x) - 1
        y += a * x[i] * x[i] * w[i % 2, 1] + sin(x[i]) * w[0, i % 3]
    end
    y += exp(a * w[1, 2]) * 0.25
    n += 2
end

function element(z: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        z[1] += x[i] * x[(i + 1) % length(x)] * z[0]
    end
end

function branchy(y, x: f64[:])
    for i = 0:length(x) - 1
        if (x[i] > 0.0, ~)
            y += x[i] * x[i] * x[i]
        else
            y += sqrt(x[i] * x[i] + 1.0)
        end
    end
end

function checked(y, x: f64[:])
    @safe assert(x[0] < 10.0, "x[0] stays below 10")
    for i = 0:length(x) - 1
        y += x[i] * x[i] * x[0]
    end
end
"""

MIXED_ARGS = (3, 0.5, 0.7, np.linspace(-1.0, 1.2, 6), 4,
              np.array([[0.3, -0.2, 0.9], [1.1, 0.4, -0.6]]))


@pytest.fixture(autouse=True)
def laned_from_the_first_call(monkeypatch):
    monkeypatch.setattr(hessian_lanes, "LANED_FROM_CALL", 1)


@pytest.fixture(scope="module")
def modules():
    return (rlang.loads(SOURCE, backend="llvm"),
            rlang.loads(SOURCE, backend="interp"))


def both(modules, name, args, loss, **options):
    compiled, interpreted = (getattr(m, name) for m in modules)
    return (rlang.hessian(compiled, args, loss, **options),
            rlang.hessian(interpreted, args, loss, **options))


def test_scalars_arrays_and_integers_between_them(modules):
    ours, reference = both(modules, "mixed", MIXED_ARGS, "y")
    assert ours.shape == (2 + 6 + 6,) * 2
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("argnums", [1, 3, (2, 5), (3, 2)])
def test_argnums_choose_the_columns(modules, argnums):
    ours, reference = both(modules, "mixed", MIXED_ARGS, "y", argnums=argnums)
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_a_loss_in_an_array_element(modules):
    args = (np.array([1.5, 0.0, 0.0]), np.array([0.3, -1.2, 0.8, 2.0, 0.1]))
    ours, reference = both(modules, "element", args, "z[1]")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_branches_on_values(modules):
    args = (0.0, np.array([0.5, -1.5, 2.0, -0.25, 0.0, 1.0, -3.0, 0.75, 1.25]))
    ours, reference = both(modules, "branchy", args, "y")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_strided_arguments_and_the_callers_arrays_kept(modules):
    base = np.linspace(0.1, 2.0, 20)
    x = base[::3]
    before = base.copy()
    ours, reference = both(modules, "branchy", (0.0, x), "y")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)
    assert np.array_equal(base, before)


def test_later_calls_reuse_the_plan_with_new_values(modules):
    compiled, interpreted = modules
    for scale in (1.0, -0.5, 2.0):
        x = scale * np.linspace(-1.0, 1.0, 7)
        ours = rlang.hessian(compiled.branchy, (0.0, x), "y")
        reference = rlang.hessian(interpreted.branchy, (0.0, x), "y")
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)
    plans = [key for key in compiled.compiled.plans if key[0] == "hessian in one call"]
    assert plans, "the groups did not run in one native call"


def _quick_plans(module) -> list:
    return [key for key in module.compiled.plans if key[0] == "hessian plan"]


def test_a_later_call_finds_its_plan_without_binding(modules, monkeypatch):
    """Note [A Hessian's later calls]: the same kinds, shapes, loss and argnums."""
    compiled, interpreted = modules
    x = np.linspace(-1.0, 1.0, 11)
    first = rlang.hessian(compiled.branchy, (0.0, x), "y", argnums=1)
    before = len(_quick_plans(compiled))

    def unbound(*args):
        raise AssertionError("bound again")

    monkeypatch.setattr(compiled.compiled, "bind", unbound)
    assert np.array_equal(rlang.hessian(compiled.branchy, (0.0, x), "y", argnums=1), first)
    y = 1.5 * x
    np.testing.assert_allclose(rlang.hessian(compiled.branchy, (0.0, y), "y", argnums=1),
                               rlang.hessian(interpreted.branchy, (0.0, y), "y", argnums=1),
                               rtol=1e-12, atol=1e-14)
    assert len(_quick_plans(compiled)) == before
    with pytest.raises(AssertionError, match="bound again"):     # another shape
        rlang.hessian(compiled.branchy, (0.0, np.linspace(-1.0, 1.0, 12)), "y", argnums=1)
    with pytest.raises(AssertionError, match="bound again"):     # other argnums
        rlang.hessian(compiled.branchy, (0.0, x), "y")
    with pytest.raises(AssertionError, match="bound again"):     # an int for a float
        rlang.hessian(compiled.branchy, (0, x), "y", argnums=1)


def test_a_later_call_still_refuses_what_binding_refuses(modules, monkeypatch):
    """A read-only array the function writes, and (with invcheck) a written array
    passed twice, are refused by a call that finds its plan as by the first call."""
    compiled = modules[0]
    z, x = np.array([1.5, 0.0, 0.0]), np.array([0.3, -1.2, 0.8])
    read_only = z.copy()
    read_only.flags.writeable = False
    shared = np.array([1.5, 0.5, 0.25])

    def refusals() -> list:
        found = []
        for args in [(read_only, x), (shared, shared)]:
            with pytest.raises(rlang.RlangError) as caught:
                rlang.hessian(compiled.element, args, "z[1]")
            found.append(str(caught.value))
        return found

    rlang.hessian(compiled.element, (z, x), "z[1]")
    assert _quick_plans(compiled)
    quick = refusals()
    assert "read-only" in quick[0] and "are the same memory, and `z` is written" in quick[1]
    monkeypatch.setattr(hessian_lanes, "_plan_key", lambda *args: None)
    assert refusals() == quick
    with pytest.raises(rlang.RlangError, match="read-only"):       # (the interpreter's)
        rlang.hessian(modules[1].element, (read_only, x), "z[1]")


def test_groups_from_python_give_the_same_hessian(modules, monkeypatch):
    compiled = modules[0]
    one_call = rlang.hessian(compiled.mixed, MIXED_ARGS, "y")
    monkeypatch.setattr(hessian_lanes, "_in_one_call", lambda *args: None)
    from_python = rlang.hessian(compiled.mixed, MIXED_ARGS, "y")
    assert np.array_equal(one_call, from_python)


@pytest.mark.parametrize("lanes", [2, 3, 5, 16])
def test_every_lane_count_gives_the_same_hessian(modules, monkeypatch, lanes):
    monkeypatch.setattr(hessian_lanes, "LANES", lanes)
    ours, reference = both(modules, "mixed", MIXED_ARGS, "y")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_a_failed_check_in_a_group_is_the_interpreters_error(modules):
    x = np.array([1.0, 2.0, 3.0])
    rlang.hessian(modules[0].checked, (0.0, x), "y")       # the plan, made
    bad = np.array([11.0, 2.0, 3.0])
    for module in modules:
        with pytest.raises(rlang.RlangError, match="assert"):
            rlang.hessian(module.checked, (0.0, bad), "y")
    ours, reference = both(modules, "checked", (0.0, x), "y")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_threads_computing_hessians_at_once(modules):
    compiled, interpreted = modules
    points = [k * np.linspace(-1.0, 1.0, 9) for k in (0.5, 1.0, 1.5, 2.0)]
    expected = [rlang.hessian(interpreted.branchy, (0.0, x), "y") for x in points]
    found = [None] * len(points)

    def work(k):
        for _ in range(20):
            found[k] = rlang.hessian(compiled.branchy, (0.0, points[k]), "y")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(points))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for ours, reference in zip(found, expected):
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_the_petersen_embedding(modules):
    import sys
    sys.path.insert(0, str(REPO / "examples"))
    from petersen_newton import petersen_adjacency

    adj = petersen_adjacency()
    x = np.random.default_rng(3).normal(size=(10, 4))
    path = str(REPO / "examples" / "petersen.rev")
    compiled = rlang.load(path, backend="llvm")
    interpreted = rlang.load(path, backend="interp")
    ours = rlang.hessian(compiled.petersen_, (0.0, x, adj), "loss!")
    reference = rlang.hessian(interpreted.petersen_, (0.0, x, adj), "loss!")
    np.testing.assert_allclose(ours, reference, rtol=1e-11, atol=1e-13)


def test_the_tangent_passes_carry_lanes_through_seed_branches(modules):
    """The gradient pass's seed branches test a tangent in "tan_grad": with lanes
    they are taken apart (Note [Seed branches in lanes]) rather than refused."""
    from rlang.backends.llvm.backend import build_derivative
    from rlang.ir import nodes as ir
    from rlang.ir.walk import walk
    from rlang.lower.argument_types import type_of_value

    compiled = modules[0]
    functions = compiled.compiled
    values = functions.bind("branchy", [0.0, np.zeros(3)])
    types = tuple(type_of_value(v) for v in values)
    for derivative in ("tan4", "tan_grad4"):
        module, _ = build_derivative(compiled.unit, "branchy", types, False,
                                     compiled.invcheck, derivative)
        entry = module.functions[module.entry]
        assert entry.symbol.endswith("__x4")
        params = [p.name for p in entry.params]
        assert sum(name.endswith("·3") for name in params) >= 1
        branches = [s for s in walk(entry.body) if isinstance(s, ir.If)]
        assert all(not isinstance(b.pre, ir.Nonzero) for s in branches for b in s.branches)


def test_a_pass_that_cannot_carry_lanes_is_refused_once(modules, monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))     # derived, not loaded
    compiled = modules[0]
    functions = compiled.compiled
    calls = []

    def refusing(*args):
        calls.append(args)
        raise NotLaned("no lanes here")

    values = functions.bind("mixed", list(MIXED_ARGS))
    from rlang.lower.argument_types import type_of_value
    types = tuple(type_of_value(v) for v in values)
    monkeypatch.setattr("rlang.ad.derivatives.laned", refusing)
    for _ in range(2):
        with pytest.raises(NotLaned):
            functions.native("mixed", types, False, derivative="tan_grad13")
    assert len(calls) == 1


def test_the_inverse_of_a_function(modules):
    args = (0.5, np.linspace(-1.0, 1.0, 5))
    ours = rlang.hessian(~modules[0].branchy, args, "y")
    reference = rlang.hessian(~modules[1].branchy, args, "y")
    np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=1e-14)


def test_a_one_off_hessian_compiles_no_laned_pass(monkeypatch):
    monkeypatch.setattr(hessian_lanes, "LANED_FROM_CALL", 2)
    compiled = rlang.loads(SOURCE, backend="llvm")
    interpreted = rlang.loads(SOURCE, backend="interp")

    def laned() -> set:
        return {key[3] for key in compiled.compiled._modules if key[3].startswith("tan")}

    args = (0.0, np.linspace(-1.0, 1.0, 5))
    first = rlang.hessian(compiled.branchy, args, "y")
    assert laned() == {"tan", "tan_grad"}
    second = rlang.hessian(compiled.branchy, args, "y")
    assert laned() == {"tan", "tan_grad", "tan6", "tan_grad6"}     # y and x: 6 inputs
    reference = rlang.hessian(interpreted.branchy, args, "y")
    np.testing.assert_allclose(first, reference, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(second, reference, rtol=1e-12, atol=1e-14)
