"""The llvm backend: run rev functions as native code (LANGUAGE.md §10).

`LlvmFunctions(unit, invcheck, interpreter)` calls functions the way the interpreter
does — `call(name, args, inverse)` returns the arguments' new values, arrays
updated in place — by lowering the specialisation for the arguments' types
(rlang/lower/statements.py), generating LLVM IR (backends/llvm/emit.py) and running the optimised,
cached object code (backends/llvm/jit.py).  Arguments are bound and checked for aliasing by
the interpreter's own rules, so both backends accept and refuse the same calls.
"""
from __future__ import annotations

import numpy as np

from ...deep import run_deep
from ...numbers import F32, I32
from ...errors import RlangTypeError
from ...types_rules import BackendUnsupported
from ...lower.argument_types import type_of_value
from ...lower.statements import lower, symbol_of
from .jit import compile_module
from .marshal import ReadOnlyArgument


class LlvmFunctions:
    #: with invcheck off, a gradient may skip the forward run (Note [Gradients
    #: without the forward run], rlang/ir/outputs.py)
    forward_free_gradients = True

    def __init__(self, unit, invcheck: bool, interpreter):
        self.unit, self.invcheck, self.interpreter = unit, invcheck, interpreter
        self._source_key = _unit_key(unit)
        self._modules: dict = {}
        # (name, inverse, argument signature) → (native module, symbol) for argument
        # kinds that earlier conformed to the parameters unchanged (see signature_of)
        self._fast: dict = {}
        self.plans: dict = {}           # gradient plans (llvm_ad._GradientPlan), by call kind
        self._refused: dict = {}        # specialisation → its BackendUnsupported

    def call(self, name: str, args: list, inverse: bool = False) -> list:
        signature = signature_of(args)
        fast = self._fast.get((name, inverse, signature)) if signature else None
        if fast is not None:        # arguments known to conform as they are
            if self.invcheck:
                self.interpreter._check_argument_aliasing(self.unit.functions[name], args)
            try:
                return self.run(*fast, args)
            except ReadOnlyArgument:    # the interpreter's error, with the name
                self.bind(name, args)
                raise
        values = self.bind(name, args)
        types = tuple(type_of_value(v) for v in values)
        native = self.native(name, types, inverse)
        symbol = symbol_of(name, types, inverse)
        if signature and all(v is a for v, a in zip(values, args)):
            self._fast[(name, inverse, signature)] = (native, symbol)
        results = self.run(native, symbol, values)
        return [] if name == "main" else results   # a call gives back arguments, not
        #                                             main's store (that is run_main's)

    def conforms(self, name: str, signature, inverse: bool = False) -> bool:
        """Whether arguments of `signature` (signature_of) are known to bind to
        `name`'s parameters as they are (an earlier call with arguments of the same
        kinds took the fast path)."""
        return bool(signature) and (name, inverse, signature) in self._fast

    def bind(self, name: str, args: list) -> list:
        """The arguments conformed to `name`'s parameters, by the interpreter's rules
        (and refused, with its errors, where they do not fit or alias)."""
        fn = self.unit.functions[name]
        if len(args) != len(fn.params):
            raise RlangTypeError(f"`{name}` takes {len(fn.params)} argument(s), got "
                                 f"{len(args)}", fn.span)
        values = [self.interpreter._bind(fn, p, v, True, p.span)
                  for p, v in zip(fn.params, args)]
        self.interpreter.check_writable(fn, values)
        if self.invcheck:
            self.interpreter._check_argument_aliasing(fn, values)
        return values

    def types_of(self, values: list) -> tuple:
        """The IR types of bound argument values (BackendUnsupported if none)."""
        return tuple(type_of_value(v) for v in values)

    def run(self, native, symbol: str, values: list) -> list:
        """Call an entry point of a compiled module.  Deep native recursion runs on
        the interpreter's big-stack thread; other calls run here (starting a thread
        costs far more than a small kernel)."""
        call = (native.call, symbol, values, self.interpreter.max_depth)
        return run_deep(*call) if native.recursive else call[0](*call[1:])

    def run_main(self) -> list:
        """Run `main()`; return its store as (name, value) pairs."""
        if "main" not in self.unit.functions:
            return self.interpreter.run_main()      # the interpreter's error
        native = self.native("main", (), False)
        return run_deep(native.call, symbol_of("main", (), False), [],
                        self.interpreter.max_depth)

    def native(self, name: str, types: tuple, inverse: bool, derivative: str = ""):
        """The compiled module of one specialisation (memory, then disk cache), or of
        a derivative of it ("grad": its gradient pass, rlang/ad/compiled.py)."""
        key = (name, types, inverse, derivative)
        native = self._modules.get(key)
        if native is None and key in self._refused:    # refused once: not lowered again
            raise self._refused[key].with_traceback(None)
        if native is None:
            def build():
                if derivative:
                    from ...ad.compiled import build_derivative

                    return build_derivative(self.unit, name, types, inverse, self.invcheck,
                                            derivative)
                from .emit import emit_module      # not needed from the cache

                module = lower(self.unit, name, types, inverse, self.invcheck)
                return module, emit_module(module)

            try:
                native = compile_module(f"{self._source_key}|{name}|{types}|{inverse}|"
                                        f"{self.invcheck}|{derivative}", build)
            except BackendUnsupported as error:
                self._refused[key] = error
                raise
            self._modules[key] = native
        return native


#: Scalar types that carry their rev type with them.
_CHECKED_SCALARS = (F32, I32)


def signature_of(args) -> tuple | None:
    """What decides how arguments bind: the type (and dtype and rank) of each.  None
    when some argument must be converted or range-checked on every call (an int
    beyond i64, a list, a NumPy scalar …), which then takes the general path."""
    out = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:          # Note [Unit-stride arrays]
            out.append((a.dtype, a.ndim, a.ndim > 0 and a.strides[-1] == a.itemsize))
        elif kind is float or kind is bool or kind in _CHECKED_SCALARS:
            out.append(kind)
        elif kind is int and -(1 << 63) <= a < (1 << 63):
            out.append(kind)
        else:
            return None
    return tuple(out)


def _unit_key(unit) -> str:
    """What the compiled code depends on in the program: every definition, with the
    source positions its error messages quote (files included: node reprs leave
    spans out, and the same program at two paths must not share error sites)."""
    programs = [unit.program] + list(unit.included_programs)
    parts = [f"{p.span.file}\n{p!r}" for p in programs]
    return "\n".join(parts)
