"""`@parallel for` on threads on the llvm backend (LANGUAGE.md §14; Note [Parallel
loops on threads], rlang/ir/blocks.py): results and gradients with the same bits
for 1, 2 and 4 threads, equal to the interpreter's, the blocks really run by the
pool, failures reported as the interpreter reports them with the arrays as it
leaves them, and the loops that stay inline."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.backends.llvm import blocks as runtime
from rlang.ir import blocks as plans
from rlang.ir import nodes as ir
from rlang.lower.argument_types import type_of_value

from gradient_agreement import assert_same_error, assert_same_gradients

SOURCE = """
function point(o, x: f64[:], i, w)
    @routine begin
        t ← 0.0
        for k = 1:40
            t += sin(x[i] * w + k) / k
        end
    end
    o += t * w
    ~@routine
end

function heavy(y: f64[:], x: f64[:], w)
    @parallel for i = 0:length(x) - 1
        point(y[i], x, i, w)
    end
end

function squares(s, y: f64[:])
    for i = 0:length(y) - 1
        s += y[i] * y[i]
    end
end

function heavy_total(s, x: f64[:], w)
    y ← zeros(f64, length(x))
    heavy(y, x, w)
    squares(s, y)
    ~heavy(y, x, w)
    y → zeros(f64, length(x))
end

function light(y: f64[:], x: f64[:], w: f64[:], c)
    @parallel for i = length(x) - 1:-1:0
        y[i] += w[i % 3] * x[i] * c + w[0] * c
    end
end

function light_total(s, x: f64[:], w: f64[:], c)
    y ← zeros(f64, length(x))
    light(y, x, w, c)
    for i = 0:length(x) - 1
        s += sin(y[i])
        s += y[i] * c
    end
    ~light(y, x, w, c)
    y → zeros(f64, length(x))
end

function rows(out: f64[:], m: f64[:,:], v: f64[:])
    @parallel for i = 0:size(m, 0) - 1
        for j = 0:size(m, 1) - 1
            out[i] += m[i, j] * v[j]
        end
    end
end

function rows_total(s, m: f64[:,:], v: f64[:])
    out ← zeros(f64, size(m, 0))
    rows(out, m, v)
    for i = 0:length(out) - 1
        s += out[i] * out[i]
    end
    ~rows(out, m, v)
    out → zeros(f64, size(m, 0))
end

function spin(z: complex[:], c: complex)
    @parallel for i = 0:length(z) - 1
        z[i] += c * c * (i + 1)
    end
end

function spin_total(s, c: complex)
    z ← zeros(complex, 1200)
    spin(z, c)
    for i = 0:length(z) - 1
        s += abs(z[i])
    end
    ~spin(z, c)
    z → zeros(complex, 1200)
end

function checked(y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        y[i] += x[i]
        t ← x[i] * 2.0
        t → 2.0
    end
end

function checked_point(o, x: f64[:], i)
    t ← x[i] * 2.0
    o += t
    t → 2.0
end

function via_callee(y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        checked_point(y[i], x, i)
    end
end

function out_of_range(y: f64[:], x: f64[:], last)
    @parallel for i = 0:last
        y[i] += x[i] * 3.0
    end
end

function printing(y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        y[i] += x[i]
        if i == 0
            @safe print("first")
        end
    end
end

function pick_row(o, P: f64[:,:], i)
    o += P[i, 0] * P[i, 1]
end

function via_row(y: f64[:], P: f64[:,:])
    @parallel for i = 0:length(y) - 1
        pick_row(y[i], P, i)
    end
end

function corner_row(o, P: f64[:,:], i)
    o += P[0, 0] * P[i, 1]
end

function via_corner(y: f64[:], P: f64[:,:])
    @parallel for i = 0:length(y) - 1
        corner_row(y[i], P, i)
    end
end

function scatter(y: f64[:], x: f64[:], p: i64[:])
    @parallel for i = 0:length(x) - 1
        y[p[i]] += x[i]
    end
end
"""
N = 3000


@pytest.fixture(scope="module")
def llvm():
    return rlang.loads(SOURCE, backend="llvm")


@pytest.fixture(scope="module")
def interp():
    return rlang.loads(SOURCE, backend="interp")


@pytest.fixture
def threads():
    """Set the thread count inside a test; the default again after it."""
    yield rlang.set_num_threads
    from rlang import threads as module

    module._state["count"] = None


@pytest.fixture
def pool_runs(monkeypatch):
    """How many loops Python's pool ran (ThreadedLoops.run returning 0)."""
    ran = []
    original = runtime.ThreadedLoops.run

    def counted(self, *args):
        status = original(self, *args)
        ran.append(status)
        return status

    monkeypatch.setattr(runtime.ThreadedLoops, "run", counted)
    return ran


def _data():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.0, 1.0, N)
    return x, rng.uniform(0.5, 1.5, 3), rng.uniform(-1, 1, (700, 9)), rng.uniform(-1, 1, 9)


CALLS = {
    "heavy": lambda x, w, m, v: ("heavy", (np.zeros(N), x, 0.7)),
    "light": lambda x, w, m, v: ("light", (np.zeros(N), x, w, 1.3)),
    "rows": lambda x, w, m, v: ("rows", (np.zeros(700), m, v)),
    "spin": lambda x, w, m, v: ("spin", (np.zeros(1200, dtype=complex), 0.3 + 0.8j)),
}
GRADIENTS = {
    # (a third of x: the interpreter's gradient of 3000 points took most of 36 s)
    "heavy": lambda x, w, m, v: ("heavy_total", (0.0, x[:1000].copy(), 0.7)),
    "light": lambda x, w, m, v: ("light_total", (0.0, x, w, 1.3)),
    "rows": lambda x, w, m, v: ("rows_total", (0.0, m, v)),
    "spin": lambda x, w, m, v: ("spin_total", (0.0, 0.3 + 0.8j)),
}


def _bits(values) -> list:
    return [None if v is None else np.asarray(v).tobytes() for v in values]


@pytest.mark.parametrize("case", sorted(CALLS))
def test_results_have_the_same_bits_for_1_2_and_4_threads(llvm, interp, threads,
                                                          pool_runs, case):
    name, args = CALLS[case](*_data())
    expected = getattr(interp, name)(*[np.copy(a) for a in args])
    seen = []
    for count in (1, 2, 4):
        threads(count)
        got = getattr(llvm, name)(*[np.copy(a) for a in args])
        seen.append(_bits(got))
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    assert seen[0] == seen[1] == seen[2]
    assert pool_runs == [0, 0]      # 2 and 4 threads: the pool ran the blocks


@pytest.mark.parametrize("case", sorted(GRADIENTS))
def test_gradients_have_the_same_bits_for_1_2_and_4_threads(llvm, interp, threads,
                                                            pool_runs, case):
    name, args = GRADIENTS[case](*_data())
    expected = rlang.gradient(getattr(interp, name), args, loss="s")
    seen = []
    for count in (1, 2, 4):
        threads(count)
        got = rlang.gradient(getattr(llvm, name), args, loss="s")
        assert_same_gradients(got, expected, case, rtol=1e-11)
        seen.append(_bits(got))
    assert seen[0] == seen[1] == seen[2]
    assert pool_runs and all(status == 0 for status in pool_runs)


def test_hessian_vector_products_have_the_same_bits(llvm, interp, threads):
    x, w, _, _ = _data()
    args, vector = (0.0, x, w, 1.3), (0.0, np.cos(x), np.ones(3), 0.5)
    expected = rlang.hvp(interp.light_total, args, vector, loss="s")
    seen = []
    for count in (1, 2, 4):
        threads(count)
        got = rlang.hvp(llvm.light_total, args, vector, loss="s")
        assert_same_gradients(got, expected, "hvp", rtol=1e-10)
        seen.append(_bits(got))
    assert seen[0] == seen[1] == seen[2]


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("name", ["checked", "via_callee"])
def test_a_failing_pass_is_the_interpreters_error_with_its_arrays(llvm, interp, threads,
                                                                 pool_runs, count, name):
    threads(count)
    x = np.ones(N)
    x[2222] = 1.5
    errors, arrays = [], []
    for m in (interp, llvm):
        y = np.zeros(N)
        with pytest.raises(rlang.RlangError) as caught:
            getattr(m, name)(y, x)
        errors.append(caught.value)
        arrays.append(y)
    assert_same_error(errors[1], errors[0])
    assert errors[1].render() == errors[0].render()     # frames with their variables
    np.testing.assert_array_equal(arrays[1], arrays[0])
    assert pool_runs == ([1] if count > 1 else [])      # the pool declined: run again


def test_an_index_out_of_range_in_the_last_block(llvm, interp, threads, pool_runs):
    threads(2)
    x = np.arange(N, dtype=float)
    errors = []
    for m in (interp, llvm):
        y = np.zeros(N)
        with pytest.raises(rlang.RlangError) as caught:
            m.out_of_range(y, x, N)
        errors.append(caught.value)
        assert np.all(y == 3.0 * x)     # every pass before the failing one ran
    assert_same_error(errors[1], errors[0])
    assert pool_runs == [1]


def test_the_same_gradient_when_a_checked_loop_fails_on_threads(llvm, threads):
    threads(4)
    x = np.ones(N)
    x[10] = 3.0
    with pytest.raises(rlang.RlangError, match="deallocat"):
        rlang.gradient(llvm.checked, (np.zeros(N), x), loss="y[0]")


def test_loops_that_print_run_inline(llvm, threads, pool_runs, capsys):
    threads(4)
    x = np.linspace(0, 1, N)
    y = np.zeros(N)
    llvm.printing(y, x)
    assert capsys.readouterr().out == "first\n"
    np.testing.assert_array_equal(y, x)
    assert pool_runs == []


def test_independent_indirect_writes_run_on_threads_with_checks_off(threads, pool_runs):
    unchecked = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    checked = rlang.loads(SOURCE, backend="llvm")
    threads(2)
    x = np.linspace(0, 1, N)
    p = np.random.default_rng(1).permutation(N)
    y0, y1 = np.zeros(N), np.zeros(N)
    unchecked.scatter(y0, x, p)
    assert pool_runs == [0]         # the user's promise: passes independent
    checked.scatter(y1, x, p)       # checked: the shared-write check needs order
    assert pool_runs == [0]
    np.testing.assert_array_equal(y0, y1)
    np.testing.assert_array_equal(y0[p], x)


def test_a_python_failure_in_a_loop_without_checks_finishes_the_other_blocks(
        threads, monkeypatch):
    """Nothing to put back (no check, no sum): the blocks that did not run are run,
    and no pass runs twice."""
    m = rlang.loads("""
function add(y: f64[:], x: f64[:])
    @inbounds @parallel for i = 0:length(x) - 1
        y[i] += x[i]
    end
end
""", backend="llvm", invcheck=False)
    original, refused = runtime.ThreadedLoops._block, []

    def once(self, *args):
        if args[-2] == 1 and not refused:       # block 1's Python part fails, once
            refused.append(1)
            raise MemoryError
        return original(self, *args)

    monkeypatch.setattr(runtime.ThreadedLoops, "_block", once)
    threads(2)
    x = np.linspace(0.0, 1.0, N)
    y, _ = m.add(np.zeros(N), x)
    assert refused == [1]
    np.testing.assert_array_equal(y, x)


def test_shared_writes_are_still_found_with_threads(threads):
    threads(4)
    m = rlang.loads(SOURCE, backend="llvm")
    i = rlang.loads(SOURCE, backend="interp")
    x = np.linspace(0, 1, N)
    p = np.arange(N)
    p[7] = 5
    errors = []
    for module in (i, m):
        with pytest.raises(rlang.RlangError) as caught:
            module.scatter(np.zeros(N), x, p)
        errors.append(caught.value)
    assert_same_error(errors[1], errors[0])
    assert "iterations i = 5 and i = 7" in str(errors[1])


def test_vmap_items_give_their_loops_no_threads_of_their_own(llvm, threads, pool_runs):
    threads(2)
    xs = np.random.default_rng(3).uniform(-1, 1, (600, 8))
    ys = np.zeros((600, 8))
    batched = rlang.vmap(llvm.heavy, in_axes=(0, 0, None))(ys, xs, 0.7)
    assert pool_runs == []          # 600 items on 2 threads: the items are the blocks
    for k in (0, 599):
        np.testing.assert_array_equal(batched[0][k], llvm.heavy(np.zeros(8), xs[k], 0.7)[0])


# ----------------------------------------------------------------------- plans
def _module(name: str, args: tuple, derivative: str = ""):
    from rlang.ad.derivatives import derivative_ir
    from rlang.ir.passes import run_passes
    from rlang.lower.statements import lower

    unit = rlang.loads(SOURCE, backend="interp").unit
    types = tuple(type_of_value(a) for a in args)
    if not derivative:
        return run_passes(lower(unit, name, types, False, True)), frozenset()
    module, shared = derivative_ir(lambda backward: lower(unit, name, types, backward, True),
                                   derivative)
    return run_passes(module), shared


def _roles(name, args, derivative=""):
    module, shared = _module(name, args, derivative)
    _, found = plans.plan_blocks(module, shared)
    return sorted((plan.owner.split("__")[0], sorted(a.role for a in plan.threaded.arguments))
                  for plan in found.values())


def test_which_loops_are_planned_and_the_roles_of_their_variables():
    x = np.zeros(4)
    assert _roles("light", (x, x, np.zeros(3), 1.0)) == \
        [("rev_light", ["read", "read", "read", "written"])]
    assert _roles("printing", (x, x)) == []
    assert _roles("scatter", (x, x, np.zeros(4, dtype=np.int64))) == []     # checked
    gradient = _roles("light", (x, x, np.zeros(3), 1.0), "grad")
    # the gradients of w and c are summed privately; ȳ, x̄ are each pass's own
    assert [roles.count("private") for _, roles in gradient] == [2]
    # P̄ passed whole to the callee's gradient, written there only in row i: its own
    P = np.zeros((4, 2))
    assert [roles.count("private") for _, roles in _roles("via_row", (x, P), "grad")] == [0]
    assert [roles.count("private") for _, roles in _roles("via_corner", (x, P), "grad")] == [1]


@pytest.mark.parametrize("name", ["via_row", "via_corner"])
def test_gradients_through_whole_arrays_passed_to_callees(interp, llvm, threads, name):
    P = np.random.default_rng(5).uniform(-1, 1, (N, 2))
    args = (np.zeros(N), P)
    expected = rlang.gradient(getattr(interp, name), args, loss="y[7]")
    seen = []
    for count in (1, 2):
        threads(count)
        got = rlang.gradient(getattr(llvm, name), args, loss="y[7]")
        assert_same_gradients(got, expected, name)
        seen.append(_bits(got))
    assert seen[0] == seen[1]


def test_the_blocks_depend_on_the_pass_count_only():
    assert plans.block_count(1, True) == 1
    assert plans.block_count(10, True) == 10
    assert plans.block_count(10 ** 6, True) == plans.MAX_BLOCKS
    assert plans.block_count(511, False) == 1
    assert plans.block_count(512, False) == 2
    assert plans.block_count(1000, True, summed=1000) == 15   # sums of 1000 elements
    assert plans.block_count(1000, True, summed=10 ** 6) == 0
    for count, blocks in [(10, 3), (1000, 64), (65, 64)]:
        starts = [plans.block_start(b, count, blocks) for b in range(blocks + 1)]
        assert starts[0] == 0 and starts[-1] == count
        sizes = np.diff(starts)
        assert sizes.min() >= 1 and sizes.max() - sizes.min() <= 1


def test_ir_types_of_private_sums_are_c_ordered():
    t = ir.ArrayType("f64", 2)
    assert plans.private_type(t) == ir.ArrayType("f64", 2, unit_stride=True)
    assert plans.private_type("complex") == "complex"


# ------------------------------------------------------------ generated loops
from hypothesis import HealthCheck, given, settings           # noqa: E402
from hypothesis import strategies as st                       # noqa: E402

_TERMS = ["x[i]", "w[0]", "w[i % 4]", "c", "1.5", "(i * 0.001)"]


@st.composite
def _expressions(draw, depth: int = 2):
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(_TERMS))
    left, right = draw(_expressions(depth - 1)), draw(_expressions(depth - 1))
    form = draw(st.sampled_from(["({} + {})", "({} - {})", "({} * {})", "sin({} * {})",
                                 "cos({} + {})"]))
    return form.format(left, right)


@st.composite
def _statements(draw):
    e, f = draw(_expressions()), draw(_expressions())
    kind = draw(st.sampled_from(["update", "loop", "routine"]))
    if kind == "update":
        return [f"y[i] {draw(st.sampled_from(['+=', '-=']))} {e}"]
    if kind == "loop":
        return [f"for j = 0:{draw(st.integers(0, 5))}",
                f"    y[i] += w[j % 4] * {e}", "end"]
    return ["@routine begin", "    t ← 0.0", f"    t += {e}", "end",
            f"y[i] += t * {f}", "~@routine"]


@st.composite
def _loops(draw):
    body = [line for _ in range(draw(st.integers(1, 3))) for line in draw(_statements())]
    source = "\n".join(
        ["function kernel(y: f64[:], x: f64[:], w: f64[:], c)",
         "    @parallel for i = 0:length(x) - 1", *("        " + line for line in body),
         "    end", "end", "",
         "function total(s, x: f64[:], w: f64[:], c)",
         "    y ← zeros(f64, length(x))", "    kernel(y, x, w, c)",
         "    for i = 0:length(x) - 1", "        s += y[i] * y[i]", "    end",
         "    ~kernel(y, x, w, c)", "    y → zeros(f64, length(x))", "end"])
    return source, draw(st.sampled_from([0, 1, 7, 300, 700, 1500]))


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_loops())
def test_generated_parallel_loops_agree_with_the_interpreter_on_any_thread_count(
        threads, case):
    source, n = case
    _agree_on_one_and_three_threads(threads, source, n, invcheck=True)


def _agree_on_one_and_three_threads(threads, source: str, n: int, invcheck: bool) -> None:
    """`total`'s gradient and `kernel`'s results on llvm agree with the interpreter's
    on 1 and 3 threads, with the same bits on both counts."""
    llvm = rlang.loads(source, backend="llvm", invcheck=invcheck)
    interp = rlang.loads(source, backend="interp", invcheck=invcheck)
    rng = np.random.default_rng(n)
    args = (0.0, rng.uniform(-1, 1, n), rng.uniform(-1, 1, 4), 0.4)
    expected = rlang.gradient(interp.total, args, loss="s")
    y = interp.kernel(np.zeros(n), *args[1:])[0]
    seen = []
    for count in (1, 3):
        threads(count)
        got = rlang.gradient(llvm.total, args, loss="s")
        assert_same_gradients(got, expected, source, rtol=1e-9)
        out = llvm.kernel(np.zeros(n), *args[1:])[0]
        np.testing.assert_allclose(out, y, rtol=1e-12, atol=1e-12)
        seen.append(_bits(got) + _bits([out]))
    assert seen[0] == seen[1]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_loops())
def test_generated_laned_loops_agree_with_the_interpreter_on_any_thread_count(
        threads, case):
    """The same loops with nothing checked (`@inbounds`, invcheck off): those with a
    loop inside run their passes in lanes (Note [Iterations in lanes],
    rlang/ir/iteration_lanes.py); the forward keeps the interpreter's bits."""
    source, n = case
    lines = source.split("\n")
    start = lines.index("    @parallel for i = 0:length(x) - 1") + 1
    stop = lines.index("    end", start)
    source = "\n".join(lines[:start] + ["        @inbounds begin"] +
                       ["    " + line for line in lines[start:stop]] + ["        end"] +
                       lines[stop:])
    _agree_on_one_and_three_threads(threads, source, n, invcheck=False)
