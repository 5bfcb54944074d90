"""The Python API (LANGUAGE.md §9): `load`, `loads`, and callable functions.

    m = rlang.load("f.rev")                 # parse, include, check
    m.multiplier(2.0, 3.0, 5.0)             # -> (17.0, 3.0, 5.0)
    (~m.multiplier)(17.0, 3.0, 5.0)         # the inverse
    m["name!"], m.name_                     # functions whose names end in `!`

Scalars come back as Python int / float / complex / bool; NumPy arrays are
updated in place and returned; lists are converted to arrays.  Static errors are
raised by `load` as `CheckErrors`; run-time errors as the matching `RlangError`.
"""
from __future__ import annotations

from .check import check
from .deep import run_deep
from .errors import RlangError
from .interp import Interpreter
from .loader import load_unit, loads_unit

BACKENDS = ("interp", "llvm", "cuda")


def load(path: str, backend: str = "interp", invcheck: bool = True) -> "Module":
    """Load, include and check the program in `path`."""
    return Module(load_unit(str(path)), backend, invcheck)


def loads(source: str, backend: str = "interp", invcheck: bool = True,
          file: str = "<string>") -> "Module":
    """Like `load`, from source text."""
    return Module(loads_unit(source, file), backend, invcheck)


class Module:
    """A loaded program; its functions are attributes (and items)."""

    def __init__(self, unit, backend: str = "interp", invcheck: bool = True):
        if backend not in BACKENDS:
            raise RlangError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        check(unit)
        self.unit = unit
        self.backend = backend
        self.invcheck = invcheck
        self.interpreter = Interpreter(unit, invcheck=invcheck)
        self.compiled = None
        if backend == "llvm":
            from .backends.llvm import LlvmFunctions     # imports llvmlite: only here

            self.compiled = LlvmFunctions(unit, invcheck, self.interpreter)
        elif backend == "cuda":
            from .backends.cuda import CudaFunctions     # imports numba: only here

            self.compiled = CudaFunctions(unit, invcheck, self.interpreter)

    @property
    def functions(self) -> list[str]:
        return list(self.unit.functions)

    def __getitem__(self, name: str) -> "Function":
        if name not in self.unit.functions:
            raise KeyError(name)
        return Function(self, name)

    def __getattr__(self, name: str) -> "Function":
        if name.startswith("__"):
            raise AttributeError(name)
        functions = self.__dict__.get("unit").functions
        if name in functions:
            return Function(self, name)
        if name.endswith("_") and name[:-1] + "!" in functions:
            return Function(self, name[:-1] + "!")
        raise AttributeError(f"the program has no function `{name}`")

    def __dir__(self):
        return list(super().__dir__()) + [n.replace("!", "_") for n in self.unit.functions]

    def run_main(self) -> list:
        """Run `main()`; return its store as (name, value) pairs."""
        if self.compiled is not None:
            return run_deep(self.compiled.run_main)
        return run_deep(self.interpreter.run_main)


class Function:
    """A function of a loaded program; `~f` is its inverse."""

    def __init__(self, module: Module, name: str, inverse: bool = False):
        self.module, self.name, self.inverse = module, name, inverse

    @property
    def params(self) -> list[str]:
        return [p.name for p in self.module.unit.functions[self.name].params]

    def __call__(self, *args) -> tuple:
        compiled = self.module.compiled
        if compiled is not None:
            return tuple(compiled.call(self.name, list(args), self.inverse))
        values = run_deep(self.module.interpreter.call, self.name, list(args), self.inverse)
        return tuple(values)

    def __invert__(self) -> "Function":
        return Function(self.module, self.name, not self.inverse)

    def __repr__(self) -> str:
        return f"<rev function {'~' if self.inverse else ''}{self.name}({', '.join(self.params)})>"
