"""`@inline function f` (LANGUAGE.md §4): the llvm backend inlines f at its call
sites (forward, inverse and gradient passes alike, as the attribute
`alwaysinline`); without the annotation LLVM's own heuristics decide.  Results are the interpreter's either way."""
from __future__ import annotations

import re

import numpy as np

import rlang
from rlang.backends.llvm_jit import optimise, target_machine
from rlang.backends.llvm_ad import build_derivative
from rlang.backends.llvm_emit import emit_module
from rlang.lower import lower, type_of_value

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
        assert ("alwaysinline" in str(module)) == expected


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
