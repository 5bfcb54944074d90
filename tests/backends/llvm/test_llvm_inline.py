"""`@inline function f` (LANGUAGE.md §4): the llvm backend inlines f at its call
sites (forward, inverse and gradient passes alike, as the attribute
`alwaysinline`); without the annotation LLVM's own heuristics decide.  Results are the interpreter's either way."""
from __future__ import annotations

import re

import numpy as np

import rlang
from rlang.backends.llvm.jit import optimise, target_machine
from rlang.backends.llvm.backend import build_derivative
from rlang.backends.llvm.emit import emit_module
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

SOURCE = """
{annotation}function bump!(y!: f64, x: f64, k: i64)
    for r = 1:k
        y! += sin(x) * cos(x) + exp(-x * x) * f64(r)
        y! += log(1.0 + x * x) / f64(r + 1) + tanh(x) * sqrt(1.0 + x * x)
        y! -= atan(x) * 0.25 + sinh(x * 0.01) * cosh(x * 0.01)
    end
end

function all!(y!: f64[:], xs: f64[:])
    for i = 0:length(xs) - 1
        bump!(y![i], xs[i], 3)
        bump!(y![i], 2.0 * xs[i], 2)
        bump!(y![i], xs[i] + 1.0, 4)
    end
end
"""


def _calls_left(source: str, derivative: str = "") -> int:
    m = rlang.loads(source, backend="llvm")
    types = tuple(type_of_value(v) for v in (np.zeros(3), np.ones(3)))
    if derivative:
        _, module = build_derivative(m.unit, "all!", types, False, True, derivative)
    else:
        module = emit_module(lower(m.unit, "all!", types, False, True))
    text = str(optimise(str(module), target_machine()))
    callers = [d[:d.index("\n}\n")] for d in text.split("\ndefine")[1:]
               if "_all___" in re.search(r"@([\w.]+)\(", d).group(1)]
    assert callers
    return sum(1 for body in callers for line in body.splitlines()
               if "call" in line and "bump_" in line)


def test_an_inline_function_is_inlined_in_every_pass():
    inline = SOURCE.format(annotation="@inline ")
    assert _calls_left(inline) == 0
    assert _calls_left(inline, "grad") == 0
    for annotation, expected in (("@inline ", True), ("", False)):
        m = rlang.loads(SOURCE.format(annotation=annotation), backend="llvm")
        module = emit_module(lower(m.unit, "bump!", ("f64", "f64", "i64"), False, True))
        bump = [line for line in str(module).splitlines()
                if line.startswith("define") and '@"rev_bump___f64_f64_i64"(' in line]
        assert len(bump) == 1 and ("alwaysinline" in bump[0]) == expected


def test_inlined_results_are_the_interpreters():
    inline = SOURCE.format(annotation="@inline ")
    m, interp = rlang.loads(inline, backend="llvm"), rlang.loads(inline)
    xs = np.linspace(-1.0, 1.0, 7)
    got = m["all!"](np.zeros(7), xs)
    expected = interp["all!"](np.zeros(7), xs.copy())
    assert np.allclose(got[0], expected[0], rtol=1e-12)
    back = (~m["all!"])(got[0].copy(), xs)
    assert np.allclose(back[0], 0.0, atol=1e-12)
    assert_same_gradients(rlang.gradient(m["all!"], [np.zeros(7), xs], ("y!", 3)),
                          rlang.gradient(interp["all!"], [np.zeros(7), xs.copy()], ("y!", 3)))


ONCE = """
function point!(s!: f64, x: f64[:], i: i64)
    @routine begin
        t ← zeros(f64, 3)
        for j = 0:2
            t[j] += x[i] * f64(j)
        end
    end
    for j = 0:2
        s! += t[j] * t[j]
    end
    ~@routine
end

function twice!(s!: f64, x: f64)
    s! += x * x
end

function top!(s!: f64, x: f64)
    s! += 0.5 * x
end

function total!(s!: f64, x: f64[:])
    for i = 0:length(x) - 1
        point!(s!, x, i)
        twice!(s!, x[i])
    end
    twice!(s!, 1.0)
    top!(s!, 2.0)
end

function down!(s!: f64, n: i64)
    if (n > 0, ~)
        s! += 1.0
        for k = 1:1
            down!(s!, n - 1)
        end
    end
end
"""


def test_functions_called_once_in_a_loop_are_inlined():
    """Note [Functions called once are inlined] (backends/llvm/emit.py): a function
    that one call statement calls, inside a loop, is inlined; one called twice, one
    called outside loops and a recursive one are left to LLVM.  Results, inverse and
    gradients are the interpreter's."""
    from rlang.ir.call_graph import inlined_once

    m = rlang.loads(ONCE, backend="llvm")
    interp = rlang.loads(ONCE)
    types = ("f64", type_of_value(np.ones(4)))
    module = lower(m.unit, "total!", types, False, True)
    once = inlined_once(module)
    assert [s for s in module.functions if s.startswith("rev_point")] == list(once)
    emitted = emit_module(module)
    inline = {fn.name for fn in emitted.functions if "alwaysinline" in str(fn.attributes)}
    assert inline == once
    assert not inlined_once(lower(m.unit, "down!", ("f64", "i64"), False, True))
    x = np.array([0.5, -1.0, 2.0, 0.25])
    got = m["total!"](0.0, x)
    assert got[0] == interp["total!"](0.0, x.copy())[0]
    assert (~m["total!"])(got[0], x)[0] == 0.0
    assert_same_gradients(rlang.gradient(m["total!"], [0.0, x], "s!"),
                          rlang.gradient(interp["total!"], [0.0, x.copy()], "s!"))
