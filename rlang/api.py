"""The Python API (LANGUAGE.md §9): `load`, `loads`, and callable functions.

    m = rlang.load("f.rev")                 # parse, include, check; backend "auto"
    m.multiplier(2.0, 3.0, 5.0)             # -> (17.0, 3.0, 5.0)
    (~m.multiplier)(17.0, 3.0, 5.0)         # the inverse
    m["name!"], m.name_                     # functions whose names end in `!`

Scalars come back as Python int / float / complex / bool; NumPy arrays are
updated in place and returned; lists are converted to arrays.  Static errors are
raised by `load` as `CheckErrors`; run-time errors as the matching `RlangError`.

The default backend is "auto" (or the one named by the environment variable
RLANG_BACKEND): each call runs compiled by the llvm backend where that backend can
run it, and on the interpreter where the llvm backend refuses the function or its
argument types (BackendUnsupported, raised before anything runs) or where llvmlite
is not installed (docs/backends.md, "The default backend").

`sandbox=True` (or `sandbox=rlang.Sandbox(time=…, memory=…, depth=…)`) loads a
program one did not write: includes confined to its directory and std/, and every
run on the interpreter under limits of run time, memory and call depth
(docs/sandbox.md; rlang/interp/limits.py, Note [Sandbox]).
"""
from __future__ import annotations

import os

from .frontend.check_cache import check_loaded
from .deep import run_deep
from .errors import NoSuchFunction, NoSuchFunctionKey, RlangError, RlangTypeError
from .interp.interpreter import DERIVATIVE_RUNNERS, Interpreter
from .interp.limits import Sandbox, as_sandbox
from .frontend.loader import load_unit, loads_unit
from .types_rules import BackendUnsupported, CompiledTypeError

#: The backends `rlang run/grad --backend` chooses from.
BACKENDS = ("interp", "llvm", "cuda")
#: What `load`/`loads` accept: a backend, or "auto" (llvm where it can run, else interp).
API_BACKENDS = BACKENDS + ("auto",)


def _run_derivative(interp, stmt, env) -> None:
    """Run a derivative statement (`grad f(…) wrt … into …`, docs/nested.md) by
    rlang/ad/nested_run.py, imported on the first one: `import rlang` does not load
    the AD machinery."""
    from .ad.nested_run import execute_derivative

    execute_derivative(interp, stmt, env)


DERIVATIVE_RUNNERS.setdefault("run", _run_derivative)


def default_backend() -> str:
    """The backend of `load`/`loads` when none is given: $RLANG_BACKEND, else "auto"."""
    return os.environ.get("RLANG_BACKEND") or "auto"


def load(path: str, backend: str | None = None, invcheck: bool = True,
         sandbox: bool | Sandbox = False) -> "Module":
    """Load, include and check the program in `path` (in a sandbox: `sandbox=True`
    for the default limits, or an `rlang.Sandbox(…)`)."""
    sandbox = as_sandbox(sandbox)
    return Module(load_unit(str(path), confine=sandbox is not None), backend, invcheck,
                  sandbox)


def loads(source: str, backend: str | None = None, invcheck: bool = True,
          file: str = "<string>", sandbox: bool | Sandbox = False) -> "Module":
    """Like `load`, from source text (`file` names it in errors, and in a sandbox
    is the directory includes are confined to; "<string>" allows only std/)."""
    if not isinstance(source, str):
        raise RlangError(f"rlang.loads takes the program's text as a str, got "
                         f"{type(source).__name__}")
    sandbox = as_sandbox(sandbox)
    return Module(loads_unit(source, "<string>" if file is None else str(file),
                             confine=sandbox is not None), backend, invcheck, sandbox)


class Module:
    """A loaded program; its functions are attributes (and items).  `backend` is the
    one asked for ("auto" by default); `fallback` says whether a call the compiled
    backend refuses runs on the interpreter instead of raising BackendUnsupported.
    With a `sandbox` (a Sandbox), every call runs on the interpreter within its limits."""

    def __init__(self, unit, backend: str | None = None, invcheck: bool = True,
                 sandbox: Sandbox | None = None):
        backend = _sandbox_backend(backend, sandbox) or default_backend()
        if backend not in API_BACKENDS:
            raise RlangError(f"unknown backend {backend!r}; choose one of "
                             f"{', '.join(API_BACKENDS)}")
        check_loaded(unit)       # Note [Checked programs on disk]
        self.unit = unit
        self.backend = backend
        self.invcheck = invcheck
        self.sandbox = sandbox
        self.interpreter = Interpreter(unit, invcheck=invcheck, sandbox=sandbox)
        self.compiled = None
        self.fallback = backend == "auto"
        if backend == "llvm":
            from .backends.llvm.backend import LlvmFunctions     # imports llvmlite: only here

            self.compiled = LlvmFunctions(unit, invcheck, self.interpreter)
        elif backend == "auto":
            try:
                from .backends.llvm.backend import LlvmFunctions
            except ImportError:                         # no llvmlite: the interpreter
                LlvmFunctions = None
            if LlvmFunctions is not None:
                self.compiled = LlvmFunctions(unit, invcheck, self.interpreter)
        elif backend == "cuda":
            from .backends.cuda.backend import CudaFunctions     # imports numba: only here

            self.compiled = CudaFunctions(unit, invcheck, self.interpreter)

    @property
    def functions(self) -> list[str]:
        return list(self.unit.functions)

    def __getitem__(self, name: str) -> "Function":
        if name not in self.unit.functions:
            raise NoSuchFunctionKey(self._no_function(name))
        return Function(self, name)

    def _no_function(self, name) -> str:
        known = ", ".join(f"`{n}`" for n in sorted(self.unit.functions)) or "none"
        return f"the program has no function `{name}`; its functions: {known}"

    def __getattr__(self, name: str) -> "Function":
        if name.startswith("__"):
            raise AttributeError(name)
        functions = self.__dict__.get("unit").functions
        if name in functions:
            return Function(self, name)
        if name.endswith("_") and name[:-1] + "!" in functions:
            return Function(self, name[:-1] + "!")
        raise NoSuchFunction(self._no_function(name))

    def __dir__(self):
        return list(super().__dir__()) + [n.replace("!", "_") for n in self.unit.functions]

    def run_main(self) -> list:
        """Run `main()`; return its store as (name, value) pairs."""
        if self.compiled is not None:
            try:
                return run_deep(self.compiled.run_main)
            except BackendUnsupported as error:
                if not self.fallback:
                    raise _as_asked(error)
        return run_deep(self.interpreter.run_main)

    def compiled_or_none(self, run, *args):
        """`run(self.compiled, *args)`, or None where the module falls back to the
        interpreter and the compiled backend refuses the call (BackendUnsupported is
        raised before anything runs, so the arguments are untouched)."""
        try:
            return run(self.compiled, *args)
        except BackendUnsupported as error:
            if not self.fallback:
                raise _as_asked(error)
            return None


def _sandbox_backend(backend: str | None, sandbox: Sandbox | None) -> str | None:
    """The backend of a sandboxed module: the interpreter, which alone can stop a run
    at a limit ("auto" and no backend mean it); a compiled one asked for is an error."""
    if sandbox is None:
        return backend
    if backend in (None, "auto", "interp"):
        return "interp"
    if backend in BACKENDS:
        raise RlangError(f"the {backend} backend cannot run in a sandbox: compiled code "
                         "cannot be stopped safely at a time or memory limit; run it on "
                         "the interpreter (backend \"interp\")")
    return backend


def _as_asked(error: BackendUnsupported) -> RlangError:
    """What a module whose compiled backend was asked for by name raises: a type error
    found while compiling as the interpreter's class (RlangTypeError), else `error`."""
    return error.plain() if isinstance(error, CompiledTypeError) else error


class Function:
    """A function of a loaded program; `~f` is its inverse."""

    def __init__(self, module: Module, name: str, inverse: bool = False):
        self.module, self.name, self.inverse = module, name, inverse

    @property
    def params(self) -> list[str]:
        return [p.name for p in self.module.unit.functions[self.name].params]

    def positional(self, args, kwargs: dict) -> list:
        """`args` followed by `kwargs` put in place by parameter name (LANGUAGE.md §13:
        `y!` is spelled `y_`; a parameter's exact name wins over such a spelling)."""
        if not kwargs:
            return list(args)
        params = self.params
        where = {p.replace("!", "_"): k for k, p in enumerate(params)}
        where.update({p: k for k, p in enumerate(params)})
        values = list(args) + [_MISSING] * (len(params) - len(args))
        for key, value in kwargs.items():
            k = where.get(key)
            if k is None:
                raise RlangTypeError(f"`{self.name}` has no parameter `{key}`; its parameters "
                                     f"are {', '.join(params) or 'none'}")
            if values[k] is not _MISSING:
                raise RlangTypeError(f"argument `{params[k]}` of `{self.name}` is given twice")
            values[k] = value
        missing = [params[k] for k, v in enumerate(values) if v is _MISSING]
        if missing:
            raise RlangTypeError(f"`{self.name}` is missing the argument(s) "
                                 f"{', '.join(missing)}")
        return values

    def __call__(self, *args, **kwargs) -> tuple:
        module = self.module
        if module.compiled is not None and not kwargs:  # Note [Calls without ctypes]
            builtin = module.compiled.call_builtins.get((self.name, self.inverse))
            if builtin is not None:
                values = builtin[0](*args)
                if values:
                    return values
                builtin[1].forget_frames()  # (of a failed run, which runs again below)
        args = self.positional(args, kwargs)
        if module.compiled is not None:
            values = module.compiled_or_none(_call, self.name, list(args), self.inverse)
            if values is not None:
                return tuple(values)
        values = run_deep(module.interpreter.call, self.name, list(args), self.inverse)
        return tuple(values)

    def __invert__(self) -> "Function":
        return Function(self.module, self.name, not self.inverse)

    def __repr__(self) -> str:
        return f"<rev function {'~' if self.inverse else ''}{self.name}({', '.join(self.params)})>"


#: a parameter no argument was given for yet (`Function.positional`)
_MISSING = object()


def _call(compiled, name: str, args: list, inverse: bool) -> list:
    return compiled.call(name, args, inverse)
