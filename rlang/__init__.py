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
from .threads import get_num_threads, set_num_threads
from .values import Stack

__version__ = "0.1.0"

_AD = ("gradient", "check_grad", "jacobian", "hessian", "hvp", "hessian_diag", "jvp", "vjp")
_TRANSFORMS = ("grad", "value_and_grad", "jacrev")
#: the optional parts: (module, what it needs, the package whose absence says so, extra)
_OPTIONAL = {"jax": (".bridges.jax", "JAX", "jax"),
             "torch": (".bridges.torch", "PyTorch", "torch"),
             "dask": (".dask", "Dask's distributed", "distributed")}


def __getattr__(name: str):
    """The AD drivers (rlang/ad/drivers.py), the function transforms
    (rlang/transforms.py, rlang/batching.py) and the bridges, imported on first use: a
    plain run needs none of them."""
    if name in _OPTIONAL:     # the bridges (rlang/bridges/), clusters (rlang/dask.py)
        import importlib

        module, needs, package = _OPTIONAL[name]
        try:
            value = importlib.import_module(module, __name__)
        except ModuleNotFoundError as error:
            if error.name != package:
                raise
            raise ImportError(f"rlang.{name} needs {needs}, which is not "
                              f"installed: pip install \"rlang[{name}]\"") from None
        globals()[name] = value
        return value
    if name == "cuda":                  # the cuda backend's counters (rlang/cuda.py)
        import importlib

        value = globals()[name] = importlib.import_module(".cuda", __name__)
        return value
    if name == "vmap":                  # batches (rlang/batching.py)
        from .batching import vmap

        value = globals()[name] = vmap
        return value
    if name in _AD or name in _TRANSFORMS:
        if name in _AD:
            from .ad import drivers as source
        else:
            from . import transforms as source
        value = globals()[name] = getattr(source, name)     # later uses find it directly
        return value
    raise AttributeError(f"module 'rlang' has no attribute {name!r}")

__all__ = ["load", "loads", "gradient", "check_grad", "jacobian", "hessian", "hvp",
           "hessian_diag", "jvp", "vjp", "grad", "vmap", "set_num_threads", "get_num_threads",
           "value_and_grad", "jacrev", "Module", "Function",
           "Sandbox", "LimitExceeded", "RlangError", "ParseError", "CheckError",
           "CheckErrors", "RlangTypeError", "ReversibilityError", "RlangRuntimeError",
           "InternalError", "Stack", "Fixed", "ULog", "I32", "F32", "FixedArray", "ULogArray",
           "fixed_array", "ulog_array", "to_floats", "__version__"]
