"""Alias scopes of array parameters (Note [Array parameters do not overlap],
rlang/backends/llvm/alias.py): the metadata is emitted where it can say something,
one gradient passed for two read-only parameters keeps them in one scope, and
results stay the interpreter's where the optimiser could have used a wrong promise
(a callee inlined into a loop that passes its arrays in turn, one array passed for
two read-only parameters)."""
from __future__ import annotations

import numpy as np

import rlang
from rlang.ir import nodes as ir
from rlang.ad.adjoint_ir import adjoint_module
from rlang.backends.llvm.alias import distinct_gradients
from rlang.backends.llvm.emit import emit_module
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

SOURCE = """
function axpy!(y!: f64[:], a: f64, x: f64[:])
    for i = 0:length(y!) - 1
        y![i] += a * x[i]
    end
end

function both!(y!: f64[:], u: f64[:], v: f64[:])
    axpy!(y!, 2.0, u)
    axpy!(y!, 3.0, v)
end

function twice!(y!: f64[:], u: f64[:])
    both!(y!, u, u)
end

function swap_in_turn!(u!: f64[:], v!: f64[:], n: i64)
    for k = 1:n
        axpy!(u!, 0.5, v!)
        axpy!(v!, -0.25, u!)
    end
end

function dot!(s!: f64, x: f64[:], w: f64[:])
    for i = 0:length(x) - 1
        s! += x[i] * w[i]
    end
end

function selfdot!(s!: f64, u: f64[:])
    dot!(s!, u, u)
end
"""


def _types(args):
    return tuple(type_of_value(v) for v in args)


def _gradient_ir(module, name, args):
    return adjoint_module(lower(module.unit, name, _types(args), True, True))


def test_a_function_writing_one_array_and_reading_another_gets_alias_scopes():
    m = rlang.loads(SOURCE, backend="llvm")
    args = [np.zeros(3), 1.0, np.ones(3)]
    text = str(emit_module(lower(m.unit, "axpy!", _types(args), False, True)))
    assert text.count("call void @\"llvm.experimental.noalias.scope.decl\"") == 2  # y!, read
    assert "!alias.scope" in text and "!noalias" in text


def test_a_function_that_only_reads_arrays_gets_none():
    m = rlang.loads(SOURCE, backend="llvm")
    args = [0.0, np.ones(3), np.ones(3)]
    text = str(emit_module(lower(m.unit, "dot!", _types(args), False, True)))
    assert "alias.scope" not in text and "noalias.scope.decl" not in text


def test_gradients_of_read_only_arrays_are_apart_unless_a_caller_passes_one_twice():
    m = rlang.loads(SOURCE, backend="llvm")
    args = [np.zeros(3), np.ones(3)]
    module = _gradient_ir(m, "twice!", args)
    distinct = distinct_gradients(module)
    names = {fn.name: symbol for symbol, fn in module.functions.items()}
    assert names["twice!"] in distinct          # called from Python: fresh buffers
    assert names["both!"] not in distinct       # both!(y!, u, u): ū passed twice
    assert names["axpy!"] in distinct           # one read-only array each call
    both = module.functions[names["both!"]]
    assert len([k for k in both.accumulated
                if isinstance(both.params[k].type, ir.ArrayType)]) == 2


def test_one_array_passed_for_two_read_only_parameters_gets_both_gradients():
    m, interp = rlang.loads(SOURCE, backend="llvm"), rlang.loads(SOURCE)
    for module in (m, interp):
        args = [np.zeros(4), np.arange(4.0)]
        grads = rlang.gradient(module["twice!"], args, ("y!", 2))
        if module is m:
            got = grads
        else:
            expected = grads
    assert_same_gradients(got, expected)
    assert got[1][2] == 5.0                     # 2 + 3: both contributions


def test_the_same_array_from_python_for_two_read_only_parameters():
    m, interp = rlang.loads(SOURCE, backend="llvm"), rlang.loads(SOURCE)
    u = np.arange(1.0, 5.0)
    got = rlang.gradient(m["both!"], [np.zeros(4), u, u], ("y!", 1))
    expected = rlang.gradient(interp["both!"], [np.zeros(4), u.copy(), u.copy()], ("y!", 1))
    assert_same_gradients(got, expected)


def test_a_callee_inlined_into_a_loop_with_its_arrays_in_turn():
    m, interp = rlang.loads(SOURCE, backend="llvm"), rlang.loads(SOURCE)
    rng = np.random.default_rng(3)
    u, v = rng.normal(size=64), rng.normal(size=64)
    got = m["swap_in_turn!"](u.copy(), v.copy(), 9)
    expected = interp["swap_in_turn!"](u.copy(), v.copy(), 9)
    for g, e in zip(got[:2], expected[:2]):
        assert np.array_equal(g, e)
    back = (~m["swap_in_turn!"])(*got)
    assert np.allclose(back[0], u, rtol=1e-12) and np.allclose(back[1], v, rtol=1e-12)
    grads = rlang.gradient(m["swap_in_turn!"], [u.copy(), v.copy(), 9], ("u!", 5))
    assert_same_gradients(grads, rlang.gradient(interp["swap_in_turn!"],
                                                [u.copy(), v.copy(), 9], ("u!", 5)))


def test_one_gradient_for_two_read_only_arrays_read_in_the_same_loop():
    # dot!'s gradient pass updates x̄[i] and w̄[i] in one loop; here they are one
    # buffer, so a promise that they are apart would lose half of each update
    m, interp = rlang.loads(SOURCE, backend="llvm"), rlang.loads(SOURCE)
    u = np.arange(1.0, 66.0)
    got = rlang.gradient(m["selfdot!"], [0.0, u.copy()], "s!")
    assert_same_gradients(got, rlang.gradient(interp["selfdot!"], [0.0, u.copy()], "s!"))
    assert np.array_equal(got[1], 2 * u)


def test_a_later_call_whose_arrays_do_not_hold_the_loss_element_gets_the_error():
    # the first call leaves a gradient plan for (argument kinds, loss); a later call
    # with shorter arrays must not reuse its loss element
    messages = []
    for backend in ("interp", "llvm"):
        m = rlang.loads(SOURCE, backend=backend)
        good = rlang.gradient(m["axpy!"], [np.zeros(4), 2.0, np.ones(4)], ("y!", 3))
        assert np.array_equal(good[2], [0.0, 0.0, 0.0, 2.0])
        try:
            rlang.gradient(m["axpy!"], [np.zeros(2), 2.0, np.ones(2)], ("y!", 3))
        except rlang.RlangError as error:
            messages.append(str(error))
        else:
            raise AssertionError(f"{backend}: no error for y![3] of a 2-array")
    assert messages[0] == messages[1]
