"""rlang: the rev reversible programming language (see LANGUAGE.md).

Public API: `load`, `loads` (programs whose functions are callable and invertible
with `~`), and the error classes.  Importing rlang is cheap: it does not import any
backend's compiler, and the AD machinery only when a gradient is asked for.
"""
from .api import Function, Module, Sandbox, load, loads
from .errors import (CheckError, CheckErrors, InternalError, LimitExceeded, ParseError,
                     ReversibilityError, RlangError, RlangRuntimeError, RlangTypeError)
from .numbers import (F32, I32, Fixed, FixedArray, ULog, ULogArray, fixed_array, to_floats,
                      ulog_array)

__version__ = "0.1.0"

_AD = ("gradient", "check_grad", "jacobian", "hessian")


def __getattr__(name: str):
    """The AD drivers (rlang/ad/drivers.py), imported on first use: a plain run needs none."""
    if name in _AD:
        from .ad import drivers as ad

        value = globals()[name] = getattr(ad, name)     # later uses find it directly
        return value
    raise AttributeError(f"module 'rlang' has no attribute {name!r}")

__all__ = ["load", "loads", "gradient", "check_grad", "jacobian", "hessian", "Module", "Function",
           "Sandbox", "LimitExceeded", "RlangError", "ParseError", "CheckError",
           "CheckErrors", "RlangTypeError", "ReversibilityError", "RlangRuntimeError",
           "InternalError", "Fixed", "ULog", "I32", "F32", "FixedArray", "ULogArray",
           "fixed_array", "ulog_array", "to_floats", "__version__"]
