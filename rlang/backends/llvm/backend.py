"""The llvm backend: run rev functions as native code (LANGUAGE.md §10).

`LlvmFunctions(unit, invcheck, interpreter)` calls functions the way the interpreter
does — `call(name, args, inverse)` returns the arguments' new values, arrays
updated in place — by lowering the specialisation for the arguments' types
(rlang/lower/statements.py), generating LLVM IR (backends/llvm/emit.py) and running the optimised,
cached object code (backends/llvm/jit.py).  Arguments are bound and checked for aliasing by
the interpreter's own rules, so both backends accept and refuse the same calls.
"""
from __future__ import annotations

import hashlib
import threading

from ...deep import run_deep
from ...disk_cache import remembered
from ...errors import RlangError
from ...frontend.janus.wording import janus_wording
from ...types_rules import BackendUnsupported
from ...lower.argument_types import signature_of, type_of_value
from ...ir.nodes import symbol_of
from ...ad.native_calls import function_call
from ..functions import CompiledFunctions
from .jit import compile_module
from .marshal import ReadOnlyArgument



#: Held while a module is lowered and compiled: LLVM's context and rlang's lowering
#: caches are not made for two threads at once.
_COMPILING = threading.RLock()

class LlvmFunctions(CompiledFunctions):
    #: with invcheck off, a gradient may skip the forward run (Note [Gradients
    #: without the forward run], rlang/ir/outputs.py)
    forward_free_gradients = True
    batches = True

    def __init__(self, unit, invcheck: bool, interpreter):
        super().__init__(unit, invcheck, interpreter)
        self._source_key = _unit_key(unit) if unit.sources else \
            run_deep(_definitions_key, unit)      # (repr recurses as deep as the program)
        self._modules: dict = {}
        # (name, inverse, argument signature) → IR types for argument kinds that
        # earlier conformed to the parameters unchanged (see signature_of), and
        # → (native module, symbol) of the forward for those a forward call ran with
        self._as_is: dict = {}
        self._fast: dict = {}
        self._refused: dict = {}        # specialisation → its BackendUnsupported
        self._adds: dict = {}           # specialisation → forward_adds
        self._builtin_tried: set = set()    # (name, inverse) given a builtin call or not

    def call(self, name: str, args: list, inverse: bool = False) -> list:
        signature = signature_of(args)
        fast = self._fast.get((name, inverse, signature)) if signature else None
        if fast is not None:        # arguments known to conform as they are
            if self.invcheck:
                self.check_aliasing(self.unit.functions[name], args)
            try:
                results = self.run(*fast, args)
            except ReadOnlyArgument:    # the interpreter's error, with the name
                self.bind(name, args)
                raise
            if (name, inverse) not in self._builtin_tried:
                self._make_builtin_call(name, inverse, signature, *fast)
            return results
        values = self.bind(name, args)
        types = tuple(type_of_value(v) for v in values)
        native = self.native(name, types, inverse)
        symbol = symbol_of(name, types, inverse)
        if signature and all(v is a for v, a in zip(values, args)):
            self._fast[(name, inverse, signature)] = (native, symbol)
            self._as_is[(name, inverse, signature)] = types
        results = self.run(native, symbol, values)
        return [] if name == "main" else results   # a call gives back arguments, not
        #                                             main's store (that is run_main's)

    def _make_builtin_call(self, name: str, inverse: bool, signature, native,
                           symbol) -> None:
        """Give `name` a builtin call (Note [Calls without ctypes],
        backends/llvm/call_builtins.py) for arguments of `signature`, where its code
        allows one: tried at the second call of some kinds of arguments, once (again
        while the code is the quick first tier)."""
        program = function_call(signature, native.layout(symbol).types,
                                self.interpreter.written.get(name, ()), self.invcheck)
        builtin = None if program is None else self.native_call([(native, symbol)], program)
        if builtin is not False:
            self._builtin_tried.add((name, inverse))
        if builtin:
            self.call_builtins[(name, inverse)] = (builtin, native)

    def conforms(self, name: str, signature, inverse: bool = False) -> bool:
        """Whether arguments of `signature` (signature_of) are known to bind to
        `name`'s parameters as they are (an earlier call with arguments of the same
        kinds bound so, in a call or a gradient's first pass)."""
        return bool(signature) and (name, inverse, signature) in self._as_is

    def note_as_is(self, name: str, signature, inverse: bool, types: tuple) -> None:
        if signature:
            self._as_is[(name, inverse, signature)] = types

    def conformed(self, name: str, signature, inverse: bool = False):
        """(native module, symbol) of the entry point arguments of `signature` run
        as they are (an earlier call or gradient bound them so), or None; the
        forward is compiled here when only a gradient's pass ran before."""
        if not signature:
            return None
        key = (name, inverse, signature)
        fast = self._fast.get(key)
        if fast is None and key in self._as_is:
            types = self._as_is[key]
            fast = self._fast[key] = (self.native(name, types, inverse),
                                      symbol_of(name, types, inverse))
        return fast

    def arrays_written(self, native):
        """The positions of the array parameters `native`'s entry function may write
        once the IR passes ran (Note [Restoration nobody reads], ir/prune.py)."""
        return native.entry_writes

    def run(self, native, symbol: str, values: list) -> list:
        """Call an entry point of a compiled module.  Deep native recursion runs on
        the interpreter's big-stack thread; other calls run here (starting a thread
        costs far more than a small kernel)."""
        depth = self.interpreter.max_depth
        try:
            if native.recursive:
                return run_deep(native.call, symbol, values, depth)
            return native.call(symbol, values, depth)
        except RlangError as error:
            if self.unit.dialect == "janus":     # Note [Janus error wording]
                raise janus_wording(error)
            raise

    def paired(self, forward, backward):
        """The two entry points on one buffer (backends/llvm/paired.py), or None."""
        from .paired import PairedEntries

        pair = PairedEntries.of(forward, backward, lambda: self.interpreter.max_depth)
        if pair is None or self.unit.dialect != "janus":
            return pair

        def worded(values: list, between=None) -> list:    # Note [Janus error wording]
            try:
                return pair(values, between)
            except RlangError as error:
                raise janus_wording(error)
        return worded

    def native_call(self, entries: list, call):
        """The builtin of a call (Note [Calls without ctypes], Note [Gradient calls
        without Python], backends/llvm/call_builtins.py), None, or False while the
        code is still the quick first tier (Note [A quick first call])."""
        if not all(native.settled_now() for native, _ in entries):
            return False
        from .call_builtins import call_builtin, one_thread_only

        builtin = call_builtin(entries, call, self.interpreter.max_depth)
        if builtin and any(native.threaded_loops for native, _ in entries):
            return one_thread_only(builtin)
        return builtin

    def run_batch(self, native, symbol: str, values: list, batches: list, n: int) -> None:
        """Run an entry point on n items in one native call (backends/llvm/batch.py)."""
        from .batch import run_batch

        call = (run_batch, native, symbol, values, batches, n, self.interpreter.max_depth)
        return run_deep(*call) if native.recursive else call[0](*call[1:])

    def prepared(self, native, symbol: str, values: list):
        """One call of an entry point packed for `run_groups` (backends/llvm/groups.py),
        or None where it must run on the deep-stack thread (native recursion)."""
        if native.recursive:
            return None
        from .groups import prepared

        return prepared(native, symbol, values, self.interpreter.max_depth)

    def run_groups(self, **plan) -> int:
        """A laned Hessian's groups in one native call (Note [Hessian groups in one
        call], backends/llvm/groups.py): 0, or the status of the call that failed."""
        from .groups import GroupPlan, run_groups

        return run_groups(GroupPlan(**plan))

    def native(self, name: str, types: tuple, inverse: bool, derivative: str = ""):
        """The compiled module of one specialisation (memory, then disk cache), or of
        a derivative of it (rlang/ad/derivatives.py)."""
        key = (name, types, inverse, derivative)
        native = self._modules.get(key)
        if native is None and key in self._refused:    # refused once: not lowered again
            raise self._refused[key].with_traceback(None)
        if native is None:
            with _COMPILING:        # one compile at a time: callers on several threads
                native = self._modules.get(key)         # (a threaded Dask worker)
                if native is None:
                    native = self._compiled(key)
        return native

    def forward_adds(self, name: str, types: tuple, inverse: bool):
        """As CompiledFunctions', kept on disk beside the compiled modules: a warm
        first gradient then lowers nothing (GMM d = 10: 19–45 ms)."""
        key = (name, types, inverse)
        if key not in self._adds:       # (a first gradient asks twice: its plan too)
            parent = super().forward_adds
            self._adds[key] = remembered(
                f"{self._source_key}|{name}|{types}|{inverse}|{self.invcheck}|adds",
                lambda: parent(name, types, inverse))
        return self._adds[key]

    def _compiled(self, key: tuple):
        """Compile (or load from the disk cache) the module of `key`, and keep it."""
        name, types, inverse, derivative = key

        def build():
            from .emit import emit_module       # (not needed from the disk cache)

            if derivative:
                return _derivative_modules(self.lowered_for(name, types, inverse),
                                           derivative)
            module = self.lowered(name, types, inverse)
            return module, emit_module(module)

        try:        # lowering and emission recurse as deep as the expressions nest
            native = compile_module(f"{self._source_key}|{name}|{types}|{inverse}|"
                                    f"{self.invcheck}|{derivative}", lambda: run_deep(build))
        except BackendUnsupported as error:
            self._refused[key] = error
            raise
        self._modules[key] = native
        return native


def build_derivative(unit, name: str, types: tuple, inverse: bool, invcheck: bool,
                     derivative: str):
    """The IR and LLVM modules of a derivative of one specialisation, outside any
    module's cache (for tests and tools that look at the code)."""
    from ...lower.statements import lower

    def lowered(backward: bool):
        return lower(unit, name, types, inverse != backward, invcheck)

    return _derivative_modules(lowered, derivative)


def _derivative_modules(lowered, derivative: str) -> tuple:
    """(IR module, LLVM module) of `derivative` of the specialisation `lowered(backward)`
    lowers; a gradient pass's primal parameters (and in its tangent, their tangents)
    are not restored for nobody (Note [Restoration nobody reads], rlang/ir/prune.py)."""
    from ...ad.derivatives import derivative_ir, restoration_unread
    from ...ad.symbols import split_lanes, split_unwanted
    from .emit import emit_module

    derivative, unwanted = split_unwanted(derivative)
    module, shared = derivative_ir(lowered, derivative)
    if split_lanes(derivative)[0] in ("grad", "tan_grad"):
        module = restoration_unread(module, shared, unwanted)
    return module, emit_module(module, report_locals=False, shared=shared)


def _definitions_key(unit) -> str:
    """The key of a unit put together from definitions (the REPL's): the reprs of
    its programs, with their files (node reprs leave spans out)."""
    programs = [unit.program] + list(unit.included_programs)
    return "\n".join(f"{p.span.file}\n{p!r}" for p in programs)


def _unit_key(unit) -> str:
    """What the compiled code depends on in a loaded program: the text of every
    file it is made of, with the file's name (error messages quote positions, and
    the same program at two paths must not share error sites).  A digest: the repr
    of the AST this used to be took 43 s for a 9 MB program of long names (fuzz seed
    5001 case 31332).  A Janus program's dialect and integers (--modular) are part of
    it: the same text lowers to other code with them."""
    digest = hashlib.sha256()
    digest.update(f"{unit.dialect}/{unit.integers}".encode())
    for file, text in unit.sources:
        for part in (file, text):
            data = part.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()