"""A failed deallocation check of an array ancilla (issue #5, "the same RlangError"):
compiled code records the array's extents and first elements, and the message is
the interpreter's (`t = [...], expected [...]`, long arrays summarized), for every
element type and layout, forward and backward.  `t → [x, 2x]` (checked by
subtracting the literal) still counts the differing elements (docs/backends.md)."""
import numpy as np
import pytest

import rlang

#: A nonzero element of each type, and the update that puts it into a zero.
ELEMENTS = {"f64": ("+=", "1.5"), "i64": ("^=", "3"), "i32": ("^=", "i32(3)"),
            "f32": ("+=", "f32(1.5)"), "bool": ("^=", "true"), "fixed": ("+=", "fixed(1.5)"),
            "ulog": ("*=", "ulog(1.5)"), "complex": ("+=", "1.0 + 2.0im")}


def rendered(module, name, args, inverse=False) -> tuple:
    """(class name, the error's lines without the frames' `with` lines)."""
    function = ~module[name] if inverse else module[name]
    with pytest.raises(rlang.RlangError) as caught:
        function(*args)
    lines = caught.value.render().splitlines()
    return type(caught.value).__name__, [line for line in lines
                                         if not line.lstrip().startswith("with ")]


def same_error(source, name, args, inverse=False) -> list:
    interp = rendered(rlang.loads(source, backend="interp"), name, args, inverse)
    llvm = rendered(rlang.loads(source, backend="llvm"), name, args, inverse)
    assert llvm == interp
    return llvm[1]


@pytest.mark.parametrize("elem", sorted(ELEMENTS))
def test_an_ancilla_left_nonzero(elem):
    update, one = ELEMENTS[elem]
    # a ulog zero stays zero under `*=`: start that one from ones (a constant literal)
    start = "[[ulog(1.0), ulog(1.0), ulog(1.0)], [ulog(1.0), ulog(1.0), ulog(1.0)]]" \
        if elem == "ulog" else f"zeros({elem}, 2, 3)"
    source = f"""
function f(y!: f64)
    t ← {start}
    t[1, 2] {update} {one}
    t → {start}
end
"""
    lines = same_error(source, "f", [0.0])
    assert "expected [[" in lines[0]


def test_long_arrays_are_summarized_as_the_interpreter_does():
    source = """
function f(y!: f64, n: i64)
    t ← zeros(f64, n, 3)
    t[n - 1, 2] += 1.0
    t[0, 1] += 0.5
    t → zeros(f64, n, 3)
end
"""
    lines = same_error(source, "f", [0.0, 5])
    assert "…] (f64[:,:], shape (5, 3))" in lines[0]


@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
def test_a_copy_that_changed(layout):
    source = """
function f(y!: f64, x: f64[:,:])
    t ← x
    t[0, 1] += 1.0
    y! += t[0, 1]
    t → x
end
"""
    x = np.arange(6.0).reshape(2, 3)
    x = {"contiguous": x, "strided": np.asfortranarray(x),
         "reversed": x[::-1, ::-1].copy()[::-1, ::-1]}[layout]
    lines = same_error(source, "f", [0.0, x])
    assert "t = [[0.0, 2.0, 2.0], [3.0, 4.0, 5.0]], expected [[0.0, 1.0, 2.0]" in lines[0]


def test_a_constant_literal_and_the_inverse_direction():
    source = """
function f(y!: f64)
    t ← [[1.0, 2.0], [3.0, 4.0]]
    t[1, 0] -= y!
    t → [[1.0, 2.0], [3.0, 4.0]]
end
"""
    for inverse in (False, True):
        lines = same_error(source, "f", [0.25], inverse)
        assert "t = [[1.0, 2.0], [2.75, 4.0]]" in lines[0] or "[3.25" in lines[0]


def test_a_literal_with_variable_elements_counts_the_differences():
    source = """
function f(y!: f64, x: f64)
    t ← [x, 2.0 * x]
    t[1] += 1.0
    t → [x, 2.0 * x]
end
"""
    interp = rendered(rlang.loads(source, backend="interp"), "f", [0.0, 1.0])
    llvm = rendered(rlang.loads(source, backend="llvm"), "f", [0.0, 1.0])
    assert interp[1][0].endswith("t = [1.0, 3.0], expected [1.0, 2.0]")
    assert llvm[1][0].endswith("t differs from `[x, 2.0 * x]` in 1 element(s)")
    assert llvm[1][1:] == interp[1][1:]


def test_arrays_of_more_axes_than_recorded_count_the_differences():
    dims = ", ".join(["1"] * 8 + ["2"])
    source = f"""
function f(y!: f64)
    t ← zeros(f64, {dims})
    t[{", ".join(["0"] * 9)}] += 1.0
    t → zeros(f64, {dims})
end
"""
    _, lines = rendered(rlang.loads(source, backend="llvm"), "f", [0.0])
    assert lines[0].endswith("t has 1 nonzero element(s), expected all zeros")
