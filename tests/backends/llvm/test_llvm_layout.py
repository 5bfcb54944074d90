"""Unit-stride specialisations (Note [Unit-stride arrays], rlang/ir/nodes.py): an array whose
last axis is contiguous gets code that indexes it without a stride; any other array
gets the general code, also after a contiguous call of the same function, and the
results are the interpreter's either way (forward, inverse, gradient)."""
from __future__ import annotations

import numpy as np

import rlang
from rlang.ir import nodes as ir
from rlang.ir.nodes import symbol_of
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

SOURCE = """
function rowsums!(s!: f64[:], a: f64[:,:])
    for i = 0:size(a, 0) - 1
        for j = 0:size(a, 1) - 1
            s![i] += a[i, j] * f64(j + 1)
        end
    end
end

function scaled!(s!: f64[:], a: f64[:,:])
    t ← zeros(f64, size(a, 0))
    rowsums!(t, a)
    for i = 0:length(s!) - 1
        s![i] += 2.0 * t[i]
    end
    ~begin
        rowsums!(t, a)
    end
    t → zeros(f64, size(a, 0))
end
"""


def test_the_layout_is_part_of_the_type_and_the_symbol():
    a = np.ones((3, 4))
    assert type_of_value(a) == ir.ArrayType("f64", 2, unit_stride=True)
    assert type_of_value(a.T) == ir.ArrayType("f64", 2)            # last axis strided
    assert type_of_value(a[:, ::2]) == ir.ArrayType("f64", 2)
    assert type_of_value(a[::2, :]).unit_stride                    # rows apart, fine
    assert ir.kind(type_of_value(a)) == type_of_value(a.T)         # one type to the rules
    assert symbol_of("f", (type_of_value(a),), False) != symbol_of("f", (type_of_value(a.T),),
                                                                   False)


def test_an_ancilla_passed_to_a_callee_gets_the_unit_stride_callee():
    m = rlang.loads(SOURCE, backend="llvm")
    types = (type_of_value(np.zeros(3)), type_of_value(np.ones((3, 4)).T))
    module = lower(m.unit, "scaled!", types, False, True)
    callees = [fn.params[0].type for fn in module.functions.values() if fn.name == "rowsums!"]
    assert callees and all(t.unit_stride for t in callees)          # t is an ancilla
    assert all(not fn.params[1].type.unit_stride for fn in module.functions.values())


def test_strided_arrays_after_contiguous_ones_run_the_general_code():
    m, interp = rlang.loads(SOURCE, backend="llvm"), rlang.loads(SOURCE)
    base = np.arange(48.0).reshape(6, 8)
    for a in (base, base.T, base[:, ::3], base[::2, 1::2], np.asfortranarray(base), base):
        for name in ("rowsums!", "scaled!"):
            s = np.zeros(a.shape[0])
            got = m[name](s.copy(), a)
            expected = interp[name](s.copy(), a.copy())
            assert np.array_equal(got[0], expected[0]), (name, a.strides)
            back = (~m[name])(got[0].copy(), a)
            assert np.array_equal(back[0], s)
            grads = rlang.gradient(m[name], [s.copy(), a], ("s!", a.shape[0] - 1))
            assert_same_gradients(grads, rlang.gradient(interp[name], [s.copy(), a.copy()],
                                                        ("s!", a.shape[0] - 1)))
