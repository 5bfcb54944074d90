"""LANGUAGE.md §13: integer or narrower float arrays for a wider float parameter are
converted when the function only reads them; an array it writes must already have
the parameter's element type; arrays are never narrowed (Note [Widening read-only
arrays] in rlang/values.py).  On every backend, for calls and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function norm(a: f64[:], y: f64)
    for i = 0:length(a) - 1
        y += a[i] * a[i]
    end
end
function scale!(a: f64[:], s: f64)
    for i = 0:length(a) - 1
        a[i] += s
    end
end
function narrow(a: f32[:], y: f32)
    y += a[0]
end
function ints(a: i64[:], k: i64)
    k += a[0]
end
function anything(a, y)
    y += a[0]
end
"""
BACKENDS = ["interp", "llvm"]
WIDER = [np.int64, np.int32, np.int8, np.uint16, np.uint64, np.float32, np.float16, ">f8"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", WIDER, ids=str)
def test_a_read_only_array_is_widened(backend, dtype):
    m = rlang.loads(SOURCE, backend=backend)
    a = np.array([1, 2, 3]).astype(dtype)
    before = a.copy()
    assert m.norm(a, 0.5)[1] == 14.5
    assert rlang.gradient(m.norm, [a, 0.5], loss="y")[0].tolist() == [2.0, 4.0, 6.0]
    assert a.dtype == np.dtype(dtype) and np.array_equal(a, before)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.int64, np.float32, ">f8"], ids=str)
def test_a_written_array_must_have_the_parameters_type(backend, dtype):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="argument `a` of `scale!` must be an f64"):
        m.scale_(np.array([1, 2, 3]).astype(dtype), 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("array, function", [
    (np.array([1.0, 2.0]), "narrow"),                       # f64 → f32 narrows
    (np.array([1.0 + 0j]), "norm"),                          # complex → f64
    (np.array([True, False]), "norm"),                       # bools are not numbers
    (np.array([1, 2], dtype=np.uint64), "ints"),             # uint64 → i64 is not safe
    (np.array([1.0, 2.0]), "ints"),                          # floats are not integers
], ids=["f64 for f32", "complex for f64", "bool for f64", "uint64 for i64", "f64 for i64"])
def test_arrays_are_never_narrowed(backend, array, function):
    m = rlang.loads(SOURCE, backend=backend)
    first = 0.0 if function in ("narrow", "norm") else 0
    with pytest.raises(rlang.RlangTypeError, match=f"argument `a` of `{function}`"):
        m[function](array, first)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_i32_array_widens_to_i64(backend):
    m = rlang.loads(SOURCE, backend=backend)
    assert m.ints(np.array([7, 8], dtype=np.int32), 1)[1] == 8


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, ">f8"], ids=str)
def test_a_generic_parameter_refuses_dtypes_rev_has_no_type_for(backend, dtype):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="argument `a` of `anything`"):
        m.anything(np.array([1, 2]).astype(dtype), 0.0)
