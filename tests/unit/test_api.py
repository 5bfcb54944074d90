"""The Python API (rlang/api.py; LANGUAGE.md §9): `rlang.load`, `rlang.loads`, calling
functions and their inverses, results, and the errors a Python caller sees.
"""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.values import Stack

SOURCE = """
function multiplier(y!, a, b)
    y! += a * b
end
function scale!(v!: f64[:], k: f64)
    for i = 0:length(v!) - 1
        v![i] += k * i
    end
end
function typed(x!: f64, n: i64, flag!: bool, z!: complex)
    x! += 1.0
    FLIP(flag!)
    z! += 1.0im
end
function grid!(m!: i64[:,:])
    m![1, 0] += 5
end
function push(s!: stack{i64}, x!)
    PUSH(s!, x!)
end
"""


@pytest.fixture(scope="module")
def m():
    return rlang.loads(SOURCE)


def test_load_a_file_and_run_the_spec_example(repo):
    m = rlang.load(repo / "examples" / "multiplier.rev")
    assert m.multiplier(2.0, 3.0, 5.0) == (17.0, 3.0, 5.0)
    assert (~m.multiplier)(17.0, 3.0, 5.0) == (2.0, 3.0, 5.0)
    assert m.multiplier(2, 3, 5) == (17, 3, 5)
    assert m.run_main() == [("y", 17), ("a", 3), ("b", 5), ("z", 85)]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_calling_main_returns_its_arguments_on_every_backend(repo, backend):
    # llvm gave main's store back from `m.main()`; a call returns the (no) arguments
    m = rlang.load(repo / "examples" / "multiplier.rev", backend=backend)
    assert m.main() == ()
    assert m.run_main() == [("y", 17), ("a", 3), ("b", 5), ("z", 85)]


def test_load_accepts_a_string_path(repo):
    m = rlang.load(str(repo / "examples" / "multiplier.rev"))
    assert "multiplier" in m.functions and "main" in m.functions


def test_results_are_tuples_of_python_scalars(m):
    result = m.typed(1.0, 7, False, 1 + 2j)
    assert isinstance(result, tuple)
    assert result == (2.0, 7, True, 1 + 3j)
    assert [type(v) for v in result] == [float, int, bool, complex]
    ints = m.multiplier(2, 3, 5)
    assert [type(v) for v in ints] == [int, int, int]


def test_an_int_is_accepted_for_a_float_or_complex_parameter(m):
    result = m.typed(1, 7, True, 2)
    assert result == (2.0, 7, False, 2 + 1j)
    assert [type(v) for v in result] == [float, int, bool, complex]


def test_numpy_arrays_are_updated_in_place_and_returned(m):
    v = np.zeros(4)
    result = m.scale_(v, 2.0)
    assert result[0] is v
    assert v.tolist() == [0.0, 2.0, 4.0, 6.0]
    back = (~m.scale_)(v, 2.0)
    assert back[0] is v
    assert v.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_a_strided_view_is_updated_in_place(m):
    base = np.zeros(8)
    view = base[::2]
    m.scale_(view, 1.0)
    assert base.tolist() == [0.0, 0.0, 1.0, 0.0, 2.0, 0.0, 3.0, 0.0]


def test_lists_are_accepted_and_converted_to_arrays(m):
    (v, k) = m.scale_([1.0, 1.0, 1.0], 1.0)
    assert isinstance(v, np.ndarray) and v.dtype == np.float64
    assert v.tolist() == [1.0, 2.0, 3.0]
    (grid,) = m.grid_([[1, 2], [3, 4]])
    assert grid.dtype == np.int64 and grid.tolist() == [[1, 2], [8, 4]]


def test_a_list_of_ints_for_a_float_array_parameter_becomes_floats(m):
    (v, _) = m.scale_([0, 0], 0.5)
    assert v.dtype == np.float64 and v.tolist() == [0.0, 0.5]


def test_stacks_are_passed_and_updated_in_place(m):
    s = Stack("i64", [1])
    result = m.push(s, 5)
    assert result[0] is s and s.items == [1, 5] and result[1] == 0


def test_inverse_with_tilde(m):
    f = m.multiplier
    inverse = ~f
    assert inverse(17, 3, 5) == (2, 3, 5)
    assert (~inverse)(2, 3, 5) == (17, 3, 5)
    assert "~multiplier" in repr(inverse)


def test_bang_names_are_reachable_by_item_and_underscore(m):
    assert m["scale!"].name == "scale!"
    assert m.scale_.name == "scale!"
    v = np.zeros(2)
    m["scale!"](v, 1.0)
    assert v.tolist() == [0.0, 1.0]
    assert (~m["scale!"])(v, 1.0)[0].tolist() == [0.0, 0.0]
    assert "scale_" in dir(m)


def test_unknown_functions(m):
    with pytest.raises(AttributeError, match="nope"):
        m.nope
    with pytest.raises(KeyError):
        m["nope"]


def test_invcheck_false_for_every_call():
    source = "function f(x!)\n    n ← 1.0\n    x! += n\n    n → 0.0\nend\n"
    with pytest.raises(rlang.ReversibilityError):
        rlang.loads(source).f(1.0)
    m = rlang.loads(source, invcheck=False)
    assert m.f(1.0) == (2.0,)


def test_invcheck_false_with_load(repo, tmp_path, write_rev):
    path = write_rev(tmp_path, "leak.rev", """
        function f(x!)
            n ← 1.0
            x! += n
            n → 0.0
        end
    """)
    with pytest.raises(rlang.ReversibilityError):
        rlang.load(path).f(1.0)
    assert rlang.load(path, invcheck=False).f(1.0) == (2.0,)


@pytest.mark.parametrize("source, word", [
    ("function f(x!)\n    x! += x! * 2\nend\n", "right-hand side"),
    ("function f(x!)\n    g(x!)\nend\n", "g"),
    ("function f(x!)\n    t ← 1\nend\n", "t"),
])
def test_static_errors_are_raised_at_load_as_check_errors(source, word):
    with pytest.raises(rlang.CheckErrors) as info:
        rlang.loads(source)
    error = info.value
    assert isinstance(error, rlang.CheckError) and isinstance(error, rlang.RlangError)
    assert word in str(error)
    assert error.errors and all(isinstance(e, rlang.CheckError) for e in error.errors)
    assert error.span.line == 2


def test_every_static_error_is_reported_at_once():
    with pytest.raises(rlang.CheckErrors) as info:
        rlang.loads("function f(x!)\n    x! += x!\n    y → 1\nend\n")
    assert [e.span.line for e in info.value.errors] == [2, 3]


def test_parse_errors_are_rlang_errors():
    with pytest.raises(rlang.ParseError) as info:
        rlang.loads("function f(x!)\n    x! += )\nend\n")
    assert isinstance(info.value, rlang.RlangError)
    assert info.value.span.line == 2


def test_loads_names_the_file_in_errors():
    with pytest.raises(rlang.RlangError) as info:
        rlang.loads("function f(x!)\n    x! += )\nend\n", file="mine.rev")
    assert info.value.span.file == "mine.rev"
    assert info.value.render().startswith("mine.rev:2:")


@pytest.mark.parametrize("cls", [rlang.ParseError, rlang.CheckError, rlang.CheckErrors,
                                 rlang.RlangTypeError, rlang.ReversibilityError,
                                 rlang.RlangRuntimeError])
def test_every_error_class_is_an_rlang_error(cls):
    assert issubclass(cls, rlang.RlangError)
    assert issubclass(cls, Exception)


def test_internal_error_is_not_a_user_error():
    assert not issubclass(rlang.InternalError, rlang.RlangError)


@pytest.mark.parametrize("args", [
    ("x", 1, False, 0j), (1.0, 1.5, False, 0j), (1.0, 1, 1, 0j), (1.0, 1, False, "z"),
    (True, 1, False, 0j), (1.0, 1, False, [1.0]),
])
def test_wrong_argument_types_are_type_errors(m, args):
    with pytest.raises(rlang.RlangTypeError):
        m.typed(*args)


@pytest.mark.parametrize("value", [np.zeros(3, dtype=np.float32), np.zeros((2, 2)),
                                   np.zeros(3, dtype=np.int64), 1.0, [[1.0]]])
def test_wrong_array_arguments_are_type_errors(m, value):
    with pytest.raises(rlang.RlangTypeError):
        m.scale_(value, 1.0)


def test_wrong_argument_count_is_a_type_error(m):
    with pytest.raises(rlang.RlangTypeError, match="3 argument"):
        m.multiplier(1, 2)


def test_an_error_leaves_the_module_usable(m):
    with pytest.raises(rlang.RlangTypeError):
        m.typed("x", 1, False, 0j)
    assert m.multiplier(2, 3, 5) == (17, 3, 5)


def test_unknown_backend_is_refused():
    with pytest.raises(rlang.RlangError, match="backend"):
        rlang.loads(SOURCE, backend="nope")


def test_functions_lists_the_functions_and_params(m):
    assert m.functions == ["multiplier", "scale!", "typed", "grid!", "push"]
    assert m.multiplier.params == ["y!", "a", "b"]


def test_none_argument_is_a_type_error(m):
    with pytest.raises(rlang.RlangTypeError):
        m.multiplier(None, 3, 5)


def test_an_int_outside_i64_is_refused(m):
    with pytest.raises(rlang.RlangTypeError):
        m.multiplier(2 ** 70, 3, 5)


def test_written_arguments_of_a_python_call_must_not_alias():
    m = rlang.loads("function f(x!: f64[:], y!: f64[:])\n    x![0] += 1.0\n    y![1] += 1.0\n"
                    "end\nfunction g(x!: f64[:], y!: f64[:])\n    f(x!, y!)\nend\n")
    a = np.zeros(2)
    with pytest.raises(rlang.ReversibilityError, match="same memory"):
        m.g(a, a)           # the inner call f(x!, y!) is checked …
    with pytest.raises(rlang.ReversibilityError):
        m.f(a, a)           # … the call from Python is not


def test_numpy_scalars_are_accepted_as_scalars(m):
    assert m.multiplier(np.float64(2.0), 3.0, 5.0) == (17.0, 3.0, 5.0)
    assert m.multiplier(np.int64(2), 3, 5) == (17, 3, 5)


def test_an_integer_beyond_i64_is_refused_as_what_it_is():
    m = rlang.loads("function k(x: i64)\nend\n")
    with pytest.raises(rlang.RlangTypeError, match=r"must be an i64, got an integer "
                       r"outside i64, 9223372036854775808"):
        m.k(2 ** 63)
