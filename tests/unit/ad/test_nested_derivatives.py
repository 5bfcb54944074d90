"""Derivative statements and nested derivatives (docs/nested.md).

`grad f(args) wrt p, … into t, …` (reverse mode) and `fgrad …` (forward mode) add
∂L/∂p to their targets; `~grad` subtracts.  A function containing one is
differentiated again by rlang.grad / rlang.gradient (outer reverse) and rlang.jvp
(outer forward), on the interpreter and on llvm: the four nesting orders rr, rf,
fr, ff.  Every result is compared with an analytic value or central finite
differences, and the two backends with each other.  Also: the syntax (parse, print,
invert), the checker's errors with their positions, run-time type errors, and the
refusal of third derivatives.
"""
from __future__ import annotations

import math
import textwrap

import pytest

import rlang
from rlang.errors import RlangError
from rlang.frontend.check import collect_errors
from rlang.frontend.invert import invert_stmt
from rlang.frontend.loader import loads_unit
from rlang.frontend.parser import parse
from rlang.frontend.printer import format_stmt
from rlang.values import Stack

BACKENDS = ("interp", "llvm")
MODES = ("grad", "fgrad")

# p = sin(x)·y² + w·x·y: ∂p/∂x = cos(x)·y² + w·y, ∂p/∂y = 2·sin(x)·y + w·x
# f's loss: out += ∂p/∂x · ∂p/∂y
PROGRAM = """
function p(e!, x, y, w)
    e! += sin(x) * y * y + w * x * y
end

function f(out!, x, y, w)
    @zeros f64 gx gy
    {mode} p(0.0, x, y, w) wrt x, y into gx, gy
    out! += gx * gy
    ~{mode} p(0.0, x, y, w) wrt x, y into gx, gy
    ~@zeros f64 gx gy
end

# an expression argument and a loop: out += Σₖ ∂p/∂x at (2x, y + k)
function g(out!, x, y, w)
    @zeros i64 k
    @zeros f64 c
    while (k < 3, k > 0)
        @zeros f64 gx
        {mode} p(0.0, 2.0 * x, y + c, w) wrt x into gx
        out! += gx * gx
        ~{mode} p(0.0, 2.0 * x, y + c, w) wrt x into gx
        ~@zeros f64 gx
        k += 1
        c += 1.0
    end
    c → 3.0
    k → 3
end
"""

POINT = (0.0, 0.7, -1.3, 0.4)


def _f(x, y, w):
    px = math.cos(x) * y * y + w * y
    py = 2 * math.sin(x) * y + w * x
    return px * py


def _g(x, y, w):
    return sum((math.cos(2 * x) * (y + k) ** 2 + w * (y + k)) ** 2 for k in range(3))


def _fd_gradient(fn, point, h=1e-6):
    out = []
    for k in range(3):
        up = list(point)
        down = list(point)
        up[k] += h
        down[k] -= h
        out.append((fn(*up) - fn(*down)) / (2 * h))
    return out


def _module(mode, backend, invcheck=True):
    return rlang.loads(PROGRAM.format(mode=mode), backend=backend, invcheck=invcheck)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,exact", [("f", _f), ("g", _g)])
def test_values_and_arguments_left_as_they_were(backend, mode, name, exact):
    result = _module(mode, backend)[name](*POINT)
    assert result[0] == pytest.approx(exact(*POINT[1:]), rel=1e-13)
    assert result[1:] == POINT[1:]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,exact", [("f", _f), ("g", _g)])
def test_outer_reverse_against_finite_differences(backend, mode, name, exact):
    """rr (`grad` inside) and rf (`fgrad` inside)."""
    gradient = rlang.gradient(_module(mode, backend)[name], POINT, loss="out!")
    assert gradient[0] == 1.0
    expected = _fd_gradient(exact, POINT[1:])
    assert list(gradient[1:]) == pytest.approx(expected, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,exact", [("f", _f), ("g", _g)])
def test_outer_forward_against_finite_differences(backend, mode, name, exact):
    """fr (`grad` inside) and ff (`fgrad` inside): one jvp per input."""
    expected = _fd_gradient(exact, POINT[1:])
    m = _module(mode, backend)
    for k in range(3):
        direction = [0.0, 0.0, 0.0, 0.0]
        direction[k + 1] = 1.0
        outputs, tangents = rlang.jvp(m[name], POINT, tuple(direction))
        assert outputs[0] == pytest.approx(exact(*POINT[1:]), rel=1e-13)
        assert tangents[0] == pytest.approx(expected[k], rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("name", ["f", "g"])
def test_the_four_orders_and_two_backends_agree(name):
    results = []
    for mode in MODES:
        for backend in BACKENDS:
            m = _module(mode, backend)
            results.append(rlang.gradient(m[name], POINT, loss="out!")[1:])
            results.append(tuple(rlang.jvp(m[name], POINT, d)[1][0] for d in
                                 ((0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0),
                                  (0.0, 0.0, 0.0, 1.0))))
    for other in results[1:]:
        assert other == pytest.approx(results[0], rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_and_fgrad_add_and_the_inverse_subtracts(backend):
    source = """
    function q(e!, a, b)
        e! += a * a * b
    end

    function h(t!, u!, a, b)
        grad q(0.0, a, b) wrt a, b into t!, u!
        fgrad q(0.0, a, b) wrt b into u!
    end
    """
    m = rlang.loads(textwrap.dedent(source), backend=backend)
    t, u, a, b = m.h(1.0, 2.0, 3.0, 5.0)
    assert (t, u, a, b) == (1.0 + 2 * 3.0 * 5.0, 2.0 + 2 * 9.0, 3.0, 5.0)
    assert (~m.h)(t, u, a, b) == (1.0, 2.0, 3.0, 5.0)


def test_a_hessian_through_a_derivative_statement_is_refused():
    for backend in BACKENDS:
        with pytest.raises(RlangError, match="third derivatives"):
            rlang.hessian(_module("grad", backend).f, POINT, loss="out!")


# ------------------------------------------------------------------ syntax


def test_parse_print_and_invert():
    text = "grad p(0.0, x, y[i], w) wrt x, y into gx!, g[2]"
    stmt = parse(f"function f(gx!, g, x, y, w, i)\n    {text}\nend\n").items[0].body[0]
    assert stmt.mode == "grad" and stmt.wrt == ("x", "y") and not stmt.inverse
    assert format_stmt(stmt) == text
    inverse = invert_stmt(stmt)
    assert format_stmt(inverse) == "~" + text
    assert invert_stmt(inverse) == stmt
    again = parse(f"function f(gx!, g, x, y, w, i)\n    ~{text}\nend\n").items[0].body[0]
    assert again == inverse


def test_an_unknown_mode_is_a_parse_error():
    # only `grad` and `fgrad` followed by a name are modes; `hess p(…)` is two names
    with pytest.raises(RlangError, match="unexpected 'p'") as caught:
        parse("function f(g!, x)\n    hess p(0.0, x) wrt x into g!\nend\n")
    assert caught.value.span.line == 2


def test_wrt_and_into_stay_ordinary_names():
    m = rlang.loads("function f(wrt!, into)\n    wrt! += into\nend\n", backend="interp")
    assert m.f(1.0, 2.0) == (3.0, 2.0)


def _errors(source: str) -> list:
    unit = loads_unit(textwrap.dedent(source).lstrip("\n"))
    return [(e.span.line, e.message) for e in collect_errors(unit)]


CALLEE = "function p(e!, x, y)\n    e! += x * y\nend\n"


@pytest.mark.parametrize("stmt,message", [
    ("grad nothing(0.0, x, y) wrt x into g!", "grad of undefined function `nothing`"),
    ("grad p(0.0, x) wrt x into g!", "`p` takes 3 arguments but 2 were given"),
    ("grad p(0.0, x, y) wrt z into g!", "`z` is not a parameter of `p`"),
    ("grad p(0.0, x, y) wrt x, x into g!, h!", "`x` appears twice after `wrt`"),
    ("grad p(0.0, x, y) wrt x, y into g!", "names 2 parameters after `wrt` but 1 target"),
    ("grad p(0.0, x, g!) wrt x into g!", "the argument `g!` reads `g!`, which `grad p` writes"),
    ("fgrad p(0.0, x, y) wrt x into g!, g!", "targets `g!` and `g!` of `fgrad p` overlap"),
    ("grad p(0.0, x, y) wrt x into K", "`K` is a constant and cannot be assigned"),
])
def test_static_errors_name_the_statement(stmt, message):
    found = _errors(CALLEE + "const K = 1.0\n" +
                    f"function f(g!, h!, x, y)\n    {stmt}\nend\n")
    assert any(line == 6 and message in text for line, text in found), found


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_integer_loss_is_a_type_error_at_the_statement(backend):
    source = ("function p(e!, x)\n    e! += x\nend\n"
              "function f(g!, x)\n    grad p(0, x) wrt x into g!\nend\n")
    with pytest.raises(RlangError, match="the loss and must be an f64 value") as caught:
        rlang.loads(source, backend=backend).f(0.0, 1.0)
    assert caught.value.span.line == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivative_statements_in_a_reversible_loop_with_a_history(backend):
    """The pattern of the GradBench evals: a loop whose state a gradient moves keeps
    what it overwrites on a stack; the outer gradient runs the loop backward."""
    source = """
    function energy(e!, x)
        e! += x * x * x * x / 4.0 - x
    end

    # n! steps of descent x -= 0.1·E'(x); loss! += x²
    function descend(loss!, x!, n!, kept: stack{f64}, x0)
        x! += x0
        while (n! < 5, n! > 0)
            @zeros f64 g
            grad energy(0.0, x!) wrt x into g
            x! -= 0.1 * g
            PUSH(kept, g)
            ~@zeros f64 g
            n! += 1
        end
        loss! += x! * x!
    end
    """
    m = rlang.loads(textwrap.dedent(source), backend=backend, invcheck=True)

    def plain(x0):
        x = x0
        for _ in range(5):
            x -= 0.1 * (x ** 3 - 1.0)
        return x * x

    x0 = 0.3
    args = (0.0, 0.0, 0, Stack("f64", []), x0)
    assert m.descend(*args)[0] == pytest.approx(plain(x0), rel=1e-14)
    expected = (plain(x0 + 1e-6) - plain(x0 - 1e-6)) / 2e-6
    args = (0.0, 0.0, 0, Stack("f64", []), x0)
    assert rlang.gradient(m.descend, args, loss="loss!")[4] == pytest.approx(expected, rel=1e-7)
    tangent = rlang.jvp(m.descend, (0.0, 0.0, 0, Stack("f64", []), x0),
                        (0.0, 0.0, None, None, 1.0))[1][0]
    assert tangent == pytest.approx(expected, rel=1e-7)


def test_a_whole_program_with_derivative_statements_is_not_inverted():
    from rlang.frontend.invert import invert_program

    program = parse(PROGRAM.format(mode="grad"), "nest.rev")
    with pytest.raises(RlangError, match="cannot be inverted as a whole"):
        invert_program(program)
    assert invert_program(program, "f").items[0].name == "f"       # one function can


@pytest.mark.parametrize("mode", MODES)
def test_the_cuda_backend_runs_them_as_llvm_does(mode):
    pytest.importorskip("numba")
    m = _module(mode, "cuda")
    assert m.f(*POINT)[0] == pytest.approx(_f(*POINT[1:]), rel=1e-13)
    expected = rlang.gradient(_module(mode, "llvm").f, POINT, loss="out!")
    assert rlang.gradient(m.f, POINT, loss="out!") == pytest.approx(expected, rel=1e-13)


def test_targets_that_are_one_element_at_run_time_are_an_error_on_both_backends():
    import numpy as np

    source = """
    function q(e!, a, b)
        e! += a * a * b
    end

    function h(g: f64[:], a, b, i, j)
        grad q(0.0, a, b) wrt a, b into g[i], g[j]
    end
    """
    messages = []
    for backend in BACKENDS:
        m = rlang.loads(textwrap.dedent(source), backend=backend)
        assert list(m.h(np.zeros(3), 3.0, 5.0, 0, 2)[0]) == [30.0, 0.0, 9.0]
        with pytest.raises(RlangError, match="are the same memory") as caught:
            m.h(np.zeros(3), 3.0, 5.0, 1, 1)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "arguments 4 and 5 of `grad q` (`g[i]` and `g[j]`)" in messages[0]
