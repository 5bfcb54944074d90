"""Stacks on the llvm backend agree with the interpreter (issue #5).

`stack{T}` ancillas, parameters and Python arguments (`rlang.values.Stack`, updated
in place), PUSH and POP forward and inverse, for every scalar type; `main`'s store
(stacks as lists, bottom first); the run-time checks (POP from an empty stack,
POP into a nonzero view, a stack deallocated non-empty), with the interpreter's
class, message, span and call chain, and none of them with invcheck off except
the empty POP; gradients through stacks (a shadow stack beside each float stack)
within 1e-12 of the interpreter's, and Hessians through stack ancillas.  Memory:
error exits free the stacks, a failed growth is a clean error.
"""
from __future__ import annotations

import ctypes
import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rlang
from rlang.numbers import F32, I32, Fixed, ULog
from rlang.values import Stack

from gradient_agreement import assert_same_error, assert_same_gradients

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden"

#: Per element type: a value, an update that changes a zero view, another value.
TYPED = {
    "i64": ("5", "x += 2", "-3"), "i32": ("i32(5)", "x += i32(2)", "i32(-3)"),
    "f64": ("1.5", "x += 0.25", "-2.0"), "f32": ("f32(1.5)", "x += f32(0.25)", "f32(-2.0)"),
    "fixed": ("fixed(1.5)", "x += fixed(0.25)", "fixed(-2.0)"),
    "ulog": ("ulog(1.5)", "x *= 2.0", "ulog(3.0)"),
    "complex": ("1.0 + 2.0im", "x += 0.5im", "complex(-2.0, 1.0)"),
    "bool": ("true", "FLIP(x)", "false"),
}


def typed_source(t: str) -> str:
    """`keep` pushes two views and pops the second value into the first; `main`
    leaves a stack of two items in its store."""
    value, change, other = TYPED[t]
    return f"""
function keep(s: stack{{{t}}}, x: {t}, y: {t})
    PUSH(s, x)
    PUSH(s, y)
    POP(s, x)
end

function main()
    s ← stack({t})
    x ← {value}
    PUSH(s, x)
    {change}
    PUSH(s, x)
    y ← {other}
    PUSH(s, y)
    POP(s, y)
    n ← length(s)
end
"""


def both(source: str, invcheck: bool = True):
    return (rlang.loads(source, invcheck=invcheck),
            rlang.loads(source, backend="llvm", invcheck=invcheck))


def same(a, b) -> bool:
    """Equal values of the same type (floats within 1e-12; stacks item by item)."""
    if isinstance(a, Stack) or isinstance(b, Stack):
        return isinstance(a, Stack) and isinstance(b, Stack) and a.elem == b.elem and \
            len(a.items) == len(b.items) and all(map(same, a.items, b.items))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, ULog):
        return type(b) is ULog and (a.log == b.log or abs(a.log - b.log) <= 1e-12)
    if isinstance(a, (float, complex)):
        return type(a) is type(b) and (a == b or abs(a - b) <= 1e-12 * abs(b))
    return type(a) is type(b) and a == b


def run_main_both(source: str, invcheck: bool = True) -> list:
    """[(store, printed output)] of `main` on the interpreter, then on llvm."""
    outputs = []
    for module in both(source, invcheck):
        out = io.StringIO()
        with redirect_stdout(out):
            store = module.run_main()
        outputs.append((store, out.getvalue()))
    return outputs


def assert_same_store(source: str, invcheck: bool = True) -> list:
    (expected, expected_out), (got, got_out) = run_main_both(source, invcheck)
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (name, a), (_, b) in zip(got, expected):
        assert same(a, b), f"{name}: llvm {a!r}, interpreter {b!r}"
    assert got_out == expected_out
    return got


def errors_of(modules, call) -> list:
    errors = []
    for module in modules:
        with pytest.raises(rlang.RlangError) as info:
            call(module)
        errors.append(info.value)
    return errors


# --------------------------------------------------------------- forward, inverse

@pytest.mark.parametrize("t", list(TYPED))
def test_main_store_of_every_element_type(t):
    store = dict(assert_same_store(typed_source(t)))
    assert isinstance(store["s"], Stack) and store["s"].elem == t
    assert len(store["s"].items) == 2 and store["n"] == 2


SAMPLES = {"i64": (7, -4), "i32": (I32(7), I32(-4)), "f64": (0.1, -2.5),
           "f32": (F32(0.1), F32(-2.5)), "fixed": (Fixed.from_value(0.1), Fixed.from_value(-2.5)),
           "ulog": (ULog(0.3), ULog(-1.0)), "complex": (1 + 2j, -0.5j), "bool": (True, False)}


@pytest.mark.parametrize("t", list(TYPED))
def test_stack_arguments_forward_and_inverse(t):
    """A Stack argument is updated in place and returned, as by the interpreter; the
    inverse gives back the inputs."""
    a, b = SAMPLES[t]
    results = []
    for module in both(typed_source(t)):
        s = Stack(t, [b, a])
        out = module.keep(s, a, b)
        assert out[0] is s
        results.append([out[0].copy(), *out[1:]])
        back = (~module.keep)(*out)
        assert same(back[0], Stack(t, [b, a])) and same(back[1], a) and same(back[2], b)
    for got, expected in zip(results[1], results[0]):
        assert same(got, expected), (got, expected)


GOLDEN_OUTPUTS = ["stacks", "loops", "json_main"]


@pytest.mark.parametrize("name", GOLDEN_OUTPUTS)
def test_golden_programs_with_stacks(name):
    """`main`'s store agrees, and `rlang run --backend llvm` prints the golden output
    (stacks as lists from bottom to top, in text and in JSON)."""
    path = GOLDEN / "outputs" / f"{name}.rev"
    assert_same_store(path.read_text())
    first = path.read_text().split("\n", 1)[0]
    args = first[len("# args:"):].split() if first.startswith("# args:") else []
    done = subprocess.run([sys.executable, "-m", "rlang", "run", str(path), *args,
                           "--backend", "llvm"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (GOLDEN / "outputs" / f"{name}.out").read_text()


SHOW = """
function main()
    s ← stack(f64)
    x ← 2.5
    PUSH(s, x)
    y ← 4.0
    PUSH(s, y)
    @safe show(s, x, y)
    POP(s, x)
    c ← stack(complex)
    @safe print(c, s)
    z ← 1.0 + 2.0im
    PUSH(c, z)
    q ← stack(f32)
    w ← f32(0.1)
    PUSH(q, w)
    b ← stack(bool)
    t ← true
    PUSH(b, t)
    @safe show(c, q, b)
end
"""


def test_safe_print_and_show_of_stacks():
    assert_same_store(SHOW)
    (_, out), _ = run_main_both(SHOW)
    assert out.splitlines()[0] == "s = [2.5, 4.0], x = 0.0, y = 0.0"


CALLS = """
function fill(s: stack{f64}, x, n)
    for i = 1:n
        x += 0.5 * i
        PUSH(s, x)
    end
end

function grow(s, n)
    x ← 0.0
    fill(s, x, n)
    x → 0.0
end

function main()
    s ← stack(f64)
    grow(s, 1000)
    r ← stack(f64)
    grow(r, 0)
    n ← length(s)
end
"""


def test_stacks_passed_between_functions_grow_past_their_first_buffer():
    store = dict(assert_same_store(CALLS))
    assert store["n"] == 1000 and store["s"].items[-1] == 500.0 and store["r"].items == []
    for module in both(CALLS):
        s = Stack("f64", [9.0])
        out = module.grow(s, 40)
        assert len(out[0].items) == 41 and out[0].items[:2] == [9.0, 0.5]
        back = (~module.grow)(s, 40)
        assert back[0].items == [9.0]


# ------------------------------------------------------------------------ errors

@pytest.mark.parametrize("path", sorted((GOLDEN / "errors").glob("*pop*.rev")),
                         ids=lambda p: p.stem)
def test_golden_pop_errors(path):
    source = path.read_text()
    errors = []
    for module in (rlang.loads(source, file=str(path)),
                   rlang.loads(source, backend="llvm", file=str(path))):
        with pytest.raises(rlang.RlangError) as info:
            module.run_main()
        errors.append(info.value)
    assert_same_error(errors[1], errors[0])


CHECKS = """
function pop_into(s: stack{T}, x: T)
    POP(s, x)
end

function push_from(s: stack{T}, x: T)
    PUSH(s, x)
end

function nested(s: stack{T}, x: T)
    ~push_from(s, x)
end

function left(x: T, k)
    s ← stack(T)
    for i = 1:k
        PUSH(s, x)
        x += one(T)
    end
    s → stack(T)
end
"""


def checks_source(t: str) -> str:
    source = CHECKS.replace("T", t)
    return source.replace("x += one(ulog)", "x *= 2.0") if t == "ulog" else source


@pytest.mark.parametrize("t", ["i64", "i32", "f64", "f32", "fixed", "complex"])
@pytest.mark.parametrize("k", [1, 3, 8, 9, 40])
def test_stack_deallocated_non_empty(t, k):
    """The message shows the items (up to 8, then how many), as the interpreter's."""
    a = SAMPLES[t][0]
    got, expected = errors_of(both(checks_source(t))[::-1], lambda m: m.left(a, k))
    assert_same_error(got, expected)
    assert "deallocation check failed: s = [" in got.message


@pytest.mark.parametrize("t", list(TYPED))
def test_pop_into_a_nonzero_view(t):
    a, b = SAMPLES[t]                       # a is not zero
    got, expected = errors_of(both(checks_source(t))[::-1],
                              lambda m: m.pop_into(Stack(t, [b]), a))
    assert_same_error(got, expected)
    assert got.message.startswith("POP into `x` = ")


@pytest.mark.parametrize("invcheck", [True, False])
def test_pop_from_an_empty_stack_forward_and_backward(invcheck):
    """A ReversibilityError with the checks on, a RlangRuntimeError with them off —
    never a read before the buffer."""
    modules = both(checks_source("f64"), invcheck)
    for call in (lambda m: m.pop_into(Stack("f64"), 0.0),
                 lambda m: (~m.push_from)(Stack("f64"), 0.0),
                 lambda m: m.nested(Stack("f64"), 0.0)):
        got, expected = errors_of(modules[::-1], call)
        assert_same_error(got, expected)
        assert isinstance(got, rlang.ReversibilityError if invcheck else
                          rlang.RlangRuntimeError)


def test_with_invcheck_off_no_reversibility_check_runs():
    interp, llvm = both(checks_source("f64"), invcheck=False)
    for module in (interp, llvm):
        assert module.pop_into(Stack("f64", [1.5]), 2.0)[1] == 1.5      # overwritten
        assert module.left(0.5, 5) == (1.0, 5)                # left non-empty, freed


def test_type_errors_are_the_interpreters():
    source = """
function wrong_item(s: stack{f64}, n: i64)
    PUSH(s, n)
end

function not_a_stack(a: f64, b: f64)
    PUSH(a, b)
end
"""
    for name, args in (("wrong_item", [Stack("f64"), 3]), ("not_a_stack", [1.0, 2.0])):
        got, expected = errors_of(both(source)[::-1], lambda m: m[name](*args))
        assert type(got) is type(expected) and got.message == expected.message


def test_zeros_of_a_stack_is_the_interpreters_type_error():
    source = "function main()\n    @zeros stack{f64} s\nend\n"
    got, expected = errors_of(both(source)[::-1], lambda m: m.run_main())
    assert type(got) is type(expected) is rlang.RlangTypeError
    assert got.message == expected.message and got.span == expected.span


def test_stack_arguments_with_items_of_another_type_are_refused():
    """`Stack("f64", [1])` converts its items (docs/api.md "Stacks"); items put into
    `.items` afterwards are checked at the call."""
    llvm = rlang.loads(checks_source("f64"), backend="llvm")
    assert list(llvm.push_from(Stack("f64", [1]), 0.0)[0])[0] == 1.0
    stack = Stack("f64", [1.0])
    stack.items.append(1)
    with pytest.raises(rlang.RlangTypeError, match="cannot hold i64 items"):
        llvm.push_from(stack, 0.0)


# ------------------------------------------------------------------------ memory

def _in_use_bytes() -> int | None:
    """The bytes malloc has handed out and not got back (glibc), or None."""
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return None
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def test_failed_checks_free_the_stacks():
    """A check failing with large stacks allocated (in the failing function and in
    its callers) leaks none of their memory."""
    source = """
function inner(k)
    s ← stack(f64)
    x ← 1.0
    for i = 1:k
        PUSH(s, x)
        x += 1.0
    end
    a ← zeros(f64, 1000)
    POP(s, x)
    a → zeros(f64, 1000)
    s → stack(f64)
    x → 1.0
end

function outer(k)
    big ← stack(i64)
    n ← 7
    for i = 1:k
        PUSH(big, n)
        n += 7
    end
    inner(k)
    n → 7
    big → stack(i64)
end
"""
    llvm = rlang.loads(source, backend="llvm")
    with pytest.raises(rlang.ReversibilityError):
        llvm.outer(1000)
    before = _in_use_bytes()
    if before is None:
        pytest.skip("needs glibc's mallinfo2")
    for _ in range(200):
        with pytest.raises(rlang.ReversibilityError):
            llvm.outer(100_000)
    assert _in_use_bytes() - before < 4_000_000     # 200 leaks would be ~2.5 GB


def test_a_failed_growth_is_a_clean_error():
    """A stack whose buffer cannot double (here: a capacity near 2^61 items) fails
    with a RlangRuntimeError instead of writing past its buffer."""
    from rlang.backends import abi
    from rlang.backends.errors import error_from_context
    from rlang.ir.nodes import symbol_of
    from rlang.ir import nodes as ir

    llvm = rlang.loads(checks_source("f64"), backend="llvm")
    types = (ir.StackType("f64"), "f64")
    native = llvm.compiled.native("push_from", types, False)
    ctx = (ctypes.c_int64 * abi.CTX_WORDS)()
    ctx[abi.CTX_MAX_DEPTH] = 100
    stack = (ctypes.c_int64 * 3)(0, 1 << 61, 1 << 61)        # full, and never read
    x = ctypes.c_double(2.5)
    args = (ctypes.c_void_p * 2)(ctypes.addressof(stack), ctypes.addressof(x))
    status = native.function(symbol_of("push_from", types, False))(
        ctypes.addressof(ctx), ctypes.addressof(args))
    assert status == 1 and stack[1] == 1 << 61 and x.value == 2.5
    error = error_from_context(list(ctx), native.sites, 100)
    assert isinstance(error, rlang.RlangRuntimeError)
    assert "out of memory growing the stack `s`" in error.message


# --------------------------------------------------------------------- gradients

GRADIENTS = """
function history!(y!, x, w, n)
    s ← stack(f64)
    h ← 0.0
    h += x
    for i = 1:n
        hn ← 0.0
        hn += tanh(w * h) + 0.1 * i
        PUSH(s, h)
        SWAP(h, hn)
        hn → 0.0
    end
    y! += h * h
    t ← 0.0
    for i = n:-1:1
        POP(s, t)
        y! += w * t * i
        PUSH(s, t)
    end
    t → 0.0
    for i = n:-1:1
        hn ← 0.0
        SWAP(h, hn)
        POP(s, h)
        hn -= tanh(w * h) + 0.1 * i
        hn → 0.0
    end
    h -= x
    h → 0.0
    s → stack(f64)
end

function through_call!(y!, s: stack{f64}, x)
    t ← 0.0
    t += x * x
    PUSH(s, t)
    history!(y!, x, x, 3)
    POP(s, t)
    y! += sin(t)
    t -= x * x
    t → 0.0
end

function kinds!(y!: f64, q: fixed, l: ulog, z: complex, a: f32)
    sq ← stack(fixed)
    sl ← stack(ulog)
    sz ← stack(complex)
    sa ← stack(f32)
    PUSH(sq, q)
    PUSH(sl, l)
    PUSH(sz, z)
    PUSH(sa, a)
    POP(sa, a)
    POP(sz, z)
    POP(sl, l)
    POP(sq, q)
    y! += f64(q) * f64(l) + real(z) * imag(z) + f64(a) * f64(a)
    sq → stack(fixed)
    sl → stack(ulog)
    sz → stack(complex)
    sa → stack(f32)
end
"""

GRADIENT_CASES = [
    ("history!", lambda: [0.0, 0.3, 0.8, 5], "y!"),
    ("through_call!", lambda: [0.0, Stack("f64", [1.0, 2.0]), 0.4], "y!"),
    ("kinds!", lambda: [0.0, Fixed.from_value(0.75), ULog(0.2), 1.5 - 0.5j, F32(0.25)], "y!"),
]


@pytest.mark.parametrize("name, args, loss", GRADIENT_CASES,
                         ids=[case[0] for case in GRADIENT_CASES])
def test_gradients_agree(name, args, loss):
    interp, llvm = both(GRADIENTS)
    expected = rlang.gradient(interp[name], args(), loss)
    got = rlang.gradient(llvm[name], args(), loss)
    assert_same_gradients(*(tuple(_pairs(g) for g in grads) for grads in (got, expected)),
                          name)
    for module in (interp, llvm):        # the forward results agree too
        assert all(map(same, module[name](*args()), interp[name](*args())))


def _pairs(gradient):
    """A complex gradient as its pair [∂/∂re, ∂/∂im]; others as they are."""
    return [gradient.real, gradient.imag] if isinstance(gradient, complex) else gradient


def test_hessians_through_stack_ancillas_agree():
    interp, llvm = both(GRADIENTS)
    args = [0.0, 0.3, 0.8, 4]
    np.testing.assert_allclose(rlang.hessian(llvm["history!"], args, "y!"),
                               rlang.hessian(interp["history!"], args, "y!"),
                               rtol=1e-12, atol=1e-12)


def test_hessians_with_stack_arguments_agree():
    interp, llvm = both(GRADIENTS)
    stack = Stack("f64", [1.0])
    got = rlang.hessian(llvm["through_call!"], [0.0, stack, 0.4], "y!")
    np.testing.assert_allclose(
        got, rlang.hessian(interp["through_call!"], [0.0, Stack("f64", [1.0]), 0.4], "y!"),
        rtol=1e-12, atol=1e-12)
    assert stack == Stack("f64", [1.0])         # the caller's stack is not touched


def test_stack_rnn_from_the_jax_comparisons():
    path = REPO / "tests" / "jax" / "programs" / "stack_rnn.rev"
    interp, llvm = rlang.load(path), rlang.load(path, backend="llvm")
    rng = np.random.default_rng(3)
    u, g = rng.normal(size=30), rng.normal(size=30)

    def args():
        return [0.0, 0.7, 0.1, 0.2, u.copy(), g.copy()]

    assert same(llvm.stack_rnn_(*args())[0], interp.stack_rnn_(*args())[0])
    assert_same_gradients(rlang.gradient(llvm.stack_rnn_, args(), "loss!"),
                          rlang.gradient(interp.stack_rnn_, args(), "loss!"), "stack_rnn")


# ------------------------------------------------- generated programs with stacks

TERMS = ["a", "b", "c", "sin(a)", "a * b", "exp(0.3 * c)", "tanh(b - c)", "a * a",
         "cos(b) * c", "1.5"]


@st.composite
def stack_programs(draw) -> str:
    """`f(y!, a, b, c)`: a `@routine` pushes values computed from a, b, c onto two
    stacks (their ancillas uncomputed as they go); the middle pops items, adds
    products of them into y! and pushes them back (sometimes in another order or
    onto the other stack); `~@routine` pops everything back and uncomputes it."""
    def expr():
        left, right = draw(st.sampled_from(TERMS)), draw(st.sampled_from(TERMS))
        return f"{left} {draw(st.sampled_from(['+', '-', '*']))} {right}"

    pushes, depth = [], [0, 0]
    for k in range(draw(st.integers(1, 6))):
        which = draw(st.integers(0, 1))
        value = expr()
        pushes += [f"t{k} ← 0.0", f"t{k} += {value}", f"PUSH(s{which}, t{k})",
                   f"t{k} → 0.0"]
        depth[which] += 1
    middle = []
    for k in range(draw(st.integers(1, 6))):
        which = draw(st.integers(0, 1))
        if depth[which] == 0:
            continue
        if depth[which] >= 2 and draw(st.booleans()):    # read the top two
            middle += ["u ← 0.0", "v ← 0.0", f"POP(s{which}, u)", f"POP(s{which}, v)",
                       f"y! += u * v + {expr()} * u", f"PUSH(s{which}, v)",
                       f"PUSH(s{which}, u)", "v → 0.0", "u → 0.0"]
        else:                                           # move the top to the other
            other = 1 - which
            middle += ["u ← 0.0", f"POP(s{which}, u)", f"y! += u * ({expr()})",
                       f"PUSH(s{other}, u)", f"POP(s{other}, u)", f"y! += sin(u)",
                       f"PUSH(s{which}, u)", "u → 0.0"]
    body = ["@routine begin", "    s0 ← stack(f64)", "    s1 ← stack(f64)",
            *("    " + line for line in pushes), "end", *middle, "~@routine"]
    return "function f(y!, a, b, c)\n" + "".join(f"    {line}\n" for line in body) + "end\n"


@pytest.mark.parametrize("invcheck", [True, False], ids=["invcheck", "invcheck-off"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=stack_programs(), inputs=st.lists(st.floats(-1.0, 1.0), min_size=3,
                                                max_size=3))
def test_generated_stack_programs_gradients_agree(invcheck, source, inputs):
    # with invcheck off the IR passes drop pops and pushes nobody reads (Note [Stacks
    # nobody reads], rlang/ir/prune.py)
    interp, llvm = both(source, invcheck)
    args = [0.25, *inputs]
    assert all(map(same, llvm.f(*args), interp.f(*args))), source
    assert_same_gradients(rlang.gradient(llvm.f, args, "y!"),
                          rlang.gradient(interp.f, args, "y!"), source)


STACKS_NOBODY_READS = """
function recs!(y!: f64, x: f64[:])
    s ← stack(f64)
    @inbounds for i = 0:length(x) - 1
        @routine begin
            t ← 0.0
            t += x[i] * 2.0
            PUSH(s, t)
            t += x[i]
        end
        y! += t * t
        ~@routine
    end
    s → stack(f64)
end

function measured!(y!: f64, n!: i64, x: f64[:])
    s ← stack(f64)
    @inbounds for i = 0:length(x) - 1
        t ← x[i]
        PUSH(s, t)
        t → 0.0
    end
    n! += length(s)
    @inbounds for i = length(x) - 1:-1:0
        t ← 0.0
        POP(s, t)
        y! += t * t
        PUSH(s, t)
        t → 0.0
    end
    @inbounds for i = length(x) - 1:-1:0
        t ← 0.0
        POP(s, t)
        t -= x[i]
        t → 0.0
    end
    s → stack(f64)
end

function records!(y!: i64, x: i64[:])
    s ← stack(i64)
    @inbounds for i = 0:length(x) - 1
        @routine begin
            j ← 0
            if (x[i] > 3, j == i + 1)
                PUSH(s, j)
                j += i + 1
            end
        end
        y! += j * 2
        ~@routine
    end
    s → stack(i64)
end
"""


@pytest.mark.parametrize("invcheck", [True, False], ids=["invcheck", "invcheck-off"])
def test_stacks_nobody_reads_keep_the_values_they_zero(invcheck):
    """Pushes whose stacks nobody reads later leave their zeros; a stack whose length
    is read keeps its pushes (Note [Stacks nobody reads])."""
    interp, llvm = both(STACKS_NOBODY_READS, invcheck)
    x, xi = np.array([1.5, -2.0, 0.25, 3.0]), np.array([1, 5, 7, 2, 9])
    for name, args, loss, argnums in (("recs!", (0.0, x), "y!", 1),
                                      ("measured!", (0.0, 0, x), "y!", 2)):
        assert all(map(same, llvm[name](*_copies(args)), interp[name](*_copies(args))))
        assert_same_gradients(rlang.grad(llvm[name], loss, argnums=argnums)(*_copies(args)),
                              rlang.grad(interp[name], loss, argnums=argnums)(*_copies(args)))
    assert llvm["measured!"](0.0, 0, x.copy())[1] == 4
    assert llvm["records!"](0, xi.copy())[0] == interp["records!"](0, xi.copy())[0] == 20


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("t, start, step", [("i32", "zero(i32)", "v += i32(3)"),
                                            ("f32", "zero(f32)", "v += f32(1.5)"),
                                            ("bool", "false", "v ^= true"),
                                            ("fixed", "zero(fixed)", "v += fixed(0.5)")])
def test_a_push_nobody_reads_leaves_the_zero_of_its_type(t, start, step):
    # types with a plain zero constant take the swap; fixed keeps its push
    source = f"""
function f!(y!: i64, n: i64)
    s ← stack({t})
    for i = 0:n - 1
        @routine begin
            v ← {start}
            {step}
            PUSH(s, v)
        end
        if v == {start}
            y! += 1
        end
        ~@routine
    end
    s → stack({t})
end
"""
    for invcheck in (True, False):
        interp, llvm = both(source, invcheck)
        assert llvm["f!"](0, 5)[0] == interp["f!"](0, 5)[0] == 5
