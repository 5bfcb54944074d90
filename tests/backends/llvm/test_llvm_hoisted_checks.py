"""Reads at constant indices checked once per array axis (Note [Constant indices
checked once], rlang/backends/llvm/hoisted_checks.py): the same values, and where
a read is out of bounds the same error as the interpreter's, naming the read that
fails first; and fewer checks in the code."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.backends.llvm.hoisted_checks import hoisted_bounds
from rlang.ir import nodes as ir
from rlang.lower.statements import lower, type_of_value

SOURCE = """
# reads in an order whose largest index is not the last
function mixed(y: f64, x: f64[:], z: f64[:, :])
    y += x[3] * x[0] + z[1, 2] * x[5] - x[1] * z[0, 4] + x[4] * x[2] + z[2, 1]
end

# an element read twice, a negative index never reached unless x is short
function with_repeats(y: f64, x: f64[:])
    y += x[2] * x[2] + x[1] * x[2] + x[6] * x[0]
end

function negative(y: f64, x: f64[:])
    y += x[0] + x[1] + x[-1]
end

# a division that may fail first keeps every check where it is
function with_division(y: f64, x: f64[:], k: i64)
    y += x[0] * f64(7 // k) + x[1] + x[9]
end

# an ancilla's value, then its uncomputation
function ancilla(y: f64, x: f64[:])
    t ← x[0] * x[1] + x[2] * x[3] + x[4]
    y += t
    t → x[0] * x[1] + x[2] * x[3] + x[4]
end
"""


def _outcome(backend: str, name: str, args, invcheck: bool = True):
    fn = rlang.loads(SOURCE, backend=backend, invcheck=invcheck)[name]
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        return ("ok", fn(*copies))
    except rlang.RlangRuntimeError as error:
        return ("error", str(error))


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "error":
        return a[1] == b[1]
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a[1], b[1]))


CASES = [("mixed", n, m) for n in range(0, 8) for m in ((3, 5), (2, 5), (3, 2), (1, 1))] + \
        [("with_repeats", n, None) for n in range(0, 8)] + \
        [("negative", n, None) for n in range(0, 4)] + \
        [("ancilla", n, None) for n in range(0, 6)]


@pytest.mark.parametrize("invcheck", [True, False])
@pytest.mark.parametrize("name, n, shape", CASES,
                         ids=[f"{name}-{n}-{shape}" for name, n, shape in CASES])
def test_values_and_errors_are_the_interpreters(name, n, shape, invcheck):
    x = np.arange(1.0, n + 1.0)
    args = (0.0, x) if shape is None else \
        (0.0, x, np.arange(1.0, shape[0] * shape[1] + 1).reshape(shape))
    expected = _outcome("interp", name, args, invcheck)
    got = _outcome("llvm", name, args, invcheck)
    assert _same(expected, got), (expected, got)


@pytest.mark.parametrize("k", [0, 1])
@pytest.mark.parametrize("n", [1, 5, 10])
def test_an_expression_with_another_check_keeps_its_order(n, k):
    args = (0.0, np.arange(1.0, n + 1.0), k)
    assert _same(_outcome("interp", "with_division", args),
                 _outcome("llvm", "with_division", args))


def _value(source: str, name: str, args):
    unit = rlang.loads(source, backend="interp").unit
    module = lower(unit, name, tuple(type_of_value(a) for a in args), False, True)
    (update,) = [s for s in module.functions[module.entry].body if isinstance(s, ir.Update)]
    return update.value


def test_the_plan_keeps_reads_that_may_fail_first_in_order():
    plan = hoisted_bounds(_value(SOURCE, "mixed", (0.0, np.ones(8), np.ones((3, 5)))))
    assert len(plan.axes) == 3              # x's axis, z's two
    assert plan.largest == (5, 2, 4)
    # x[3] x[0] z[1, 2] x[5] x[1] z[0, 4] x[4] x[2] z[2, 1]: x[0], x[1], x[4] and
    # x[2] are no larger than x[3] or x[5], z[0, ·] and z[·, 1] no larger than before
    assert [(index, axis) for index, axis, _ in plan.table] == \
        [(3, 0), (1, 1), (2, 2), (5, 0), (4, 2), (2, 1)]


def test_reads_at_computed_indices_or_other_checks_keep_their_checks():
    source = "function f(y: f64, x: f64[:], k: i64)\n    y += x[0] + x[1] + x[k]\nend\n"
    assert hoisted_bounds(_value(source, "f", (0.0, np.ones(3), 0))) is None
    assert hoisted_bounds(_value(SOURCE, "with_division", (0.0, np.ones(3), 1))) is None
    two = "function f(y: f64, x: f64[:])\n    y += x[0] + x[1]\nend\n"
    assert hoisted_bounds(_value(two, "f", (0.0, np.ones(3)))) is None


def test_a_long_sum_of_constant_reads_has_one_check(monkeypatch):
    from rlang.backends.llvm import jit
    seen = []
    optimise = jit.optimise
    monkeypatch.setattr(jit, "optimise", lambda text, machine: (seen.append(text),
                                                                optimise(text, machine))[1])
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "0")
    terms = " + ".join(f"x[{i}] * x[{(7 * i) % 300}]" for i in range(300))
    source = f"function long_sum(y: f64, x: f64[:])\n    y += {terms}\nend\n"
    x = np.linspace(0.0, 1.0, 300)
    m = rlang.loads(source, backend="llvm")
    assert m.long_sum(0.0, x)[0] == rlang.loads(source, backend="interp").long_sum(0.0, x)[0]
    text = next(t for t in seen if "long_sum" in t)
    assert text.count("icmp uge") <= 3         # the axis's check, the scan's compare


def _gradient(backend: str, name: str, args):
    m = rlang.loads(SOURCE, backend=backend)
    try:
        return ("ok", rlang.gradient(m[name], args, loss="y"))
    except rlang.RlangRuntimeError as error:
        return ("error", str(error))


@pytest.mark.parametrize("n", [0, 4, 6, 8])
def test_gradients_and_their_errors_are_the_interpreters(n):
    args = (0.0, np.arange(1.0, n + 1.0), np.arange(1.0, 16.0).reshape(3, 5))
    expected, got = _gradient("interp", "mixed", args), _gradient("llvm", "mixed", args)
    assert expected[0] == got[0]
    if expected[0] == "error":
        assert expected[1] == got[1]
    else:
        for a, b in zip(expected[1], got[1]):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12)


def _pass_error(monkeypatch, tmp_path, hoist: bool, n: int) -> str:
    """The error of the gradient pass of `mixed` run alone from too short an x (its
    reads, one scalar ancilla each, planned as one run), with or without hoisting."""
    from rlang.ad import compiled
    from rlang.backends.llvm import hoisted_checks

    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / ("on" if hoist else "off")))
    monkeypatch.setattr(hoisted_checks, "MIN_READS", 3 if hoist else 10 ** 9)
    monkeypatch.setattr(compiled, "_without_forward",       # the pass's error, not None
                        lambda functions, plan, name, args, inverse, signature:
                        compiled._gradient_pass(functions, plan, [
                            a.copy() if isinstance(a, np.ndarray) else a for a in args]))
    m = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    args = (0.0, np.arange(1.0, n + 1.0), np.arange(1.0, 16.0).reshape(3, 5))
    with pytest.raises(rlang.RlangRuntimeError) as caught:
        rlang.gradient(m.mixed, args, loss="y")
    return str(caught.value)


@pytest.mark.parametrize("n", [0, 3, 4, 5])
def test_a_gradient_pass_fails_at_the_read_it_failed_at_before(monkeypatch, tmp_path, n):
    assert _pass_error(monkeypatch, tmp_path, True, n) == \
        _pass_error(monkeypatch, tmp_path, False, n)


def _random_source(seed: int, functions: int = 12) -> str:
    """Functions whose one update reads x (1-D) and z (2-D) at random constant
    indices, negative ones among them, in random order and nesting."""
    rng = np.random.default_rng(seed)
    lines = []
    for f in range(functions):
        reads = []
        for _ in range(int(rng.integers(3, 12))):
            if rng.random() < 0.6:
                reads.append(f"x[{int(rng.integers(-2, 9))}]")
            else:
                reads.append(f"z[{int(rng.integers(-1, 4))}, {int(rng.integers(0, 5))}]")
        expr = reads[0]
        for read in reads[1:]:
            op = ("+", "-", "*")[int(rng.integers(0, 3))]
            expr = f"({expr} {op} {read})" if rng.random() < 0.5 else f"{read} {op} {expr}"
        lines.append(f"function f{f}(y: f64, x: f64[:], z: f64[:, :])\n    y += {expr}\nend\n")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_constant_reads_fail_where_the_interpreter_fails(seed):
    source = _random_source(seed)
    modules = {backend: rlang.loads(source, backend=backend) for backend in ("interp", "llvm")}
    for f in range(12):
        for n, rows, cols in ((0, 1, 1), (3, 2, 5), (6, 4, 3), (9, 4, 5), (2, 0, 2)):
            args = (0.0, np.arange(1.0, n + 1.0), np.ones((rows, cols)))
            outcomes = []
            for backend, m in modules.items():
                try:
                    outcomes.append(("ok", m[f"f{f}"](*args)[0]))
                except rlang.RlangRuntimeError as error:
                    outcomes.append(("error", str(error)))
            assert outcomes[0] == outcomes[1], (f, n, rows, cols, outcomes)
