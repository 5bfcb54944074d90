"""Tests of the static checker (rlang.frontend.check): one failing and one passing program per
rule of LANGUAGE.md §6 marked "statically", plus the plain static errors."""
import textwrap

import pytest

from rlang.frontend import ast
from rlang.frontend.check import check, collect_errors, written_params
from rlang.errors import CheckError, CheckErrors
from rlang.frontend.loader import loads_unit


def errors(source: str) -> list[tuple[int, int, str]]:
    """(line, col, message) of every static error; line 1 is the first source line."""
    unit = loads_unit(textwrap.dedent(source).lstrip("\n"))
    return [(e.span.line, e.span.col, e.message) for e in collect_errors(unit)]


def one_error(source: str) -> tuple[int, int, str]:
    found = errors(source)
    assert len(found) == 1, found
    return found[0]


def clean(source: str) -> None:
    assert errors(source) == []


def body(*lines: str, params: str = "x, y, a, b, i, j") -> str:
    """A function `f(params)` whose body is `lines` (line 2 onwards, column 5)."""
    return "function f(" + params + ")\n" + "".join(f"    {ln}\n" for ln in lines) + "end\n"


# ---------------------------------------------------------- 1. target read on its RHS

@pytest.mark.parametrize("stmt, col, text", [
    ("x += x * y", 10, "`x` is read on the right-hand side of its own update"),
    ("y -= sin(y)", 14, "`y` is read on the right-hand side of its own update"),
    ("a[i] += a[i] * 2.0", 13, "`a[i]` is read on the right-hand side of its own update"),
    ("a[i] += b * a[i + 1] + a[i]", 28, "`a[i]` is read on the right-hand side of its own update"),
    ("a[i] += abs(a)", 17, "the right-hand side reads `a`, which overlaps the target `a[i]`"),
    ("a += a[i]", 10, "the right-hand side reads `a[i]`, which overlaps the target `a`"),
    ("x.re += x.re", 13, "`x.re` is read on the right-hand side of its own update"),
    ("a[b[i]] += 1.0", None, None),
    # an index reading the written array would change under the write (Janus's rule)
    ("a[b[a[i]]] += 1.0", 9, "an index of `a[b[a[i]]]` reads `a`, which this statement "
                             "writes"),
])
def test_target_read_on_its_own_right_hand_side(stmt, col, text):
    if col is None:
        clean(body(stmt))
    else:
        assert one_error(body(stmt)) == (2, col, text)


@pytest.mark.parametrize("stmt", [
    "a[i] += a[j]",             # aliasing only if i == j: checked at run time
    "x += y * y",               # shared reads are fine
    "x.re += x.im",             # different fields do not overlap
    "a += length(a)",           # reads only the shape
    "a[i] += size(a, 0) * b",
    "y += a[x]",
])
def test_update_reading_other_views_is_fine(stmt):
    clean(body(stmt))


def test_instruction_operands_must_not_overlap():
    assert one_error(body("SWAP(x, x)")) == (2, 13, "operands `x` and `x` of `SWAP` overlap")
    assert one_error(body("a[i] <=> a[i]")) == (
        2, 14, "operands `a[i]` and `a[i]` of `SWAP` overlap")
    assert one_error(body("HADAMARD(a, a[i])")) == (
        2, 17, "operands `a` and `a[i]` of `HADAMARD` overlap")
    assert one_error(body("ROT(x, y, x * 2.0)")) == (
        2, 15, "`ROT` reads `x`, which it also writes")
    clean(body("SWAP(a[i], a[j])", "ROT(x, y, b)", "IROT(a[i], a[j], a[0] + b)", "PUSH(a, x)"))


# --------------------------------------------------------------- 2. double allocation

def test_double_allocation():
    assert one_error(body("t ← 0.0", "t ← 1.0", "t → 1.0")) == (
        3, 5, "`t` is allocated twice")
    assert one_error(body("x ← 0.0")) == (
        2, 5, "`x` is already bound as a parameter; an ancilla needs a new name")
    assert errors("const N = 3\n" + body("N ← 1", "N → 1")) == [
        (3, 5, "`N` is a constant and cannot be allocated"),
        (4, 5, "cannot deallocate `N`: it is a constant, not an ancilla")]
    assert errors(body("for k = 1:3", "    k ← 0", "end"))[0] == (
        3, 9, "`k` is already bound as a `for` index; an ancilla needs a new name")
    assert one_error(body("@zeros f64 s t s", "~@zeros f64 s t")) == (
        2, 5, "`s` is allocated twice")
    assert one_error(body("for x = 1:3", "end")) == (
        2, 5, "`x` is already bound as a parameter; a `for` index needs a new name")


def test_allocate_again_after_deallocation_is_fine():
    clean(body("t ← 0.0", "t → 0.0", "t ← 1.0", "t += x", "t -= x", "t → 1.0"))
    clean(body("for k = 1:3", "end", "for k = 1:3", "end"))


def test_error_message_notes_where_first_allocated():
    unit = loads_unit(body("t ← 0.0", "t ← 1.0", "t → 1.0"))
    (error,) = collect_errors(unit)
    assert error.notes == ("it is already allocated at <string>:2:5; deallocate it first",)


# -------------------------------------------------- 3. use after deallocation, undefined

def test_use_after_deallocation():
    assert one_error(body("t ← 0.0", "t → 0.0", "x += t")) == (
        4, 10, "`t` is used after it was deallocated")
    assert one_error(body("t ← 0.0", "t → 0.0", "t += 1.0")) == (
        4, 5, "`t` is used after it was deallocated")
    assert one_error(body("t ← 0.0", "t → 0.0", "t → 0.0")) == (
        4, 5, "`t` is deallocated twice")


def test_undefined_names():
    assert one_error(body("x += zz")) == (2, 10, "`zz` is not defined")
    assert one_error(body("a[k] += 1.0")) == (2, 7, "`k` is not defined")
    assert one_error(body("t ← t", "t → 0.0")) == (2, 9, "`t` is not defined")
    assert one_error(body("for k = 1:3", "end", "x += k")) == (4, 10, "`k` is not defined")
    assert one_error(body("if x > q", "end")) == (2, 12, "`q` is not defined")


def test_function_name_used_as_a_value():
    assert one_error(body("x += g") + "function g()\nend\n") == (
        2, 10, "`g` is a function, not a variable")


def test_bound_names_are_fine():
    clean("const N = 4\n" + body(
        "t ← zeros(f64, N)",
        "for k = 0:N - 1",
        "    t[k] += x * pi + a[k]",
        "end",
        "for k = 0:N - 1",
        "    t[k] -= x * pi + a[k]",
        "end",
        "t → zeros(f64, N)",
        "s ← zero(f64)",
        "s += inf * nan",
        "s -= inf * nan",
        "s → 0.0"))


# ------------------------------------------------------------ 4. ancillas left allocated

def test_ancilla_left_allocated_at_end_of_function():
    found = errors(body("t ← 0.0", "t += x"))
    assert found == [(2, 5, "ancilla `t` is still allocated at the end of function `f`")]


@pytest.mark.parametrize("lines, where, line", [
    (("for k = 1:3", "    t ← 0.0", "end"), "the loop body", 3),
    (("while (x > 0, x < 0)", "    t ← 0.0", "end"), "the loop body", 3),
    (("from x == 0 do", "    t ← 0.0", "loop", "    y += 1", "until x > 3"),
     "the `do` part of the loop", 3),
    (("from x == 0 do", "    y += 1", "loop", "    t ← 0.0", "until x > 3"),
     "the `loop` part of the loop", 5),
    (("if x > 0", "    t ← 0.0", "end"), "the branch", 3),
    (("if (x > 0, y > 0)", "    y += 1", "elseif (x < 0, y < 0)", "    t ← 0.0", "end"),
     "the branch", 5),
    (("if x > 0", "    y += 1", "else", "    t ← 0.0", "end"), "the `else` branch", 5),
])
def test_ancilla_left_allocated_at_end_of_loop_or_branch(lines, where, line):
    assert one_error(body(*lines)) == (
        line, 9, f"ancilla `t` is still allocated at the end of {where}")


def test_ancilla_allocated_outside_a_loop_freed_inside_it():
    assert one_error(body("t ← 0.0", "for k = 1:3", "    t → 0.0", "end", "t → 0.0")) == (
        4, 9, "ancilla `t` is allocated outside the loop body but deallocated inside it")


def test_main_keeps_its_top_level_ancillas_but_not_those_of_its_loops():
    clean("function main()\n    s ← 0.0\n    s += 2.0\nend\n")
    assert one_error("function main()\n    for k = 1:2\n        s ← 0.0\n    end\nend\n") == (
        3, 9, "ancilla `s` is still allocated at the end of the loop body")


def test_routine_and_blocks_do_not_open_scopes():
    clean(body(
        "@routine begin",
        "    t ← 0.0",
        "    t += x",
        "end",
        "y += t",
        "~@routine",
        "begin",
        "    u ← 1.0",
        "end",
        "u → 1.0",
        "for k = 1:3",
        "    @routine begin",
        "        v ← 0.0",
        "    end",
        "    y += v",
        "    ~@routine",
        "end"))


def test_deallocating_what_is_not_an_ancilla():
    assert one_error(body("x → 0.0")) == (
        2, 5, "cannot deallocate `x`: it is a parameter, not an ancilla")
    assert one_error(body("t → 0.0")) == (2, 5, "cannot deallocate `t`: it is not allocated")
    assert one_error("const N = 1\n" + body("N → 1")) == (
        3, 5, "cannot deallocate `N`: it is a constant, not an ancilla")


def test_inverse_block_runs_its_allocations_backward():
    clean(body("t ← 0.0", "~begin", "    t ← 0.0", "end"))
    found = errors(body("~begin", "    t ← 0.0", "end"))
    assert found == [(3, 9, "cannot deallocate `t`: it is not allocated")]
    unit = loads_unit(body("~begin", "    t ← 0.0", "end"))
    assert collect_errors(unit)[0].notes == (
        "inside `~begin … end` this statement runs backward",)
    clean(body("~begin", "    @routine begin", "        t ← 0.0", "    end",
               "    y += t", "    ~@routine", "end"))
    clean(body("~begin", "    ~begin", "        t ← 0.0", "    end", "end", "t → 0.0"))


# ------------------------------------------------------------------- 5. unpaired @routine

def test_unpaired_routine():
    assert one_error(body("@routine begin", "    x += 1", "end")) == (
        2, 5, "`@routine` is never undone: add `~@routine` later in the same block")
    assert one_error(body("~@routine")) == (
        2, 5, "`~@routine` has no `@routine` before it in the same block")
    # pairs are matched within one statement list, not across an `if`
    found = errors(body("@routine begin", "    x += 1", "end", "if y > 0", "    ~@routine",
                        "end"))
    assert found == [
        (2, 5, "`@routine` is never undone: add `~@routine` later in the same block"),
        (6, 9, "`~@routine` has no `@routine` before it in the same block")]


def test_nested_routines_pair_like_brackets():
    clean(body("@routine begin", "    x += 1", "end", "@routine begin", "    y += 1", "end",
               "b += x * y", "~@routine", "~@routine"))


# ----------------------------------------------------- 6. assignment to const / for index

def test_assignment_to_const_or_for_index():
    assert one_error("const N = 3\n" + body("N += 1")) == (
        3, 5, "`N` is a constant and cannot be assigned")
    assert one_error(body("pi += 1.0")) == (
        2, 5, "`pi` is a built-in constant and cannot be assigned")
    assert one_error(body("for k = 1:3", "    k += 1", "end")) == (
        3, 9, "`k` is a `for` index and cannot be assigned")
    assert one_error(body("for k = 1:3", "    INC(k)", "end")) == (
        3, 13, "`k` is a `for` index and cannot be assigned")
    assert one_error(body("for k = 1:3", "    SWAP(x, k)", "end")) == (
        3, 17, "`k` is a `for` index and cannot be assigned")


def test_const_passed_to_a_parameter_the_callee_writes():
    source = """
        const N = 3
        function g(p, q)
            p += q
        end
        function h(p, q)
            g(q, p)
        end
        function f(x)
            g(x, N)
            g(N, x)
            h(x, N)
            for k = 1:3
                h(x, k)
                h(k, x)
            end
        end
    """
    found = errors(source)
    # h writes its q through g's p; passing N or k to a read-only parameter is fine
    assert found == [(10, 7, "`N` is a constant and cannot be assigned"),
                     (11, 10, "`N` is a constant and cannot be assigned"),
                     (13, 14, "`k` is a `for` index and cannot be assigned")]
    unit = loads_unit(textwrap.dedent(source).lstrip("\n"))
    assert collect_errors(unit)[0].notes == ("`g` may write its parameter `p`",)


def test_written_params_is_a_fixpoint_over_calls():
    unit = loads_unit(textwrap.dedent("""
        function even(n, x, y)
            if n > 0
                odd(n, y, x)
            end
        end
        function odd(n, x, y)
            x += 1
            even(n, x, y)
        end
        function reader(a, b)
            @safe print(a, b)
        end
    """))
    # odd writes x directly; even passes its y as odd's x, so even writes y; odd passes
    # its y as even's y, so odd writes y; even passes its x as odd's y: even writes x.
    assert written_params(unit.functions) == {
        "even": frozenset({1, 2}), "odd": frozenset({1, 2}), "reader": frozenset()}


# ------------------------------------------------------------------- 7. types of updates

@pytest.mark.parametrize("lines, params, line, col, text", [
    (("x *= 2.0",), "x: f64", 2, 5, "`*=` is reversible only on ulog; convert with ulog(x)"),
    (("a[1] /= 2.0",), "a: f64[:]", 2, 5, "`/=` is reversible only on ulog; convert with ulog(x)"),
    (("t ← 1", "t *= 3", "t → 3"), "", 3, 5,
     "`*=` is reversible only on ulog; convert with ulog(x)"),
    (("t ← zeros(i64, 2, 2)", "t[0, 1] *= 3", "t → zeros(i64, 2, 2)"), "", 3, 5,
     "`*=` is reversible only on ulog; convert with ulog(x)"),
    (("x ^= 1.0",), "x: f64", 2, 5, "`^=` needs an integer or bool target"),
    (("z.re ^= 1",), "z: complex", 2, 5, "`^=` needs an integer or bool target"),
    (("u += 1.0",), "u: ulog", 2, 5, "`+=` is not reversible on ulog; use `*=` or `/=`"),
])
def test_update_operator_on_a_known_type(lines, params, line, col, text):
    assert one_error(body(*lines, params=params)) == (line, col, text)


def test_update_type_note_names_the_type():
    (error,) = collect_errors(loads_unit(body("x *= 2.0", params="x: f32")))
    assert error.notes == ("`x` has type f32",)


@pytest.mark.parametrize("lines, params", [
    (("u *= 2.0", "u /= x"), "u: ulog, x"),
    (("t ← ulog(x)", "t *= x", "t /= x", "t → ulog(x)"), "x"),
    (("t ← zero(ulog)", "t *= x", "t /= x", "t → zero(ulog)"), "x"),
    (("y *= x",), "y, x"),                      # generic: the type is not known statically
    (("k ^= 1", "c ^= true"), "k: i64, c: bool"),
    (("t ← f64(k)", "t += 1.0", "t -= 1.0", "t → f64(k)"), "k: i64"),
])
def test_update_operator_fine_or_unknown(lines, params):
    clean(body(*lines, params=params))


# ------------------------------------------------------------- 8. calls and arities

def test_call_to_undefined_function():
    assert one_error(body("foo(x)")) == (2, 5, "call to undefined function `foo`")
    assert one_error(body("~foo(x)")) == (2, 5, "call to undefined function `foo`")
    (error,) = collect_errors(loads_unit(body("sin(x)")))
    assert error.notes == ("`sin` is a built-in function; use it inside an expression",)
    for name in ("print", "show", "assert"):     # side effects need @safe
        (error,) = collect_errors(loads_unit(body(f"{name}(x)")))
        assert error.notes == (f"`{name}` is an irreversible side effect: write "
                               f"`@safe {name}(…)`",)


def test_wrong_argument_count_of_user_call():
    source = "function g(p, q)\n    p += q\nend\n" + body("g(x)", "~g(x, y, a)", "g(x, y)")
    assert errors(source) == [(5, 5, "`g` takes 2 arguments but 1 was given"),
                              (6, 5, "`g` takes 2 arguments but 3 were given")]


def test_builtin_calls_in_expressions():
    source = "function g(p)\nend\n" + body(
        "x += g(y)", "x += frob(y)", "x += sin(y, y)", "x += atan(y, b)", "x += size(a)",
        "x += zeros(f64, 3)[0]")
    assert errors(source) == [
        (4, 10, "user function `g` cannot be called inside an expression; "
                "call it as a statement"),
        (5, 10, "unknown function `frob`"),
        (6, 10, "`sin` takes 1 argument but 2 were given"),
        (8, 10, "`size` takes 2 arguments but 1 was given"),
        (9, 10, "`zeros(…)` can only be the whole value of an allocation")]


def test_allocation_only_builtins_as_allocation_values():
    clean(body("s ← stack(f64)", "t ← zeros(f64, 3, 2)", "t → zeros(f64, 3, 2)",
               "s → stack(f64)"))
    assert one_error(body("s ← 1.0 + zeros(f64, 3)", "s → 0.0")) == (
        2, 15, "`zeros(…)` can only be the whole value of an allocation")


def test_instruction_arity():
    assert one_error(body("NEG(x, y)")) == (2, 5, "`NEG` takes 1 operand but 2 were given")
    assert one_error(body("SWAP(x)")) == (2, 5, "`SWAP` takes 2 operands but 1 was given")
    assert one_error(body("NEG(x + 1)")) == (
        2, 9, "operand 1 of `NEG` must be a variable, an element or a field")


# ------------------------------------------------------------- 9. overlapping arguments

GX = "function g(p, q)\n    p += q\nend\nfunction w(p, q)\n    p += 1\n    q += 1\nend\n"


@pytest.mark.parametrize("call, col, text", [
    ("w(x, x)", 10, "arguments `x` and `x` of `w` overlap"),
    ("w(a, a)", 10, "arguments `a` and `a` of `w` overlap"),
    ("w(a, a[i])", 10, "arguments `a` and `a[i]` of `w` overlap"),
    ("w(a[i], a[i])", 13, "arguments `a[i]` and `a[i]` of `w` overlap"),
    ("g(x, x)", 10, "arguments `x` and `x` of `g` overlap"),   # g writes p, reads q
    ("~g(a[i], a)", 14, "arguments `a[i]` and `a` of `g` overlap"),
])
def test_overlapping_written_arguments(call, col, text):
    assert one_error(GX + body(call)) == (9, col, text)


@pytest.mark.parametrize("call", [
    "w(a[i], a[j])",            # aliasing only when i == j: checked at run time
    "w(x.re, x.im)",
    "g(x, y + y)",
    "r(x, x)",                  # r writes neither parameter: shared reads are fine
])
def test_arguments_that_do_not_overlap_statically(call):
    clean(GX + "function r(p, q)\n    @safe show(p, q)\nend\n" + body(call))


# ---------------------------------------------------------------- 10. @parallel for

def test_parallel_for_writing_a_shared_variable():
    source = GX + body("@parallel for k = 0:3", "    y += a[k]", "    g(x, a[k])",
                       "    g(b[k], x)", "    a[k] += y", "end")
    assert errors(source) == [
        (10, 9, "`y` is written by every iteration of a `@parallel for`"),
        (11, 11, "`x` is written by every iteration of a `@parallel for`")]


def test_parallel_for_with_private_ancillas_and_element_writes():
    clean(body("@parallel for k = 0:3",
               "    t ← 0.0", "    t += a[k]", "    b[k] += t * x", "    t -= a[k]",
               "    t → 0.0",
               "end",
               "for k = 0:3",           # a plain loop may accumulate
               "    y += a[k]",
               "end"))


# ---------------------------------------------- 11. redefinitions; main has no params

def test_redefinitions_are_reported():
    source = "const N = 1\nconst N = 2\nfunction g()\nend\nfunction g()\nend\n"
    assert errors(source) == [(2, 1, "const `N` is defined twice"),
                              (5, 1, "function `g` is defined twice")]


def test_main_takes_no_parameters():
    assert one_error("function main(x)\nend\n") == (1, 15, "`main` takes no parameters")
    clean("function main()\nend\n")


# ------------------------------------------------------------- 12. strings and @safe

def test_strings_only_in_safe():
    assert one_error(body('x += "no"')) == (
        2, 10, "a string can only be an argument of `@safe print`, `show` or `assert`")
    clean(body('@safe print("x is", x)', '@safe assert(x > 0, "x must be positive")',
               '@safe show(x, y)', '@safe assert(x > 0)'))


def test_safe_functions_and_assert_arity():
    found = errors(body("@safe frob(x)", "@safe assert()", "@safe assert(x, y)",
                        '@safe assert(x, "a", "b")'))
    assert found == [(2, 5, "unknown `@safe` function `frob`"),
                     (3, 5, "`assert` takes 1 or 2 arguments but 0 were given"),
                     (4, 21, "the message of `assert` must be a string"),
                     (5, 5, "`assert` takes 1 or 2 arguments but 3 were given")]


# ---------------------------------------------------------------------- 13. fields

def test_only_re_and_im_fields():
    assert one_error(body("x.real += 1.0")) == (
        2, 5, "unknown field `.real`; only `.re` and `.im` exist")
    assert one_error(body("y += x.imag")) == (
        2, 10, "unknown field `.imag`; only `.re` and `.im` exist")
    clean(body("x.re += y.im", "a[i].im -= x.re"))


# ---------------------------------------------------------------------------- API

def test_errors_come_in_source_order_across_functions():
    source = "function g(x)\n    x += x\nend\nfunction f(y)\n    zz += 1\n    y += y\nend\n"
    assert [(line, col) for line, col, _ in errors(source)] == [(2, 10), (5, 5), (6, 10)]


def test_check_raises_all_errors_together():
    unit = loads_unit(body("x += x", "foo(y)"))
    with pytest.raises(CheckErrors) as info:
        check(unit)
    assert [e.message for e in info.value.errors] == [
        "`x` is read on the right-hand side of its own update",
        "call to undefined function `foo`"]
    assert isinstance(info.value, CheckError)
    assert info.value.span.line == 2


def test_check_accepts_a_correct_program():
    check(loads_unit(textwrap.dedent("""
        function logplus(y!: complex, x: complex)
            @routine begin
                n ← 0.0
                n += abs(x)
            end
            y!.re += log(n)
            y!.im += angle(x)
            ~@routine
        end
        function main()
            z ← 0.0 + 0.0im
            logplus(z, 1.0 + 2.0im)
        end
    """)))


def test_the_for_step_must_not_be_zero():
    assert one_error(body("for k = 1:0:3", "end")) == (
        2, 15, "the step of a `for` loop must not be zero")


# ---------------------------------------------------------------- deep and long input

def test_a_deep_expression_is_checked_and_run_without_crashing_the_process():
    # 100,000 unary minus signs: the checker's walks and the llvm backend's cache key
    # and lowering recurse that deep; they run on the deep-stack worker (a segfault of
    # the whole process before)
    import subprocess
    import sys

    code = ("import rlang\n"
            "src = 'function f(x, y)\\n    x += ' + '-' * 100_000 + 'y\\nend\\n'\n"
            "for backend in ('interp', None):\n"
            "    print(rlang.loads(src, backend=backend).f(1.0, 2.0))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["(3.0, 2.0)", "(3.0, 2.0)"]


def test_the_views_a_long_sum_reads_are_found_in_linear_work(monkeypatch):
    from rlang.frontend import check as checker

    calls = []
    real = checker.is_view
    monkeypatch.setattr(checker, "is_view", lambda node: calls.append(1) or real(node))
    for n in (1_000, 4_000):
        calls.clear()
        expr = ast.Name("y")
        for _ in range(n - 1):
            expr = ast.Binary("+", expr, ast.Name("y"))
        views = checker._read_views(expr)
        assert len(views) == n and all(v == ast.Name("y") for v in views)
        assert len(calls) <= 2 * n          # was a generator chain: O(n²) steps


# ------------------------------------------- `^` and the bitwise operators on floats

XOR_HINT = "`^` needs integers or bools, got an f64; did you mean `**`?"


@pytest.mark.parametrize("lines, params, found", [
    # #23: LANGUAGE.md §3 makes `^` between floats a type error; only a run said so
    (["y! += x ^ 2"], "y!: i64, x: f64", (2, 11, XOR_HINT)),
    (["y! += 2 ^ 3.0"], "y!: i64", (2, 11, XOR_HINT)),
    (["t ← f32(1.5)", "y! += t ^ 1", "t → f32(1.5)"], "y!: i64",
     (3, 11, "`^` needs integers or bools, got an f32; did you mean `**`?")),
    (["y! += k & a[0]"], "y!: i64, k: i64, a: f64[:]",
     (2, 11, "`&` needs integers or bools, got an f64")),
    (["if (c ^ 1) == 0", "    y! += 1", "end"], "y!: i64, c: complex",
     (2, 9, "`^` needs integers or bools, got a complex")),
])
def test_bitwise_operators_on_plain_floats_are_type_errors(lines, params, found):
    assert one_error(body(*lines, params=params)) == found


@pytest.mark.parametrize("lines, params", [
    (["y! += x ^ k"], "y!, x, k"),                # types only the run knows
    (["y! += k ^ 3"], "y!: i64, k: i64"),
    (["b! ^= p ^ true"], "b!: bool, p: bool"),
])
def test_bitwise_operators_on_integers_or_unknown_types_pass(lines, params):
    clean(body(*lines, params=params))
