"""The interpreter (rlang/interp/interpreter.py and its helpers): every statement of LANGUAGE.md §6
run forward and backward (`~m.f`), the run-time checks of §6, recursion and the call
depth limit, `include`/`const`, main's store, and the call chain that errors carry.

Programs are run through the public API (`rlang.loads`); the first line of a
program's source is line 1.
"""
from __future__ import annotations

import math
import re
import textwrap

import numpy as np
import pytest

import rlang
from rlang.errors import ReversibilityError, RlangRuntimeError
from rlang.values import Stack

I64_MAX = (1 << 63) - 1
I64_MIN = -(1 << 63)


def load(source: str, **kwargs) -> rlang.Module:
    return rlang.loads(textwrap.dedent(source).lstrip("\n"), **kwargs)


def store(source: str) -> dict:
    """main's store, as a dict (insertion order = allocation order)."""
    return dict(load(source).run_main())


def there_and_back(m, name, *args):
    """Run `name` forward, then its inverse on the results; return both results."""
    forward = m[name](*args)
    back = (~m[name])(*forward)
    return forward, back


# ------------------------------------------------------------------ updates

INT_UPDATES = load("""
    function add(x!, y)
        x! += y * 3
    end
    function sub(x!, y)
        x! -= y
    end
    function xor(x!, y)
        x! ^= y
    end
""")


@pytest.mark.parametrize("name, args, result", [
    ("add", (2, 5), (17, 5)),
    ("add", (-2, -5), (-17, -5)),
    ("sub", (2, 5), (-3, 5)),
    ("xor", (0b1100, 0b1010), (0b0110, 0b1010)),
    ("xor", (True, True), (False, True)),
    ("xor", (False, True), (True, True)),
    ("xor", (True, False), (True, False)),
])
def test_integer_and_bool_updates_forward_and_backward(name, args, result):
    forward, back = there_and_back(INT_UPDATES, name, *args)
    assert forward == result
    assert [type(v) for v in forward] == [type(v) for v in args]
    assert back == args
    assert [type(v) for v in back] == [type(v) for v in args]


@pytest.mark.parametrize("name, args, result", [
    ("add", (I64_MAX, 1), (I64_MIN + 2, 1)),          # MAX + 3 wraps
    ("sub", (I64_MIN, 1), (I64_MAX, 1)),
    ("add", (I64_MIN, -1), (I64_MAX - 2, -1)),
    ("sub", (0, I64_MIN), (I64_MIN, I64_MIN)),         # 0 - MIN = MIN in i64
])
def test_integer_updates_wrap_at_2_to_the_63(name, args, result):
    forward, back = there_and_back(INT_UPDATES, name, *args)
    assert forward == result
    assert back == args


def test_float_updates_forward_and_backward():
    m = load("""
        function f(x!: f64, y: f64)
            x! += y * 2.5
            x! -= 0.5
        end
    """)
    assert m.f(1.0, 2.0) == (5.5, 2.0)
    assert (~m.f)(5.5, 2.0) == (1.0, 2.0)
    x, y = m.f(0.1, 0.2)
    assert isinstance(x, float) and x == pytest.approx(0.1 + 0.5 - 0.5)
    back = (~m.f)(x, y)
    assert back[0] == pytest.approx(0.1, abs=1e-15)


def test_an_integer_argument_of_a_float_update_is_promoted():
    m = load("""
        function f(x!, k)
            x! += k * 0.5
        end
    """)
    assert m.f(1.0, 3) == (2.5, 3)


def test_updating_an_integer_with_a_float_is_a_type_error():
    m = load("""
        function f(x!)
            x! += 1.5
        end
    """)
    with pytest.raises(rlang.RlangTypeError, match="f64"):
        m.f(1)


def test_xor_update_on_a_float_is_refused():
    with pytest.raises(rlang.RlangError, match=r"\^="):
        load("""
            function f(x!: f64)
                x! ^= 1
            end
        """)


def test_elements_of_1d_2d_3d_arrays_are_updated_in_place_and_restored():
    m = load("""
        function f(v!: f64[:], m!: f64[:,:], t!: i64[:,:,:], k)
            v![k] += 1.5
            m![1, k] -= 2.0
            t![1, 2, k] += 7
            t![0, 0, 0] ^= 5
        end
    """)
    v = np.arange(3.0)
    mat = np.arange(6.0).reshape(2, 3)
    t = np.arange(24).reshape(2, 3, 4)
    v0, m0, t0 = v.copy(), mat.copy(), t.copy()
    out = m.f(v, mat, t, 2)
    assert out[0] is v and out[1] is mat and out[2] is t
    assert out[3] == 2
    assert v.tolist() == [0.0, 1.0, 3.5]
    assert mat.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 3.0]]
    expected = t0.copy()
    expected[1, 2, 2] += 7
    expected[0, 0, 0] ^= 5
    assert np.array_equal(t, expected)
    # every other element is untouched
    assert (t != t0).sum() == 2
    back = (~m.f)(v, mat, t, 2)
    assert back[0] is v
    assert np.array_equal(v, v0) and np.array_equal(mat, m0) and np.array_equal(t, t0)


def test_elements_of_bool_and_complex_arrays():
    m = load("""
        function f(b!: bool[:], z!: complex[:], i)
            b![i] ^= true
            z![i] += 1.0im
            FLIP(b![0])
            NEG(z![0])
        end
    """)
    b, z = np.array([False, False, True]), np.array([1 + 1j, 2 + 0j])
    m.f(b, z, 1)
    assert b.tolist() == [True, True, True]
    assert z.tolist() == [-1 - 1j, 2 + 1j]
    (~m.f)(b, z, 1)
    assert b.tolist() == [False, False, True]
    assert z.tolist() == [1 + 1j, 2 + 0j]


def test_complex_field_updates():
    m = load("""
        function f(z!: complex, x: f64)
            z!.re += x
            z!.im -= 2.0 * x
        end
    """)
    assert m.f(1 + 2j, 0.5) == (1.5 + 1j, 0.5)
    assert (~m.f)(1.5 + 1j, 0.5) == (1 + 2j, 0.5)


def test_the_logplus_example_of_the_spec():
    m = load("""
        function logplus(y!: complex, x: complex)
            @routine begin
                n ← 0.0
                n += abs(x)
            end
            y!.re += log(n)
            y!.im += angle(x)
            ~@routine
        end
    """)
    x = 3 + 4j
    y, x_out = m.logplus(1 + 1j, x)
    assert x_out == x
    assert y == pytest.approx(1 + 1j + complex(math.log(5.0), math.atan2(4.0, 3.0)))
    assert (~m.logplus)(y, x)[0] == pytest.approx(1 + 1j)


def test_complex_updates_and_conj():
    m = load("""
        function f(z!: complex, w: complex)
            z! += w * 2.0
            CONJ(z!)
        end
    """)
    assert m.f(1 + 2j, 1j) == (1 - 4j, 1j)
    assert (~m.f)(1 - 4j, 1j) == (1 + 2j, 1j)


# ------------------------------------------------------------- instructions

INSTRUCTIONS = load("""
    function swap(a!, b!)
        SWAP(a!, b!)
    end
    function swap_arrow(a!, b!)
        a! <=> b!
    end
    function swap_unicode(a!, b!)
        a! ↔ b!
    end
    function swap_elements(a!: f64[:], i, j)
        SWAP(a![i], a![j])
    end
    function swap_2d(m!: i64[:,:])
        SWAP(m![0, 1], m![1, 0])
    end
    function swap_arrays(a!: f64[:], b!: f64[:])
        SWAP(a!, b!)
    end
    function neg(x!)
        NEG(x!)
    end
    function inc(x!)
        INC(x!)
    end
    function dec(x!)
        DEC(x!)
    end
    function flip(b!)
        FLIP(b!)
    end
    function rot(a!, b!, θ)
        ROT(a!, b!, θ)
    end
    function irot(a!, b!, θ)
        IROT(a!, b!, θ)
    end
    function hadamard(a!, b!)
        HADAMARD(a!, b!)
    end
""")


@pytest.mark.parametrize("name", ["swap", "swap_arrow", "swap_unicode"])
@pytest.mark.parametrize("a, b", [(1, 2), (1.5, -2.5), (True, False)])
def test_swap_scalars(name, a, b):
    forward, back = there_and_back(INSTRUCTIONS, name, a, b)
    assert forward == (b, a)
    assert back == (a, b)


def test_swap_elements_of_1d_and_2d_arrays():
    a = np.array([1.0, 2.0, 3.0])
    out = INSTRUCTIONS.swap_elements(a, 0, 2)
    assert out[0] is a and a.tolist() == [3.0, 2.0, 1.0]
    (~INSTRUCTIONS.swap_elements)(a, 0, 2)
    assert a.tolist() == [1.0, 2.0, 3.0]
    m = np.array([[1, 2], [3, 4]])
    INSTRUCTIONS.swap_2d(m)
    assert m.tolist() == [[1, 3], [2, 4]]


def test_swap_whole_arrays_swaps_their_contents_in_place():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    out = INSTRUCTIONS.swap_arrays(a, b)
    assert out[0] is a and out[1] is b
    assert a.tolist() == [3.0, 4.0] and b.tolist() == [1.0, 2.0]
    (~INSTRUCTIONS.swap_arrays)(a, b)
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [3.0, 4.0]


def test_swap_of_arrays_of_different_shapes_is_a_type_error():
    with pytest.raises(rlang.RlangTypeError, match="shape"):
        INSTRUCTIONS.swap_arrays(np.zeros(2), np.zeros(3))


def test_swap_of_values_of_different_types_is_a_type_error():
    with pytest.raises(rlang.RlangTypeError, match="SWAP"):
        INSTRUCTIONS.swap(1, 2.0)


@pytest.mark.parametrize("name, arg, result", [
    ("neg", 3, -3), ("neg", -2.5, 2.5), ("neg", I64_MIN, I64_MIN), ("neg", 0.0, -0.0),
    ("inc", 41, 42), ("inc", I64_MAX, I64_MIN),
    ("dec", 43, 42), ("dec", I64_MIN, I64_MAX),
    ("flip", True, False), ("flip", False, True),
])
def test_one_operand_instructions_forward_and_backward(name, arg, result):
    forward, back = there_and_back(INSTRUCTIONS, name, arg)
    assert forward == (result,)
    assert type(forward[0]) is type(arg)
    assert back == (arg,)
    if isinstance(arg, float):
        assert math.copysign(1.0, forward[0]) == math.copysign(1.0, result)


def test_inc_and_dec_are_each_others_inverse():
    assert (~INSTRUCTIONS.inc)(5) == (4,)
    assert (~INSTRUCTIONS.dec)(5) == (6,)


def test_flip_needs_a_bool():
    with pytest.raises(rlang.RlangTypeError, match="bool"):
        INSTRUCTIONS.flip(1)


@pytest.mark.parametrize("name, arg, message", [
    ("inc", 1.5, "INC needs an integer, got an f64; INC and DEC step integers"),
    ("dec", rlang.Fixed.from_value(1.5), "DEC needs an integer, got a fixed"),
    ("inc", 1 + 2j, "INC needs an integer, got a complex"),
    ("flip", 1, "FLIP needs a bool, got an i64"),
    ("neg", True, "NEG needs a signed number, got a bool; did you mean FLIP"),
])
def test_one_operand_instructions_refuse_the_types_that_section_3_leaves_out(
        name, arg, message):
    """LANGUAGE.md §3: INC and DEC step integers, FLIP flips bools, NEG negates
    signed numbers."""
    with pytest.raises(rlang.RlangTypeError, match=re.escape(message)):
        getattr(INSTRUCTIONS, name)(arg)


@pytest.mark.parametrize("theta", [0.0, 0.3, -1.2, math.pi / 2, 3.0])
def test_rot_and_irot_rotate_by_theta(theta):
    a, b = 1.25, -0.5
    c, s = math.cos(theta), math.sin(theta)
    ra, rb, t = INSTRUCTIONS.rot(a, b, theta)
    assert t == theta
    assert ra == pytest.approx(c * a - s * b, abs=1e-15)
    assert rb == pytest.approx(s * a + c * b, abs=1e-15)
    ia, ib, _ = INSTRUCTIONS.irot(a, b, theta)
    assert ia == pytest.approx(c * a + s * b, abs=1e-15)
    assert ib == pytest.approx(-s * a + c * b, abs=1e-15)
    # ~ROT is IROT and ~IROT is ROT
    assert (~INSTRUCTIONS.rot)(a, b, theta) == pytest.approx((ia, ib, theta), abs=1e-15)
    assert (~INSTRUCTIONS.irot)(a, b, theta) == pytest.approx((ra, rb, theta), abs=1e-15)
    back = (~INSTRUCTIONS.rot)(ra, rb, theta)
    assert back == pytest.approx((a, b, theta), abs=1e-14)


def test_hadamard_and_its_inverse_is_itself():
    a, b = 3.0, 1.0
    h = INSTRUCTIONS.hadamard(a, b)
    assert h == pytest.approx(((a + b) / math.sqrt(2), (a - b) / math.sqrt(2)), abs=1e-15)
    assert (~INSTRUCTIONS.hadamard)(a, b) == pytest.approx(h, abs=1e-15)
    assert INSTRUCTIONS.hadamard(*h) == pytest.approx((a, b), abs=1e-14)


def test_rot_needs_float_operands():
    with pytest.raises(rlang.RlangTypeError, match="float"):
        INSTRUCTIONS.rot(1, 2, 0.5)


# -------------------------------------------------------- ancillas and @zeros

def test_ancilla_computes_then_is_uncomputed():
    m = load("""
        function f(y!, x)
            t ← 0.0
            t += x * x
            y! += t * 2.0
            t -= x * x
            t → 0.0
        end
    """)
    assert m.f(1.0, 3.0) == (19.0, 3.0)
    assert (~m.f)(19.0, 3.0) == (1.0, 3.0)


def test_unicode_and_ascii_allocation_arrows_are_the_same():
    m = load("""
        function f(y!)
            t <- 2
            y! += t
            t -> 2
            u ← 3
            y! += u
            u → 3
        end
    """)
    assert m.f(0) == (5,)
    assert (~m.f)(5) == (0,)


def test_zeros_allocates_zero_ancillas_of_the_type():
    m = load("""
        function f(y!: f64, k)
            @zeros f64 a b
            @zeros i64 n
            a += 2.5
            n += k
            y! += a * n
            n -= k
            a -= 2.5
            ~@zeros i64 n
            ~@zeros f64 a b
        end
    """)
    assert m.f(1.0, 2) == (6.0, 2)
    assert (~m.f)(6.0, 2) == (1.0, 2)


def test_zeros_in_main_are_in_the_store_with_zero_values_of_their_type():
    assert store("""
        function main()
            @zeros f64 a b
            @zeros i64 n
            @zeros bool flag
            a += 1.5
        end
    """) == {"a": 1.5, "b": 0.0, "n": 0, "flag": False}


# ------------------------------------------------------------------ stacks

def test_push_moves_the_value_onto_the_stack_and_zeroes_it():
    m = load("""
        function f(s!: stack{i64}, x!, y!)
            PUSH(s!, x!)
            PUSH(s!, y!)
        end
    """)
    s = Stack("i64", [7])
    out = m.f(s, 3, 4)
    assert out[0] is s
    assert s.items == [7, 3, 4]
    assert out[1:] == (0, 0)
    back = (~m.f)(s, 0, 0)
    assert back[1:] == (3, 4)
    assert s.items == [7]


def test_pop_takes_the_top_of_the_stack():
    m = load("""
        function f(s!: stack{f64}, x!)
            POP(s!, x!)
        end
    """)
    s = Stack("f64", [1.0, 2.5])
    assert m.f(s, 0.0)[1] == 2.5
    assert s.items == [1.0]
    assert (~m.f)(s, 2.5)[1] == 0.0
    assert s.items == [1.0, 2.5]


def test_stacks_in_main_are_printed_bottom_to_top():
    result = store("""
        function main()
            s ← stack(i64)
            x ← 3
            PUSH(s, x)
            y ← 4
            PUSH(s, y)
            z ← 0
            POP(s, z)
        end
    """)
    assert list(result) == ["s", "x", "y", "z"]
    assert result["s"].items == [3] and result["x"] == 0 and result["y"] == 0
    assert result["z"] == 4


# ---------------------------------------------------------- calls and blocks

CALLS = load("""
    function mul(y!, a, b)
        y! += a * b
    end
    function twice(y!, a, b)
        mul(y!, a, b)
        mul(y!, a, b)
    end
    function call_and_uncall(y!, z!, a, b)
        mul(y!, a, b)
        ~mul(z!, a, b)
    end
    function on_elements(v!: i64[:], a)
        mul(v![0], a, a)
        ~mul(v![1], a, 2)
    end
    function inverse_block(y!, a)
        ~begin
            y! += a
            ~begin
                y! += a * 10
            end
        end
    end
    function block(y!, a)
        begin
            y! += a
            y! -= 3
        end
    end
""")


def test_calls_and_uncalls():
    assert CALLS.twice(1, 2, 3) == (13, 2, 3)
    assert (~CALLS.twice)(13, 2, 3) == (1, 2, 3)
    assert CALLS.call_and_uncall(0, 100, 3, 5) == (15, 85, 3, 5)
    assert (~CALLS.call_and_uncall)(15, 85, 3, 5) == (0, 100, 3, 5)


def test_a_call_on_array_elements_writes_the_elements_back():
    v = np.array([1, 100, 7])
    CALLS.on_elements(v, 3)
    assert v.tolist() == [10, 94, 7]
    (~CALLS.on_elements)(v, 3)
    assert v.tolist() == [1, 100, 7]


def test_inverse_begin_blocks():
    # ~begin y += a; ~begin y += 10a end end  runs  y += 10a; y -= a
    assert CALLS.inverse_block(0, 1) == (9, 1)
    assert (~CALLS.inverse_block)(9, 1) == (0, 1)
    assert CALLS.block(0, 5) == (2, 5)
    assert (~CALLS.block)(2, 5) == (0, 5)


def test_routine_runs_its_block_then_its_inverse():
    m = load("""
        function f(y!, x)
            @routine begin
                t ← 0.0
                t += x * 2.0
                @routine begin
                    u ← 0.0
                    u += t * 3.0
                end
                v ← 0.0
                v += u
                ~@routine
            end
            y! += t + v
            ~@routine
        end
    """)
    # t = 2x, u = v = 6x: y += 8x
    assert m.f(1.0, 2.0) == (17.0, 2.0)
    assert (~m.f)(17.0, 2.0) == (1.0, 2.0)


def test_safe_print_runs_in_both_directions(capsys):
    m = load("""
        function f(x!)
            @safe print("x is", x!)
            x! += 1
            @safe show(x!)
        end
    """)
    m.f(1)
    assert capsys.readouterr().out == "x is 1\nx! = 2\n"
    (~m.f)(2)
    assert capsys.readouterr().out == "x! = 2\nx is 1\n"


# ---------------------------------------------------------------- if / else

IFS = load("""
    function classify(x!, tag!)
        if (x! < 0, tag! == 1)
            tag! += 1
        elseif (x! == 0, tag! == 2)
            tag! += 2
        else
            tag! += 3
        end
    end
    function plain(x!, flag)
        if flag
            x! += 10
        else
            x! -= 10
        end
    end
    function tilde(x!, flag)
        if (flag, ~)
            x! += 1
        end
    end
""")


@pytest.mark.parametrize("x, tag", [(-5, 1), (0, 2), (7, 3)])
def test_if_elseif_else_forward_and_backward(x, tag):
    forward, back = there_and_back(IFS, "classify", x, 0)
    assert forward == (x, tag)
    assert back == (x, 0)


def test_if_with_a_plain_condition_and_with_tilde():
    assert IFS.plain(0, True) == (10, True)
    assert IFS.plain(0, False) == (-10, False)
    assert (~IFS.plain)(10, True) == (0, True)
    assert (~IFS.plain)(-10, False) == (0, False)
    assert IFS.tilde(0, True) == (1, True)
    assert IFS.tilde(0, False) == (0, False)
    assert (~IFS.tilde)(1, True) == (0, True)


def test_inverse_if_chooses_its_branch_by_the_postconditions():
    m = load("""
        function f(x!)
            if (x! > 0, x! > 100)
                x! += 100
            end
        end
    """)
    assert m.f(5) == (105,)
    assert m.f(-5) == (-5,)
    assert (~m.f)(105) == (5,)
    assert (~m.f)(-50) == (-50,)    # postcondition false: the (empty) else branch
    # 50 takes the else branch backward, after which the precondition x! > 0 holds:
    # running forward again would take the first branch.  That is an error.
    with pytest.raises(ReversibilityError, match="holds after the else branch"):
        (~m.f)(50)


# -------------------------------------------------------------------- loops

def test_while_forward_and_backward():
    m = load("""
        function f(x!, n)
            i ← 0
            while (i < n, i > 0)
                i += 1
                x! += i
            end
            i → n
        end
    """)
    assert m.f(0, 4) == (10, 4)
    assert (~m.f)(10, 4) == (0, 4)
    assert m.f(3, 0) == (3, 0)
    assert (~m.f)(3, 0) == (3, 0)


def test_janus_from_loop_forward_and_backward():
    m = load("""
        function f(x!, n)
            i ← 0
            from i == 0 do
                i += 1
                x! += i
            loop
                x! += 100
            until i == n
            i → n
        end
    """)
    # n = 3: A (x=1); B (101); A (103); B (203); A (206)
    assert m.f(0, 3) == (206, 3)
    assert (~m.f)(206, 3) == (0, 3)
    assert m.f(0, 1) == (1, 1)
    assert (~m.f)(1, 1) == (0, 1)


FOR = load("""
    function visit(n!, a, s, b)
        for i = a:s:b
            @safe print(i)
            n! += 1
        end
    end
    function visit_unit(n!, a, b)
        for i = a:b
            @safe print(i)
            n! += i
        end
    end
""")


def printed_ints(capsys) -> list[int]:
    return [int(line) for line in capsys.readouterr().out.split()]


@pytest.mark.parametrize("a, s, b", [
    (0, 1, 4), (4, -1, 0), (0, 3, 10), (0, 3, 9), (10, -2, 1), (-3, 2, 3),
    (5, 1, 4), (0, -1, 3), (2, 3, 2), (2, -2, 2), (0, 7, 3),
])
def test_for_ranges_and_their_inverse_visit_the_same_indices_reversed(capsys, a, s, b):
    expected = list(range(a, b + 1, s)) if s > 0 else list(range(a, b - 1, s))
    assert FOR.visit(0, a, s, b) == (len(expected), a, s, b)
    assert printed_ints(capsys) == expected
    assert (~FOR.visit)(len(expected), a, s, b) == (0, a, s, b)
    assert printed_ints(capsys) == expected[::-1]


def test_for_without_a_step_counts_up_inclusively(capsys):
    assert FOR.visit_unit(0, 2, 5) == (2 + 3 + 4 + 5, 2, 5)
    assert printed_ints(capsys) == [2, 3, 4, 5]
    assert (~FOR.visit_unit)(14, 2, 5) == (0, 2, 5)
    assert printed_ints(capsys) == [5, 4, 3, 2]
    assert FOR.visit_unit(7, 3, 2) == (7, 3, 2)
    assert printed_ints(capsys) == []


def test_for_with_a_zero_step_is_a_runtime_error():
    with pytest.raises(RlangRuntimeError, match="step"):
        FOR.visit(0, 0, 0, 3)


def test_for_bounds_must_be_integers():
    with pytest.raises(rlang.RlangTypeError, match="integer"):
        FOR.visit_unit(0, 0.0, 3)


def test_parallel_for_runs_its_iterations_in_order(capsys):
    m = load("""
        function f(a!: f64[:])
            @parallel for i = 0:length(a!) - 1
                a![i] += 2.0 * i
                @safe print(i)
            end
        end
    """)
    a = np.zeros(5)
    m.f(a)
    assert a.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert printed_ints(capsys) == [0, 1, 2, 3, 4]
    (~m.f)(a)
    assert a.tolist() == [0.0] * 5
    assert printed_ints(capsys) == [4, 3, 2, 1, 0]


def test_parallel_for_may_pass_a_shared_element_for_a_read_only_parameter():
    """Every iteration passing `x[0]` to a parameter the callee only reads is a shared
    read, not a shared write (the value is copied back, but that is no write)."""
    m = load("""
        function axpy(y!, a, x)
            y! += a * x
        end
        function f(y!: f64[:], x: f64[:])
            @parallel for i = 0:length(y!) - 1
                axpy(y![i], x[0], x[i])
            end
        end
    """)
    y, x = np.zeros(4), np.array([2.0, 1.0, 3.0, -1.0])
    m.f(y, x)
    assert y.tolist() == [4.0, 2.0, 6.0, -2.0]
    grads = rlang.gradient(m.f, [np.zeros(4), x.copy()], loss=("y!", 2))
    assert grads[1].tolist() == [3.0, 0.0, 2.0, 0.0]


# --------------------------------------------------------- invcheck on / off

LEAKY = """
    function f(x!)
        n ← 1.0
        x! += n
        n → 0.0
    end
"""


def test_a_failing_deallocation_check_is_an_error_by_default():
    with pytest.raises(ReversibilityError, match="deallocation check failed"):
        load(LEAKY).f(1.0)


def test_invcheck_false_turns_every_check_off():
    m = load(LEAKY, invcheck=False)
    assert m.f(1.0) == (2.0,)
    assert (~m.f)(2.0) == (2.0,)      # backward, n ← 0.0 … n → 1.0 subtracts 0.0


def test_invcheckoff_turns_the_checks_off_for_one_statement():
    m = load("""
        function f(x!)
            n ← 1.0
            x! += n
            @invcheckoff n → 0.0
        end
        function g(x!)
            n ← 1.0
            x! += n
            @invcheckoff n → 0.0
            k ← 2
            k → 3
        end
    """)
    assert m.f(1.0) == (2.0,)
    with pytest.raises(ReversibilityError) as info:
        m.g(1.0)
    assert info.value.span.line == 11


def test_invcheckoff_covers_a_whole_loop():
    m = load("""
        function f(x!, n)
            @invcheckoff for i = 0:n
                t ← 1
                x! += t
                t → 0
            end
        end
    """)
    assert m.f(0, 2) == (3, 2)


# ---------------------------------------------------------------- recursion

RECURSION = load("""
    function fib(out!, n)
        if (n <= 1, ~)
            out! += 1
        else
            n1 ← n - 1
            n2 ← n - 2
            fib(out!, n1)
            fib(out!, n2)
            n1 → n - 1
            n2 → n - 2
        end
    end
    function depth(x!, n)
        if (n > 0, ~)
            x! += 1
            m ← n - 1
            depth(x!, m)
            m → n - 1
        end
    end
    function forever(x!)
        INC(x!)
        forever(x!)
    end
""")


@pytest.mark.parametrize("n, fib", [(0, 1), (1, 1), (2, 2), (5, 8), (10, 89), (15, 987)])
def test_recursive_fibonacci_forward_and_backward(n, fib):
    assert RECURSION.fib(0, n) == (fib, n)
    assert (~RECURSION.fib)(fib, n) == (0, n)


def test_a_recursion_5000_deep_works():
    assert RECURSION.depth(0, 5000) == (5000, 5000)
    assert (~RECURSION.depth)(5000, 5000) == (0, 5000)


def test_unbounded_recursion_is_a_clean_call_depth_error():
    with pytest.raises(RlangRuntimeError, match="call depth") as info:
        RECURSION.forever(0)
    assert info.value.span.line == 23
    # the interpreter is still usable afterwards
    assert RECURSION.depth(0, 10) == (10, 10)


def test_recursion_past_the_limit_is_an_error_even_when_it_would_end():
    with pytest.raises(RlangRuntimeError, match="call depth"):
        RECURSION.depth(0, 20_000)


# ----------------------------------------------------------- include, const

def test_include_and_const(tmp_path, write_rev):
    write_rev(tmp_path, "lib/helpers.rev", """
        const SCALE = 3
        function scale(y!, x)
            y! += x * SCALE
        end
    """)
    main = write_rev(tmp_path, "main.rev", """
        include "lib/helpers.rev"
        const OFFSET = SCALE * 2 + 1
        function f(y!, x)
            scale(y!, x)
            y! += OFFSET
        end
        function main()
            y ← 0
            f(y, 5)
            z ← OFFSET
        end
    """)
    m = rlang.load(main)
    assert m.f(0, 5) == (22, 5)
    assert (~m.f)(22, 5) == (0, 5)
    assert m.run_main() == [("y", 22), ("z", 7)]


def test_a_const_cannot_be_updated():
    with pytest.raises(rlang.RlangError, match="const"):
        load("""
            const K = 1
            function f(x!)
                K += x!
            end
        """)


def test_the_constants_pi_inf_nan():
    result = store("""
        function main()
            p ← pi
            i ← inf
            n ← nan
            neg ← -inf
        end
    """)
    assert result["p"] == math.pi and result["i"] == math.inf and result["neg"] == -math.inf
    assert math.isnan(result["n"])


# ---------------------------------------------------------------- main store

def test_main_store_is_in_allocation_order_without_deallocated_ancillas():
    m = load("""
        function bump(y!, k)
            y! += k
        end
        function main()
            zeta ← 1
            alpha ← 2.5
            tmp ← 7
            bump(zeta, tmp)
            tmp → 7
            flags ← [true, false]
            mid ← zeros(f64, 2, 2)
            mid[1, 0] += alpha
            beta ← stack(i64)
        end
    """)
    result = m.run_main()
    assert [name for name, _ in result] == ["zeta", "alpha", "flags", "mid", "beta"]
    values = dict(result)
    assert values["zeta"] == 8 and values["alpha"] == 2.5
    assert values["flags"].tolist() == [True, False]
    assert values["mid"].tolist() == [[0.0, 0.0], [2.5, 0.0]]
    assert values["beta"].items == []


def test_a_program_without_main_cannot_be_run():
    m = load("""
        function f(x!)
            INC(x!)
        end
    """)
    with pytest.raises(rlang.RlangError, match="main"):
        m.run_main()


# ------------------------------------------------------------ run-time checks

RUNTIME_CHECKS = [
    pytest.param("""
        function f(a!: f64[:], i, j)
            a![i] += a![j] * 2.0
        end
    """, (np.ones(3), 1, 1), False, 2, "read by the right-hand side", id="update-target-read"),
    pytest.param("""
        function f(a!: i64[:], i, j)
            a![i] ^= a![j]
        end
    """, (np.ones(3, dtype=np.int64), 2, 2), True, 2, "read by the right-hand side",
        id="xor-target-read-backward"),
    pytest.param("""
        function f(a!: f64[:], i, j)
            SWAP(a![i], a![j])
        end
    """, (np.ones(3), 0, 0), False, 2, "same memory", id="swap-alias"),
    pytest.param("""
        function f(a!: f64[:], i, j)
            ROT(a![i], a![j], 0.5)
        end
    """, (np.ones(3), 2, 2), False, 2, "same memory", id="rot-alias"),
    pytest.param("""
        function f(x!)
            n ← 0.0
            n += x! * 1e-6
            n → 0.0
        end
    """, (1.0,), False, 4, "deallocation check failed: n = 1e-6, expected 0.0",
        id="dealloc-float"),
    pytest.param("""
        function f(x!)
            n ← 0.0
            n += x! * 1e-6
            n → 0.0
        end
    """, (1.0,), True, 2, "deallocation check failed", id="dealloc-backward-points-at-alloc"),
    pytest.param("""
        function f(x!)
            k ← x!
            k → 3
        end
    """, (4,), False, 3, "deallocation check failed: k = 4, expected 3", id="dealloc-int"),
    pytest.param("""
        function f(x!)
            @zeros i64 a b
            b += x!
            ~@zeros i64 a b
        end
    """, (4,), False, 4, "deallocation check failed: b = 4", id="zeros-dealloc"),
    pytest.param("""
        function f(s!: stack{i64}, x!)
            POP(s!, x!)
        end
    """, (Stack("i64", [1]), 5), False, 2, "must be zero", id="pop-into-nonzero"),
    pytest.param("""
        function f(s!: stack{i64}, x!)
            POP(s!, x!)
        end
    """, (Stack("i64"), 0), False, 2, "empty stack", id="pop-empty"),
    pytest.param("""
        function f(s!: stack{i64}, x!)
            PUSH(s!, x!)
        end
    """, (Stack("i64"), 0), True, 2, "empty stack", id="inverse-push-empty"),
    pytest.param("""
        function g(x!, y!)
            x! += 1.0
            y! += 1.0
        end
        function f(a!: f64[:], i, j)
            g(a![i], a![j])
        end
    """, (np.zeros(3), 1, 1), False, 6, "same memory", id="call-written-args-alias"),
    pytest.param("""
        function g(x!)
            x! += 1.0
        end
        function f(y)
            g(y + 1.0)
        end
    """, (1.0,), False, 5, "changed its argument", id="expression-argument-changed"),
    pytest.param("""
        function f(x!)
            if (x! > 0, x! > 5)
                x! += 1
            end
        end
    """, (1,), False, 2, "postcondition `x! > 5` is false", id="if-post-false"),
    pytest.param("""
        function f(x!)
            if (x! == 0, x! == 10)
                x! += 10
            elseif (x! == 1, x! == 10)
                x! += 9
            end
        end
    """, (1,), False, 2, "of branch 1 holds", id="if-earlier-post-holds"),
    pytest.param("""
        function f(x!)
            if (x! == 0, x! == 10)
                x! += 10
            else
                x! += 9
            end
        end
    """, (1,), False, 2, "holds after the else branch", id="if-post-holds-after-else"),
    pytest.param("""
        function f(x!)
            if x! > 0
                x! -= 5
            end
        end
    """, (1,), False, 2, "changed its own condition", id="if-condition-changed"),
    pytest.param("""
        function f(x!)
            if (x! > 0, x! > 5)
                x! += 10
            end
        end
    """, (7,), True, 2, "false after its branch", id="if-backward"),
    pytest.param("""
        function f(x!, n)
            i ← 1
            while (i < n, i > 0)
                i += 1
            end
            i → n
        end
    """, (0, 3), False, 3, "must be false when the loop starts", id="while-post-at-entry"),
    pytest.param("""
        function f(x!, n)
            i ← 0
            while (i < n, i > 1)
                i += 1
            end
            i → n
        end
    """, (0, 3), False, 3, "must hold after every iteration", id="while-post-after-pass"),
    pytest.param("""
        function f(x!, n)
            i ← 1
            from i == 0 do
                i += 1
            loop
                x! += 0
            until i == n
            i → n
        end
    """, (0, 3), False, 3, "must hold when the loop starts", id="from-at-entry"),
    pytest.param("""
        function f(x!, n)
            i ← 0
            j ← 0
            from i == 0 do
                j += 1
            loop
                x! += 1
            until j == n
            j → n
            i → 0
        end
    """, (0, 3), False, 4, "must be false after the first iteration", id="from-repeats"),
    pytest.param("""
        function f(a!: f64[:], lo, hi)
            for k = lo:hi
                a![0] += 1.0
                lo += 1
            end
        end
    """, (np.zeros(1), 0, 2), False, 2, "changed from 0 to 3", id="for-bound-changed"),
    pytest.param("""
        function f(a!: f64[:])
            @parallel for i = 0:length(a!) - 1
                a![0] += 1.0
            end
        end
    """, (np.zeros(3),), False, 2, "share a write", id="parallel-shared-write"),
    pytest.param("""
        function add(p!, v)
            p! += v
        end
        function f(a!: f64[:])
            @parallel for i = 0:length(a!) - 1
                add(a![0], 1.0)
            end
        end
    """, (np.zeros(3),), False, 5, "share a write", id="parallel-shared-write-by-a-call"),
]


@pytest.mark.parametrize("source, args, backward, line, message", RUNTIME_CHECKS)
def test_runtime_checks_raise_reversibility_errors_at_the_line(source, args, backward, line,
                                                               message):
    m = load(source)
    fn = ~m.f if backward else m.f
    with pytest.raises(ReversibilityError) as info:
        fn(*args)
    assert message in info.value.message
    assert info.value.span.line == line
    assert info.value.frames[-1].backward is backward


@pytest.mark.parametrize("source, args, backward, line, message", RUNTIME_CHECKS)
def test_every_runtime_check_is_off_with_invcheck_false(source, args, backward, line, message):
    """With invcheck=False no reversibility check runs (a POP from an empty stack is still
    an error: there is nothing to pop)."""
    m = load(source, invcheck=False)
    fn = ~m.f if backward else m.f
    if "empty stack" in message:
        with pytest.raises(RlangRuntimeError, match="empty stack"):
            fn(*args)
        return
    fn(*args)


def test_float_deallocation_is_checked_within_1e_minus_8():
    m = load("""
        function f(x!, eps)
            n ← 0.0
            n += eps
            n → 0.0
            x! += 1.0
        end
    """)
    assert m.f(0.0, 1e-9) == (1.0, 1e-9)
    with pytest.raises(ReversibilityError):
        m.f(0.0, 1e-7)


def test_index_out_of_bounds_is_a_runtime_error():
    m = load("""
        function f(a!: f64[:], i)
            a![i] += 1.0
        end
    """)
    for i in (3, -1):
        with pytest.raises(RlangRuntimeError, match="out of bounds") as info:
            m.f(np.zeros(3), i)
        assert info.value.span.line == 2


# ---------------------------------------------------------------- call chain

CHAIN = load("""
    function inner(x!)
        t ← 1
        x! += t
        t → 2
    end
    function middle(x!)
        inner(x!)
    end
    function outer(x!)
        x! += 1
        middle(x!)
    end
    function uncaller(x!)
        ~middle(x!)
    end
""")


def test_errors_carry_the_call_chain_innermost_first():
    with pytest.raises(ReversibilityError) as info:
        CHAIN.outer(0)
    error = info.value
    assert error.span.line == 4
    assert [f.function for f in error.frames] == ["inner", "middle", "outer"]
    assert [f.backward for f in error.frames] == [False, False, False]
    assert error.frames[0].call_site.line == 7
    assert error.frames[1].call_site.line == 11
    assert error.frames[2].call_site is None
    assert "x! = 2" in error.frames[0].locals


def test_the_call_chain_says_backward_when_running_an_inverse():
    with pytest.raises(ReversibilityError) as info:
        (~CHAIN.outer)(0)
    error = info.value
    # backward, `t → 2` becomes `t ← 2` … `t → 1`: the check is at the allocation line
    assert error.span.line == 2
    assert [f.function for f in error.frames] == ["inner", "middle", "outer"]
    assert all(f.backward for f in error.frames)
    rendered = error.render()
    assert "in function inner, called at <string>:7:5 (running backward)" in rendered


def test_an_uncall_runs_backward_inside_a_forward_caller():
    with pytest.raises(ReversibilityError) as info:
        CHAIN.uncaller(0)
    frames = info.value.frames
    assert [(f.function, f.backward) for f in frames] == [
        ("inner", True), ("middle", True), ("uncaller", False)]
    assert frames[1].call_site.line == 14


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_janus_loops_without_a_do_part_run_both_ways(backend):
    m = rlang.loads("function count(i, n)\n    from i == 0 loop\n        i += 2\n"
                    "    until i == n\nend\n", backend=backend)
    assert m.count(0, 6) == (6, 6)
    assert (~m.count)(6, 6) == (0, 6)
