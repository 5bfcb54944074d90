"""The llvm backend's own `exp` (Note [An exp LLVM can vectorise],
rlang/backends/llvm/inline_math.py): within one unit in the last place of glibc's
over the whole range (subnormal results, the overflow and underflow thresholds,
infinities, NaN); a loop summing it vectorises with its sum still added in program
order (`-force-ordered-reductions`, backends/llvm/jit.py), bit for bit the sum of
the same values one at a time; and a vectorised loop and its inverse add and
subtract the same bits."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from llvmlite import ir as ll

import rlang
from rlang.backends.llvm import jit as llvm_jit
from rlang.backends.llvm.inline_math import inline_exp
from rlang.backends.llvm.types import F64, I64

SOURCE = """
function exps!(y!: f64[:], x: f64[:])
    @inbounds for i = 0:length(x) - 1
        y![i] += exp(x[i])
    end
end

function sum_exps!(z!: f64, x: f64[:])
    @inbounds for i = 0:length(x) - 1
        z! += exp(x[i])
    end
end

function shifted!(a!: f64[:], x: f64[:])
    @inbounds for i = length(x) - 1:-1:0
        a![i] += exp(x[i] * 0.5)
    end
end
"""

OVERFLOW = 709.78271289338397       # the largest x with a finite e^x


@pytest.fixture(scope="module")
def compiled():
    return rlang.loads(SOURCE, backend="llvm")


def glibc_exp(x: float) -> float:
    if math.isnan(x):
        return x
    return math.inf if x > OVERFLOW else math.exp(x)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many doubles apart (same-signed finite values)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def exps(compiled, x: np.ndarray) -> np.ndarray:
    return compiled.exps_(np.zeros_like(x), x)[0]


def test_exp_is_within_one_ulp_of_glibcs_everywhere(compiled):
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-1.0, 1.0, 20000), rng.uniform(-40.0, 40.0, 20000),
                        rng.uniform(-745.2, OVERFLOW, 20000),
                        rng.uniform(-745.2, -708.0, 20000),       # subnormal results
                        rng.uniform(700.0, OVERFLOW, 5000),
                        np.ldexp(rng.uniform(-1.0, 1.0, 5000), -rng.integers(20, 1070, 5000))])
    ours = exps(compiled, x)
    theirs = np.array([glibc_exp(v) for v in x])
    apart = ulps(ours, theirs)
    assert apart.max() <= 1, x[apart.argmax()]
    assert (apart == 0).mean() > 0.85


@pytest.mark.parametrize("x, expected", [
    (0.0, 1.0), (-0.0, 1.0), (1.0, math.e), (5e-324, 1.0), (-5e-324, 1.0),
    (OVERFLOW, math.exp(OVERFLOW)), (np.nextafter(OVERFLOW, math.inf), math.inf),
    (710.0, math.inf), (math.inf, math.inf), (1e300, math.inf),
    (-745.1332191019411, 5e-324), (-746.0, 0.0), (-1e300, 0.0), (-math.inf, 0.0),
    (-708.3964185322641, math.exp(-708.3964185322641)),      # the smallest normal
])
def test_exp_at_the_edges(compiled, x, expected):
    got = exps(compiled, np.array([x]))[0]
    assert got == expected or abs(int(ulps(np.array([got]), np.array([expected]))[0])) <= 1


def test_exp_of_nan_is_nan(compiled):
    assert np.isnan(exps(compiled, np.array([np.nan, 1.0]))[0])


def test_a_sum_of_exps_vectorises_and_adds_in_program_order(compiled):
    """The vector loop computes four exps at a time and adds them one by one, so the
    sum is the in-order sum of the exps the scalar code computes."""
    x = np.random.default_rng(1).normal(size=1003) * 30.0
    values = exps(compiled, x)
    in_order = 0.25
    for v in values:
        in_order += v
    assert compiled.sum_exps_(0.25, x)[0] == in_order


def test_a_loop_and_its_inverse_add_and_subtract_the_same_values(compiled):
    """shifted! runs backward and its inverse forward, each vectorised with a scalar
    remainder at its own end, so an element's exp is a vector lane in one and
    scalar code in the other: the values are the same bits all the same."""
    x = np.random.default_rng(2).normal(size=1001)
    a = np.random.default_rng(3).normal(size=1001)
    values = exps(compiled, x * 0.5)
    forward = compiled.shifted_(a.copy(), x)[0]
    assert forward.tobytes() == (a + values).tobytes()
    back = (~compiled.shifted_)(forward.copy(), x)[0]
    assert back.tobytes() == (forward - values).tobytes()


def test_our_pipeline_vectorises_an_ordered_sum_and_llvm_is_left_as_it_was():
    """-force-ordered-reductions is set for our passes only: a pipeline run after
    them (Numba's, in the same process) gets LLVM's default back."""
    import llvmlite.binding as llvm

    machine = llvm_jit.target_machine()
    text = str(_sum_of_exps_module())
    ours = str(llvm_jit.optimise(text, machine))
    assert re.search(r"<\d+ x double>", ours) and "@llvm.vector.reduce.fadd" in ours
    assert "reassoc" not in ours and "fast" not in ours
    module = llvm.parse_assembly(text)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    assert "@llvm.vector.reduce.fadd" not in str(module)


def _sum_of_exps_module() -> ll.Module:
    """`double sum(double *x, i64 n)`: s = 0; for i < n: s += exp(x[i]) (n > 0)."""
    module = ll.Module()
    fn = ll.Function(module, ll.FunctionType(F64, [F64.as_pointer(), I64]), name="sum")
    x, n = fn.args
    entry, loop, done = (fn.append_basic_block(k) for k in ("entry", "loop", "done"))
    b = ll.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i, s = b.phi(I64), b.phi(F64)
    new = b.fadd(s, b.call(inline_exp(module), [b.load(b.gep(x, [i]))]))
    step = b.add(i, ll.Constant(I64, 1))
    i.add_incoming(ll.Constant(I64, 0), entry)
    i.add_incoming(step, loop)
    s.add_incoming(ll.Constant(F64, 0.0), entry)
    s.add_incoming(new, loop)
    b.cbranch(b.icmp_signed("<", step, n), loop, done)
    b.position_at_end(done)
    b.ret(new)
    return module
