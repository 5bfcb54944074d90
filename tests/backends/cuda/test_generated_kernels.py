"""Generated float programs with `@parallel for` kernels agree with the interpreter
(issue #6): forward, inverse and gradient.

Hypothesis draws `f(y: f64[:], z: f64[:], x: f64[:], a, b)`: host code around one or
two `@parallel for` loops, whose iterations write only `y[i]` and `z[i]` and read
`x[i]`, the neighbour `x[(i + 1) % length(x)]`, `x[0]` and the scalars `a` and `b`
(reads shared between iterations: their gradients are added atomically), through
random expression trees (tests/property/test_gradients.py), the instructions NEG,
SWAP, ROT and HADAMARD, scalar ancillas (registers), branches on the data, and
calls and uncalls of device functions (one with a scalar ancilla of its own).
Ranges run forward and backward with steps 1, 2, -1 and -3, over arrays of 0, 1,
a few, and more elements than the simulator's grid has threads (16: each thread
then takes several iterations).  The loss is a scalar or an element.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlang

from agreement import assert_same_gradients, copy, gpu_rtol, magnitude, same

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
from test_gradients import expressions, indent  # noqa: E402

HELPERS = """
function h(p, q, r)
    p += q * sin(r) + r * 0.5
end

function g(p, q)
    t ← q * q
    p += t * 0.5 + cos(t)
    t → q * q
end
"""

#: Ranges of a kernel over the arrays' indices (empty for short arrays too).
RANGES = ["0:length(y) - 1", "length(y) - 1:-1:0", "0:2:length(y) - 1",
          "1:length(y) - 2", "length(y) - 1:-3:0"]
#: Array lengths: empty, one, a few, and more than 2 blocks × 8 simulated threads.
LENGTHS = [0, 1, 2, 5, 8, 17, 23]


@st.composite
def kernel_body(draw, i: str, counter: list, depth: int = 0, ancillas: tuple = ()) -> list:
    """Statements of one iteration `i`: they write y[i] and z[i] only."""
    shared = ["a", "b", f"x[{i}]", f"x[({i} + 1) % length(x)]", "x[0]", *ancillas]
    lines: list = []
    kinds = ["update", "update", "instr", "call"] + (["alloc", "if"] if depth < 2 else [])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        target, other = draw(st.sampled_from([(f"y[{i}]", f"z[{i}]"), (f"z[{i}]", f"y[{i}]")]))
        leaves = shared + [other]
        if kind == "update":
            op = draw(st.sampled_from(["+=", "-="]))
            lines.append(f"{target} {op} {draw(expressions(leaves))}")
        elif kind == "instr":
            name = draw(st.sampled_from(["NEG", "SWAP", "ROT", "HADAMARD"]))
            lines.append(f"NEG({target})" if name == "NEG" else
                         f"ROT({target}, {other}, {draw(expressions(shared))})" if name == "ROT"
                         else f"{name}({target}, {other})")
        elif kind == "call":
            uncall = draw(st.sampled_from(["", "~"]))
            if draw(st.booleans()):
                lines.append(f"{uncall}h({target}, {draw(expressions(leaves, 1))}, "
                             f"{draw(st.sampled_from(leaves))})")
            else:
                lines.append(f"{uncall}g({target}, {draw(expressions(leaves, 1))})")
        elif kind == "alloc":
            counter[0] += 1
            name = f"t{counter[0]}"
            value = draw(expressions(shared))
            body = draw(kernel_body(i, counter, depth + 1, ancillas + (name,)))
            lines += [f"{name} ← {value}", *body, f"{name} → {value}"]
        else:
            condition = draw(st.sampled_from([f"x[{i}] > 0.0", f"{draw(expressions(shared))} > 0.5"]))
            lines += [f"if ({condition}, ~)", *indent(draw(kernel_body(i, counter, depth + 1,
                                                                        ancillas)))]
            if draw(st.booleans()):
                lines += ["else", *indent(draw(kernel_body(i, counter, depth + 1, ancillas)))]
            lines.append("end")
    return lines


@st.composite
def kernel_programs(draw) -> str:
    counter = [0]
    lines: list = []
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["a += b * 0.5", "b -= sin(a)"])))
    for loop in range(draw(st.integers(1, 2))):
        i = "ik"[loop]
        lines += [f"@parallel for {i} = {draw(st.sampled_from(RANGES))}",
                  *indent(draw(kernel_body(i, counter))), "end"]
        if draw(st.booleans()):                  # host code reading the kernel's results
            lines += ["for j = 0:length(y) - 1", "    a += y[j] * z[j] * 0.25", "end"]
    return HELPERS + "\nfunction f(y: f64[:], z: f64[:], x: f64[:], a, b)\n" + \
        "\n".join(indent(lines)) + "\nend\n"


@st.composite
def cases(draw):
    source = draw(kernel_programs())
    n = draw(st.sampled_from(LENGTHS))
    values = st.floats(-1.0, 1.0, allow_nan=False)
    arrays = [np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
              for _ in range(3)]
    args = arrays + [draw(values), draw(values)]
    losses = ["a", "b"] + ([(name, draw(st.integers(0, n - 1))) for name in "yz"] if n else [])
    return source, args, draw(st.sampled_from(losses))


def finite(values) -> bool:
    return all(np.all(np.isfinite(v)) and np.all(np.abs(v) < 1e6) for v in values)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(cases())
def test_generated_kernels_agree_forward_inverse_and_gradient(case):
    source, args, loss = case
    interp, cuda = rlang.loads(source), rlang.loads(source, backend="cuda")
    expected = interp.f(*copy(args))
    assume(finite(expected))
    got = cuda.f(*copy(args))
    scale = magnitude([*args, *expected])
    rtol = gpu_rtol(lambda moved: interp.f(*moved), args)
    for a, b in zip(got, expected):
        assert same(a, b, scale, rtol), f"{source}\nforward: cuda {a!r}, interpreter {b!r}"
    back = (~cuda.f)(*copy(list(expected)))
    interp_back = (~interp.f)(*copy(list(expected)))
    for a, b, c in zip(back, interp_back, args):
        assert same(a, b, scale, rtol), f"{source}\ninverse: cuda {a!r}, interpreter {b!r}"
        assert np.allclose(a, c, rtol=1e-9, atol=1e-9), source
    grads = rlang.gradient(interp.f, copy(args), loss=loss)
    assume(finite([g for g in grads if g is not None]))
    cuda_args = copy(args)
    gradient_rtol = gpu_rtol(lambda moved: [g for g in rlang.gradient(interp.f, moved, loss=loss)
                                            if g is not None], args)
    assert_same_gradients(rlang.gradient(cuda.f, cuda_args, loss=loss), grads,
                          f"{source}\nloss {loss}, arguments {args}", gradient_rtol)
    for before, after in zip(args, cuda_args):       # the gradient pass restores inputs
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after, before, rtol=0, atol=1e-9)


def test_generator_covers_shared_reads_calls_and_every_range():
    """The strategy reaches what the test is for (a check on the generator itself)."""
    seen: set = set()

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(kernel_programs())
    def collect(source):
        seen.update(r for r in RANGES if r in source)
        seen.update(word for word in ("x[0]", "% length(x)", "h(", "g(", "~h(", "~g(", " ← ",
                                      "if (", "@parallel for k") if word in source)

    collect()
    assert seen >= set(RANGES) | {"x[0]", "% length(x)", "h(", "g(", "~h(", "~g(", " ← ",
                                  "if (",
                                  "@parallel for k"}
