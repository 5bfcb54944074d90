"""The IR types of Python argument values (rlang/lower/argument_types.py).

`type_of_value` decides which specialisation a compiled call runs: scalars by their
Python (or rlang) class, arrays by element type, rank and whether their last axis is
contiguous (Note [Unit-stride arrays], rlang/ir/nodes.py), stacks by element type;
anything else is refused with BackendUnsupported (the interpreter runs it under
"auto").  `signature_of` is the cache key of the fast binding path: it must tell
apart the arguments that bind differently, and give None where an argument needs
converting or range-checking on every call.
"""
from __future__ import annotations

import numpy as np
import pytest

from rlang.ir import nodes as ir
from rlang.lower.argument_types import signature_of, type_of_value
from rlang.numbers import F32, I32, Fixed, ULog, fixed_array, ulog_array
from rlang.types_rules import BackendUnsupported
from rlang.values import Stack


@pytest.mark.parametrize("value, expected", [
    (True, "bool"), (False, "bool"),            # a bool is an int: bool first
    (3, "i64"), (-(1 << 62), "i64"),
    (I32(3), "i32"),                            # an I32 is an int: i32 first
    (2.5, "f64"),
    (F32(2.5), "f32"),                          # an F32 is a float: f32 first
    (1 + 2j, "complex"),
    (Fixed.from_value(0.5), "fixed"),
    (ULog.from_value(2.0), "ulog"),
])
def test_scalars_by_class(value, expected):
    assert type_of_value(value) == expected


@pytest.mark.parametrize("dtype, elem", [
    (np.float64, "f64"), (np.float32, "f32"), (np.int64, "i64"), (np.int32, "i32"),
    (np.bool_, "bool"), (np.complex128, "complex"),
])
def test_arrays_by_element_type(dtype, elem):
    assert type_of_value(np.zeros(3, dtype=dtype)) == ir.ArrayType(elem, 1, unit_stride=True)


def test_arrays_by_rank():
    assert type_of_value(np.zeros((2, 3))) == ir.ArrayType("f64", 2, unit_stride=True)
    assert type_of_value(np.zeros((2, 3, 4), dtype=np.int32)) == \
        ir.ArrayType("i32", 3, unit_stride=True)


def test_a_strided_last_axis_is_not_unit_stride():
    matrix = np.arange(12.0).reshape(3, 4)
    assert type_of_value(matrix[:, ::2]) == ir.ArrayType("f64", 2, unit_stride=False)
    assert type_of_value(matrix.T) == ir.ArrayType("f64", 2, unit_stride=False)
    # a column slice of a C-ordered matrix: rows apart, but each row contiguous
    assert type_of_value(matrix[1:, 1:]) == ir.ArrayType("f64", 2, unit_stride=True)
    assert type_of_value(np.arange(10.0)[::3]).unit_stride is False


def test_the_layout_fact_is_ignored_by_the_language_types():
    strided = type_of_value(np.arange(6.0)[::2])
    plain = type_of_value(np.arange(3.0))
    assert strided != plain
    assert ir.kind(strided) == ir.kind(plain) == ir.ArrayType("f64", 1)


def test_number_system_arrays_by_their_class():
    assert type_of_value(fixed_array([0.5, 1.5])) == ir.ArrayType("fixed", 1, unit_stride=True)
    assert type_of_value(ulog_array([1.0, 2.0])) == ir.ArrayType("ulog", 1, unit_stride=True)
    # the same memory as a plain array is its dtype's type
    assert type_of_value(np.asarray(fixed_array([0.5]))) == ir.ArrayType("i64", 1, True)


def test_a_memory_map_is_an_array(tmp_path):
    path = tmp_path / "data.bin"
    mapped = np.memmap(path, dtype=np.float64, mode="w+", shape=(4,))
    try:
        assert type_of_value(mapped) == ir.ArrayType("f64", 1, unit_stride=True)
    finally:
        del mapped


@pytest.mark.parametrize("elem", ["f64", "i64", "bool", "complex", "fixed", "ulog"])
def test_stacks_by_element_type(elem):
    assert type_of_value(Stack(elem, [])) == ir.StackType(elem)


class Tagged(np.ndarray):
    """An ndarray subclass rlang knows nothing about (as np.matrix is one)."""


def test_array_subclasses_that_are_not_their_memory_are_refused():
    with pytest.raises(BackendUnsupported, match=r"np\.asarray") as raised:
        type_of_value(np.zeros(2).view(Tagged))
    assert "Tagged" in raised.value.message
    with pytest.raises(BackendUnsupported, match="numpy.ma"):
        type_of_value(np.ma.masked_array([1.0, 2.0], mask=[False, True]))


@pytest.mark.parametrize("value", [
    [1.0, 2.0],                                 # a list: the interpreter converts it
    np.zeros(()),                               # a 0-d array
    np.zeros(3, dtype=np.uint8),                # an element type rev does not have
    "text",
    None,
])
def test_other_values_are_refused(value):
    with pytest.raises(BackendUnsupported, match="the llvm backend"):
        type_of_value(value)


def test_refusals_name_the_backend():
    with pytest.raises(BackendUnsupported, match="the cuda backend"):
        type_of_value([1.0], backend="cuda")


# --------------------------------------------------------------- signature_of

def test_signatures_of_plain_scalars_are_their_classes():
    assert signature_of([1.0, 2, True, I32(1), F32(1.0)]) == (float, int, bool, I32, F32)
    assert signature_of([]) == ()


def test_signatures_tell_apart_what_binds_differently():
    assert signature_of([1.0]) != signature_of([F32(1.0)])
    assert signature_of([1]) != signature_of([I32(1)])
    assert signature_of([1]) != signature_of([True])
    a = np.arange(6.0)
    assert signature_of([a]) == ((np.dtype(np.float64), 1, True),)
    assert signature_of([a[::2]]) == ((np.dtype(np.float64), 1, False),)
    assert signature_of([a.reshape(2, 3)]) == ((np.dtype(np.float64), 2, True),)
    assert signature_of([a.astype(np.float32)]) == ((np.dtype(np.float32), 1, True),)


def test_a_signature_agrees_with_the_unit_stride_fact_of_type_of_value():
    for array in (np.zeros((3, 4)), np.zeros((3, 4))[:, ::2], np.zeros((3, 4)).T):
        (dtype, ndim, unit), = signature_of([array])
        assert (ndim, unit) == (type_of_value(array).ndim, type_of_value(array).unit_stride)


@pytest.mark.parametrize("args", [
    [1 << 63],                  # beyond i64: converted (and range-checked) every call
    [-(1 << 63) - 1],
    [[1.0, 2.0]],               # a list
    [np.float64(1.0)],          # a NumPy scalar
    [1.0, np.int64(2)],         # one general argument makes the whole call general
    [np.zeros(2).view(Tagged)],
])
def test_arguments_needing_conversion_have_no_signature(args):
    assert signature_of(args) is None


def test_the_i64_range_has_signatures():
    assert signature_of([(1 << 63) - 1, -(1 << 63)]) == (int, int)
