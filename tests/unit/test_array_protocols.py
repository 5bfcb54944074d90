"""Arrays by protocol (LANGUAGE.md §13; Note [Host arrays], rlang/values.py): an
object with `__dlpack__` alone is a view of its host memory; a device array
(`__cuda_array_interface__`) that cannot reach the host is refused with a note."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function total(y!, x: f64[:])
    for i = 0:length(x) - 1
        y! += x[i]
    end
end

function bump(x!: f64[:])
    x![0] += 1.0
end
"""


class DLPackOnly:
    """An array exchanged by DLPack alone (as a framework's tensor may be)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class DeviceOnly:
    """A device array no GPU backs: its memory cannot be read from the host."""

    __cuda_array_interface__ = {"shape": (2,), "typestr": "<f8", "data": (0, False),
                                "version": 3}


@pytest.fixture(params=["interp", "llvm"])
def m(request):
    return rlang.loads(SOURCE, backend=request.param)


def test_a_dlpack_array_is_read_and_written_in_place(m):
    data = np.array([1.0, 2.0, 4.0])
    assert m.total(0.0, DLPackOnly(data))[0] == 7.0
    m.bump(DLPackOnly(data))
    assert data[0] == 2.0                       # the caller's memory


def test_a_device_array_the_host_cannot_read_is_refused_with_a_note(m):
    with pytest.raises(rlang.RlangTypeError) as caught:
        m.bump(DeviceOnly())
    assert "must be an f64[:]" in caught.value.message
    assert any("device array" in note for note in caught.value.notes)


@pytest.mark.parametrize("array, named", [
    (np.array([1.0, None]), "a NumPy array of Python objects [1.0, None]"),
    (np.array(["a", "b"]), "a NumPy array of strings [a, b]"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "a NumPy array of dtype datetime64[D]"),
])
def test_an_array_of_a_dtype_rev_has_no_type_for_is_named_by_its_dtype(m, array, named):
    with pytest.raises(rlang.RlangTypeError, match=r"must be an f64\[:\], got " + named.replace(
            "[", r"\[").replace("]", r"\]")):
        m.total(0.0, array)
