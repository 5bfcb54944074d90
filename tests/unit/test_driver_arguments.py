"""Derivative drivers take their arguments as a call does (`Interpreter.bind_arguments`),
on every backend, and strange Python values are refused cleanly (issue #23: found by
tests/fuzz's `argument` family)."""
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
function fixed_add(q: fixed, r: fixed)
    r += q
end
function generic(x, y)
    y += x
end
function ulog_mul(l: ulog, r: ulog)
    r *= l
end
"""
BACKENDS = ["interp", "llvm"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hessian_converts_arguments_as_a_call_does(backend):
    """An np.int8 for an f64 parameter is an f64 input of the Hessian (it was left out
    on the interpreter, so the matrices differed in size)."""
    m = rlang.loads(SOURCE, backend=backend)
    h = rlang.hessian(m.norm, [np.array([1.0, 2.0, 3.0]), np.int8(-3)], loss="y")
    assert h.shape == (4, 4)
    assert np.array_equal(h[:3, :3], 2 * np.eye(3))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("driver", ["hessian", "gradient", "jacobian", "check_grad"])
@pytest.mark.parametrize("bad", [{"a": 1}, memoryview(b"abc"), 2 ** 64, b"\x00"],
                         ids=["dict", "memoryview", "huge int", "bytes"])
def test_a_driver_refuses_what_a_call_refuses(backend, driver, bad):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="argument `r` of `fixed_add`"):
        if driver == "jacobian":
            rlang.jacobian(m.fixed_add, [rlang.Fixed.from_value(1.0), bad])
        else:
            getattr(rlang, driver)(m.fixed_add, [rlang.Fixed.from_value(1.0), bad], loss="r")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_driver_checks_the_number_of_arguments(backend):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="takes 2 argument"):
        rlang.hessian(m.ulog_mul, [rlang.ULog.from_value(2.0)], loss="r")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_ragged_list_is_refused_by_a_jacobian(backend):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError):
        rlang.jacobian(m.norm, [[[1.0], [2.0, 3.0]], 0.0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [np.float64, np.array([1.0, -2.0], dtype=object),
                                 np.array(1.0, dtype=object)],
                         ids=["a class", "object array", "0-d object array"])
def test_classes_and_object_arrays_are_refused(backend, bad):
    """`np.float64` itself has an `__array__` (np.asarray of it is a 0-d object array
    holding the class: this recursed until the stack ran out)."""
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="argument `a` of `norm`"):
        m.norm(bad, 0.0)


def test_a_hessian_refuses_a_complex_into_a_float():
    """On dual numbers as on floats: a complex cannot accumulate into an f64."""
    m = rlang.loads(SOURCE, backend="interp")
    with pytest.raises(rlang.RlangTypeError, match="cannot accumulate a complex"):
        rlang.hessian(m.generic, [1 + 0j, 1.5], loss="y")


WRITES = """
function scale!(a: f64[:], s: f64)
    for i = 0:length(a) - 1
        a[i] += s
    end
end
function norm(a: f64[:], y: f64)
    y += a[0] * a[0]
end
"""


def _read_only(values):
    array = np.array(values)
    array.flags.writeable = False
    return array


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("driver", ["gradient", "hessian", "check_grad"])
def test_a_read_only_array_for_a_written_parameter_is_refused_by_every_driver(backend, driver):
    """The interpreter's Hessian works on copies and took it; llvm refused it."""
    m = rlang.loads(WRITES, backend=backend)
    with pytest.raises(rlang.RlangTypeError, match="is a read-only array"):
        getattr(rlang, driver)(m.scale_, [_read_only([1.0, 2.0]), 0.5], loss="s")


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_grad_takes_a_read_only_array_the_function_only_reads(backend):
    """Its finite differences shifted the caller's read-only array in place."""
    m = rlang.loads(WRITES, backend=backend)
    a = _read_only([1.0, 2.0])
    assert rlang.check_grad(m.norm, [a, 0.0], loss="y")
    assert a.tolist() == [1.0, 2.0]


def test_a_file_name_with_a_nul_byte_is_an_error(cli):
    code, _, err = cli("run", "x\x00y.rev")
    assert code == 1 and "contains a NUL byte" in err and "internal error" not in err

def test_check_grad_takes_a_one_sided_difference_at_the_edge_of_a_number_system():
    """A ulog at 0 cannot be shifted below 0 (check_grad raised Python's ValueError:
    fuzz seed 4001 case 27118); the difference is taken on the side it can be."""
    m = rlang.loads("function f(y: f64, a: ulog, q: fixed)\n"
                    "    y += f64(a) * 3.0 + f64(q) * 2.0\nend\n")
    top = rlang.Fixed.from_value(1048575.9999)
    assert rlang.check_grad(m.f, (0.0, 0.5, top), loss="y", step=1e-3)
    with pytest.raises(rlang.RlangError, match="at `a`: analytic nan, finite difference (3.0|2.99)"):
        rlang.check_grad(m.f, (0.0, 0.0, 0.5), loss="y")  # d/da through log(a) at 0


def test_check_grad_fails_a_nan_gradient_against_a_finite_difference():
    """sqrt(x * x) at 0: the chain rule gives 0 / 0, the difference 0 (a nan passed
    every comparison, so check_grad said they agreed)."""
    m = rlang.loads("function f(y: f64, x: f64)\n    y += sqrt(x * x)\nend\n")
    with pytest.raises(rlang.RlangError, match="at `x`: analytic nan, finite difference 0.0"):
        rlang.check_grad(m.f, (0.0, 0.0), loss="y")
