"""rlang: the rev reversible programming language (see LANGUAGE.md).

Public API: `load`, `loads` (programs whose functions are callable and invertible
with `~`), and the error classes.  Importing rlang is cheap: it does not import any
backend's compiler.
"""
from .api import Function, Module, load, loads
from .errors import (CheckError, CheckErrors, InternalError, ParseError, ReversibilityError,
                     RlangError, RlangRuntimeError, RlangTypeError)

__version__ = "0.1.0"

__all__ = ["load", "loads", "Module", "Function", "RlangError", "ParseError", "CheckError",
           "CheckErrors", "RlangTypeError", "ReversibilityError", "RlangRuntimeError",
           "InternalError", "__version__"]
