"""`@safe print/show` of arrays in compiled code (issue #5): the lines are the
interpreter's, for every element type, any layout (strided, reversed, empty), array
ancillas, and in the forward, inverse and gradient runs."""
import io
from contextlib import redirect_stdout

import numpy as np
import pytest

import rlang

SOURCE = """
function shown!(y!: f64, x: f64[:], m: i64[:,:], b: bool[:], q: fixed[:], u: ulog[:],
                z: complex[:], h: f32[:], k: i32[:])
    @routine begin
        t ← zeros(f64, 3)
        t[1] += x[0] * 2.0
    end
    @safe print("x", x, "m", m, b, q, u, z, h, k)
    @safe show(t, x[1], m)
    y! += t[1]
    ~@routine
end

function looped!(y!: f64, x: f64[:,:])
    for i = 0:size(x, 0) - 1
        @safe show(i, x)
        y! += x[i, 0]
        x[i, 0] += 1.0
    end
end

function main()
    a ← [1.0, 2.5, -3.0]
    mm ← [[1, 2], [3, 4]]
    r ← 0.0
    shown!(r, a, mm, [true, false], [fixed(0.5), fixed(-1.25)], [ulog(2.0), ulog(0.5)],
           [1.0 + 2.0im, -1.0im], [f32(0.1), f32(-2.0)], [i32(7), i32(-8)])
    @safe print(a, mm)
end
"""

X = np.array([1.0, 2.5, -3.0])
M = np.array([[1, 2], [3, 4]], dtype=np.int64)


def printed(call) -> tuple:
    out = io.StringIO()
    with redirect_stdout(out):
        result = call()
    return out.getvalue(), result


def modules():
    return rlang.loads(SOURCE), rlang.loads(SOURCE, backend="llvm")


def shown_args(x=X, m=M):
    return [0.0, x, m, np.array([True, False]), rlang.fixed_array([0.5, -1.25]),
            rlang.ulog_array([2.0, 0.5]),
            np.array([1 + 2j, -1j]), np.array([0.1, -2.0], dtype=np.float32),
            np.array([7, -8], dtype=np.int32)]


def test_main_prints_the_interpreters_lines():
    interp, llvm = modules()
    want, _ = printed(interp.run_main)
    got, _ = printed(llvm.run_main)
    assert got == want
    assert "[1.0 + 2.0im, -0.0 - 1.0im]" in got and "[[1, 2], [3, 4]]" in got
    assert "[true, false]" in got and "[0.5, -1.25]" in got


@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
def test_layouts_print_their_elements_in_index_order(layout):
    x = {"contiguous": X, "strided": np.array([1.0, 9.0, 2.5, 9.0, -3.0])[::2],
         "reversed": X[::-1].copy()[::-1]}[layout]
    m = {"contiguous": M, "strided": M.T.copy().T,
         "reversed": M[::-1, ::-1].copy()[::-1, ::-1]}[layout]
    assert layout == "contiguous" or not (x.flags.c_contiguous and m.flags.c_contiguous)
    interp, llvm = modules()
    want, outputs = printed(lambda: interp["shown!"](*shown_args(X, M)))
    got, outputs_llvm = printed(lambda: llvm["shown!"](*shown_args(x, m)))
    assert got == want
    assert outputs_llvm[0] == outputs[0] == 2.0


def test_the_inverse_and_the_gradient_pass_print_as_the_interpreter_does():
    interp, llvm = modules()
    want, forward = printed(lambda: interp["shown!"](*shown_args()))
    got, forward_llvm = printed(lambda: llvm["shown!"](*shown_args()))
    assert got == want
    want, _ = printed(lambda: (~interp["shown!"])(*forward))
    got, _ = printed(lambda: (~llvm["shown!"])(*forward_llvm))
    assert got == want
    x = np.repeat(X.reshape(3, 1), 2, axis=1)
    want, grads = printed(lambda: rlang.gradient(interp["looped!"], [0.0, x.copy()], "y!"))
    got, grads_llvm = printed(lambda: rlang.gradient(llvm["looped!"], [0.0, x.copy()], "y!"))
    assert got == want and got.count("\n") == 6
    assert np.array_equal(grads_llvm[1], grads[1])


def test_empty_arrays_print_as_empty_lists():
    source = "function f(y!: f64, x: f64[:], m: f64[:,:])\n    @safe show(x, m)\nend\n"
    interp, llvm = rlang.loads(source), rlang.loads(source, backend="llvm")
    args = [0.0, np.zeros(0), np.zeros((2, 0))]
    want, _ = printed(lambda: interp.f(*args))
    got, _ = printed(lambda: llvm.f(*args))
    assert got == want == "x = [], m = [[], []]\n"
