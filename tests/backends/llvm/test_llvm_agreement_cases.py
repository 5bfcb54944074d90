"""Programs where the llvm backend disagreed with the interpreter, or refused them.

A review ran small programs over LANGUAGE.md's statements, expressions and number
systems on both backends and compared the output.  Each case here failed before:
llvm printed something else, raised an error the interpreter does not, or refused
the program.  Each now runs the program on both backends and compares the printed
store exactly (`rlang run`'s output), or the values and errors of a call.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import rlang
from rlang.numbers import ULog
from rlang.types_rules import BackendUnsupported
from rlang.values import format_value

from gradient_agreement import assert_same_error

ULOG = ULog(2.0)


def _store(source: str, backend: str) -> str:
    """What `rlang run` prints for main's store."""
    module = rlang.loads(source, backend=backend)
    out = io.StringIO()
    for name, value in module.run_main():
        print(f"{name} = {format_value(value)}", file=out)
    return out.getvalue()


def _agree(source: str) -> str:
    expected = _store(source, "interp")
    assert _store(source, "llvm") == expected
    return expected


def _errors(source: str, run, error=rlang.RlangError) -> list:
    """The errors (as printed) that `run(module)` raises on the interpreter and llvm."""
    out = []
    for backend in ("interp", "llvm"):
        with pytest.raises(error) as info:
            run(rlang.loads(source, backend=backend))
        out.append(str(info.value))
    return out


def test_rotations_and_swaps_of_the_two_parts_of_one_complex_element():
    # the alias check compared the indices only: zs[0].re and zs[0].im "overlapped"
    printed = _agree("function main()\n"
                     "    zs ← [1.0 + 0.0im, 2.0 + 3.0im]\n"
                     "    ROT(zs[0].re, zs[0].im, 0.5)\n"
                     "    SWAP(zs[1].re, zs[1].im)\n"
                     "    HADAMARD(zs[1].im, zs[1].re)\n"
                     "end\n")
    assert "zs = [0.8775825618903728 + 0.479425538604203im" in printed


def test_swapping_one_part_with_itself_is_still_an_alias():
    source = ("function f!(zs: complex[:], i: i64, j: i64)\n"
              "    SWAP(zs[i].re, zs[j].re)\n"
              "end\n")
    messages = _errors(source, lambda m: m["f!"](np.array([1 + 2j, 3 + 4j]), 1, 1),
                       rlang.ReversibilityError)
    assert messages[0] == messages[1]


def test_floor_ceil_and_round_of_small_negatives_are_positive_zeros():
    printed = _agree("function main()\n"
                     "    a ← round(-0.4)\n    b ← ceil(-0.5)\n    c ← floor(-0.0)\n"
                     "    d ← round(f32(-0.3))\n    e ← round(-0.5)\n    g ← floor(-1.5)\n"
                     "end\n")
    assert "-0.0" not in printed and "g = -2.0" in printed


def test_the_call_depth_limit_is_reached_at_the_same_call():
    # llvm counted only the recursive function's frames, so main's frame was not
    # counted and the recursion went one call deeper than the interpreter's
    source = ("function down(n)\n    n -= 1\n    helper(n)\nend\n"
              "function helper(n)\n    down(n)\nend\n"
              "function main()\n    n ← 0\n    down(n)\nend\n")
    messages = _errors(source, lambda m: m.run_main(), rlang.RlangRuntimeError)
    assert "call depth exceeded the limit of 10000" in messages[0]
    assert messages[1] == messages[0]


@pytest.mark.parametrize("line", [
    "a ← [fixed(x), 0.5]",              # fixed and f64 elements make an f64 array
    "a ← [ulog(x), 0.5]",
    "a ← [fixed(x), 1.0 + 2.0im]",      # and with a complex one, a complex array
    "a ← complex(fixed(x), 0.5)",       # complex(re, im) of fixed and ulog parts
    "a ← complex(ulog(x))",
    "a ← ~(x > 1.0)",                   # `~` of a bool is its negation
])
def test_expressions_the_interpreter_accepts_compile(line):
    _agree(f"function main()\n    x ← 2.0\n    {line}\nend\n")


def test_a_type_error_on_a_path_the_interpreter_never_takes():
    # `true || x` never evaluates x: the interpreter runs it; the compiled backends
    # type the whole function.  "auto" runs it on the interpreter; llvm reports it.
    source = "function f!(c!: bool, x: i64)\n    c! ^= true || x\nend\n"
    assert rlang.loads(source)["f!"](False, 5) == (True, 5)
    with pytest.raises(rlang.RlangTypeError, match="must be a bool") as info:
        rlang.loads(source, backend="llvm")["f!"](False, 5)
    assert type(info.value) is rlang.RlangTypeError


@pytest.mark.parametrize("alloc, literal", [
    ("zeros(f32, 2)", "[0.0, 0.0]"), ("zeros(i32, 2)", "[0, 0]"),
    ("zeros(f64, 3)", "[0, 0, 0]"), ("zeros(i64, 2)", "[0.0, 0.0]"),
    ("zeros(f32, 2)", "[0, 0]"), ("zeros(bool, 2)", "[0, 0]"),
])
def test_deallocation_against_a_literal_of_another_element_type(alloc, literal):
    _agree(f"function main()\n    a ← {alloc}\n    a → {literal}\nend\n")


def test_a_failed_deallocation_against_another_types_literal_says_the_same():
    source = "function main()\n    c ← zeros(f64, 2)\n    c[1] += 1.0\n    c → [0, 0]\nend\n"
    messages = _errors(source, lambda m: m.run_main(), rlang.ReversibilityError)
    assert messages[1] == messages[0]
    assert "deallocation check failed: c = [0.0, 1.0], expected [0, 0]" in messages[0]


def test_size_with_a_dimension_known_at_run_time():
    source = ("function f!(n!: i64, m: f64[:,:,:])\n"
              "    for d = 0:2\n        n! += size(m, d) * (d + 1)\n    end\n"
              "    n! += size(m, 2 - 1)\nend\n"
              "function g!(n!: i64, m: f64[:,:], d: i64)\n    n! += size(m, d)\nend\n")
    results = []
    for backend in ("interp", "llvm"):
        module = rlang.loads(source, backend=backend)
        got = [module["f!"](0, np.zeros((2, 3, 4)))[0], module["g!"](0, np.zeros((5, 6)), 1)[0]]
        for d in (2, -1):
            with pytest.raises(rlang.RlangRuntimeError) as info:
                module["g!"](0, np.zeros((5, 6)), d)
            got.append(str(info.value))
        results.append(got)
    assert results[0][:2] == [2 + 3 * 2 + 4 * 3 + 3, 6]
    assert results[1] == results[0]


def test_memory_maps_are_arrays_other_subclasses_are_refused(tmp_path):
    source = ("function scale!(y!: f64[:], x: f64[:], a: f64)\n"
              "    for i = 0:length(x) - 1\n        y![i] += a * x[i]\n    end\nend\n")
    module = rlang.loads(source, backend="llvm")
    mapped = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=(3,))
    mapped[:] = [1.0, 2.0, 3.0]
    y, x, _ = module["scale!"](np.zeros(3), mapped, 2.0)
    assert y.tolist() == [2.0, 4.0, 6.0] and x is mapped
    out, _, _ = module["scale!"](mapped, np.ones(3), 1.0)        # written in place
    assert out is mapped and np.memmap(tmp_path / "x.bin", dtype=np.float64,
                                       mode="r").tolist() == [2.0, 3.0, 4.0]
    # anything else with __array__ is np.asarray of it (LANGUAGE.md §13): a masked
    # array's data, the same on every backend, and written in place
    for backend in ("llvm", "auto", "interp"):
        masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
        y = np.ma.array(np.zeros(3), mask=[1, 0, 0])
        rlang.loads(source, backend=backend)["scale!"](y, masked, 2.0)
        assert y.data.tolist() == [2.0, 4.0, 6.0], backend


def test_a_constant_array_shown_by_name():
    source = ("const W = [1.0, 2.0, 3.0]\n"
              "function f!(y!: f64)\n    y! += W[1]\n    @safe show(W)\n    @safe print(W)\nend\n")
    printed = []
    for backend in ("interp", "llvm"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert rlang.loads(source, backend=backend)["f!"](0.0) == (2.0,)
        printed.append(out.getvalue())
    assert printed[0] == printed[1] == "W = [1.0, 2.0, 3.0]\n[1.0, 2.0, 3.0]\n"


@pytest.mark.parametrize("expression, error", [
    ("k + 5000000000", "the literal 5000000000: 5000000000 is out of the range of i32"),
    ("k - 2147483648", "the literal 2147483648: 2147483648 is out of the range of i32"),
    ("k * -2147483649", "the literal -2147483649: -2147483649 is out of the range of i32"),
    ("k & 4294967295", "the literal 4294967295: 4294967295 is out of the range of i32"),
    ("k - (-2147483648)", None),        # in range: -2^31 - -2^31 ... wraps as i32
    ("k + 2147483647", None),
])
def test_an_i32_operand_makes_an_integer_literal_i32_or_fails_where_evaluated(expression,
                                                                            error):
    # llvm typed an out-of-range literal next to an i32 as an i64 and widened the sum;
    # the interpreter (NumPy 2's rule) fails there, and only when it gets there
    source = (f"function f(y!: i32, k: i32, go: bool)\n    if (go, ~)\n"
              f"        y! += {expression}\n    end\nend\n")
    for backend in ("interp", "llvm"):
        assert rlang.loads(source, backend=backend).f(0, 1, False) == (0, 1, False)
    if error is None:
        results = [rlang.loads(source, backend=b).f(0, 1, True) for b in ("interp", "llvm")]
        assert results[0] == results[1]
        return
    messages = _errors(source, lambda m: m.f(0, 1, True), rlang.RlangRuntimeError)
    assert messages[1] == messages[0]
    assert messages[0] == f"<string>:3:19: {error}"


@pytest.mark.parametrize("k, x", [(2 ** 53 + 1, 2.0 ** 53), (2 ** 53 + 1, 2.0 ** 53 + 2),
                                  (-(2 ** 63), -(2.0 ** 63)), (3, 2.5)])
def test_an_integer_meets_a_float_in_a_comparison_as_a_float(k, x):
    # the interpreter compared exactly (Python's int/float comparison), llvm as NumPy
    # does, converting the integer (LANGUAGE.md §3: mixed arithmetic promotes int → float)
    source = ("function f(e!: bool, l!: bool, g!: bool, m!: bool, k: i64, x: f64)\n"
              "    e! ^= k == x\n    l! ^= k < x\n    g! ^= k >= x\n"
              "    m! ^= min(k, x) == k\nend\n")
    results = [rlang.loads(source, backend=b).f(False, False, False, False, k, x)
               for b in ("interp", "llvm")]
    assert results[0] == results[1]
    as_float = float(k)
    assert results[0][:3] == (as_float == x, as_float < x, as_float >= x)


def test_an_i32_division_by_zero_shows_the_dividend_as_a_literal():
    source = "function f(y!: i32, a: i32, b: i32)\n    y! += a // b\nend\n"
    messages = _errors(source, lambda m: m.f(0, 5, 0), rlang.RlangRuntimeError)
    assert messages[1] == messages[0]
    assert "integer division by zero: 5 // 0" in messages[0]


def test_two_functions_of_one_compiled_name_are_refused_not_confused(tmp_path):
    # `g!` and `g_` are both `g_` in generated code: llvm called g_ for g! (and
    # recursed to the call-depth limit); `rlang compile` kept one without a word
    source = ("function g!(x: f64)\n    x += 1.0\nend\n"
              "function g_(x: f64)\n    x += 2.0\n    g!(x)\nend\n")
    assert rlang.loads(source).g_(0.0) == (3.0,)            # "auto": the interpreter
    with pytest.raises(BackendUnsupported, match="the functions `g_` and `g!` have the "
                       "same name in compiled code"):
        rlang.loads(source, backend="llvm").g_(0.0)
    assert rlang.loads(source, backend="llvm")["g!"](0.0) == (1.0,)
    from rlang.lower.entries import entries_of
    from rlang.frontend.loader import loads_unit

    _, skipped = entries_of(loads_unit(source), True)
    assert skipped == [("g_", "`g!` has the same name in compiled code (`g_`)")]


@pytest.mark.parametrize("statement", [
    "HADAMARD(x, y)", "ROT(x, y, 0.5)", "IROT(f, g, 0.5)", "SWAP(x, f)",
    "b += true", "HADAMARD(f, g)"])
def test_instruction_type_errors_say_what_the_interpreter_says(statement):
    # llvm types statements when it compiles them and said "needs float views, got
    # i64" where the interpreter, running them, says "needs float operands, got an i64"
    source = f"function t(x: i64, y: i64, b: bool, f: f64, g: f32)\n    {statement}\nend\n"
    errors = []
    for backend in ("interp", "llvm"):
        with pytest.raises(rlang.RlangTypeError) as info:
            rlang.loads(source, backend=backend).t(1, 2, True, 1.5, 2.5)
        errors.append(info.value)
    assert (errors[1].message, errors[1].span) == (errors[0].message, errors[0].span)


@pytest.mark.parametrize("expression, argument", [
    ("x * x", np.ones(3)), ("x + 1.0", np.ones(3)), ("2.0 - x", np.ones((2, 2), np.int64)),
    ("sin(x)", np.ones(3)), ("atan(1.0, x)", np.ones(3)), ("-x", np.ones(3)),
    ("-x", ULOG), ("f64(x < 1.0)", np.ones(3)), ("f64(1.0 == x)", np.ones(2)),
    ("f64(!x)", 2)])
def test_operators_on_the_wrong_kind_of_untyped_argument_say_what_the_interpreter_says(
        expression, argument):
    """An untyped parameter bound to an array (or a ulog, an int) where the
    expression needs a number: llvm said "`*` on f64[:] in the compiled backends",
    "`sin` of f64[:] in compiled code" or "cannot be applied to f64[:]" where the
    interpreter says "`*` cannot be applied to an f64[:]" (a type error, not a
    limit of the backend)."""
    source = f"function t(y!, x)\n    y! += {expression}\nend\n"
    errors = []
    for backend in ("interp", "llvm"):
        with pytest.raises(rlang.RlangTypeError) as info:
            rlang.loads(source, backend=backend).t(0.0, argument)
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0])
    assert (errors[1].message, errors[1].span) == (errors[0].message, errors[0].span)


@pytest.mark.parametrize("statement, argument", [
    ("FLIP(x)", 1), ("INC(x)", 1.5), ("DEC(x)", 2.5), ("CONJ(x)", 1.5), ("CONJ(x)", 3),
    ("NEG(x)", True)])
def test_one_operand_instruction_errors_say_what_the_interpreter_says(statement, argument):
    """A generic operand's type is known when the call binds it: both backends refuse
    the types LANGUAGE.md §3 leaves out in the same words; a typed one is refused by
    the checker before either runs."""
    source = f"function t(x)\n    {statement}\nend\n"
    errors = []
    for backend in ("interp", "llvm"):
        with pytest.raises(rlang.RlangTypeError) as info:
            rlang.loads(source, backend=backend).t(argument)
        errors.append(info.value)
    assert (errors[1].message, errors[1].span) == (errors[0].message, errors[0].span)
    typed = source.replace("t(x)", f"t(x: {rlang.values.type_name(argument)})")
    with pytest.raises(rlang.CheckErrors, match=statement.split("(")[0] + " needs"):
        rlang.loads(typed)


DIRECTIONS = """
function r(x: i64)
    @routine begin
        t ← 0
        t += x
    end
    x += 1
    ~@routine
end
function s(x: i64, d: i64)
    ~begin
        x += 1 // d
    end
end
function c(x: i64, d: i64)
    @routine begin
        t ← x
        inner(t, d)
    end
    ~@routine
    ~begin
        inner(x, d)
    end
end
function inner(x: i64, d: i64)
    x += 5 // d
end
function n(x: i64, d: i64)
    ~begin
        ~begin
            x += 7 // d
        end
    end
end
"""


@pytest.mark.parametrize("name, args, inverse, noted", [
    ("r", (5,), False, True), ("r", (5,), True, False), ("s", (1, 0), False, True),
    ("s", (1, 0), True, True), ("c", (1, 0), False, False), ("c", (1, 0), True, True),
    ("n", (1, 0), False, True), ("n", (1, 0), True, True)])
def test_errors_in_blocks_run_against_the_frame_say_so(name, args, inverse, noted):
    # llvm left out the interpreter's note "this statement was running backward, as
    # part of `~@routine` at …" (and for `@routine` in an inverse, and `~begin`)
    errors = []
    for backend in ("interp", "llvm"):
        function = rlang.loads(DIRECTIONS, backend=backend)[name]
        with pytest.raises(rlang.RlangError) as info:
            (~function if inverse else function)(*args)
        errors.append(info.value)
    assert errors[1].notes == errors[0].notes
    assert any("as part of" in note for note in errors[0].notes) == noted
    assert_same_error(errors[1], errors[0])
