"""What the compiled backends share: binding arguments by the interpreter's rules,
lowering each specialisation once, and the interface the compiled AD driver uses.

`CompiledFunctions(unit, invcheck, interpreter)` is the base of `LlvmFunctions`
(backends/llvm/backend.py) and `CudaFunctions` (backends/cuda/backend.py).  The
compiled AD driver (rlang/ad/compiled.py) never imports a backend: it is handed one
of these objects (`rlang.Module.compiled`) and uses only

- `unit`, `invcheck`, `plans` (its cache of gradient plans), `forward_free_gradients`;
- `bind(name, args)`, `types_of(values)`, `call(name, args, inverse)`,
  `conforms(name, signature, inverse)`, `conformed(name, signature, inverse)`,
  `arrays_written(native)`;
- `lowered(name, types, inverse)`: the IR of a specialisation, lowered once;
- `native(name, types, inverse, derivative)`: the compiled specialisation, or its
  derivative ("grad", "tan", "tan_grad": rlang/ad/derivatives.py), and
  `run(native, symbol, values)`;
- `paired(forward, backward)`: a forward run and a gradient pass as one packed call,
  where the backend has it (None elsewhere);
- `batches` and `run_batch(native, symbol, values, batches, n)`: a batch of runs in
  one native call (`rlang.vmap`), where the backend has it;
- `to_device(arrays)`: host arrays (or None) moved to where the backend's arrays
  live (only asked where the caller passed device arrays: gradient buffers of zeros
  with at most a seed in one element);
- `resident()`: a context in which the host arrays of the calls made inside stay
  where the backend keeps them until it ends (the cuda backend's device; nothing
  elsewhere), and `prepare_gradients(arrays)`, which may make a pass's host gradient
  buffers there without copying them (Note [Arrays resident through a gradient],
  rlang/backends/cuda/backend.py).

A subclass supplies `call`, `run`, `native` and, for arguments it takes as they are
(the cuda backend's device arrays), `passes_as_is`.
"""
from __future__ import annotations

import contextlib

from ..deep import run_deep
from ..errors import InternalError, RlangTypeError
from ..ir import nodes as ir
from ..ir.nodes import symbol_of
from ..lower.argument_types import type_of_value
from ..ir.outputs import accumulate_only


class CompiledFunctions:
    #: whether `run_batch(native, symbol, values, batches, n)` runs a batch of calls
    #: in one native call (rlang.vmap; backends/llvm/batch.py)
    batches = False
    #: whether a gradient may skip the forward run (Note [Gradients without the
    #: forward run], rlang/ir/outputs.py)
    forward_free_gradients = False

    def __init__(self, unit, invcheck: bool, interpreter):
        self.unit, self.invcheck, self.interpreter = unit, invcheck, interpreter
        self.plans: dict = {}           # gradient plans (ad/compiled.py), by call kind
        self._lowered: dict = {}        # (name, types, inverse) → IR module
        #: (name, inverse) → (a builtin function making the call on Python scalars and
        #: arrays, or giving back () where the general call must make it; the module
        #: whose frame reports it may leave) (Note [Calls without ctypes],
        #: llvm/call_builtins.py)
        self.call_builtins: dict = {}

    # ------------------------------------------------------------ arguments
    def passes_as_is(self, value) -> bool:
        """Whether an argument is taken as it is, not conformed by the interpreter's
        rules (none here; the cuda backend's device arrays)."""
        return False

    def bind(self, name: str, args: list) -> list:
        """The arguments conformed to `name`'s parameters, by the interpreter's rules
        (and refused, with its errors, where they do not fit or alias)."""
        fn = self.unit.functions[name]
        if len(args) != len(fn.params):
            raise RlangTypeError(f"`{name}` takes {len(fn.params)} argument(s), got "
                                 f"{len(args)}", fn.span)
        values = [a if self.passes_as_is(a) else
                  self.interpreter.bind_argument(fn, p, a, True, p.span)
                  for p, a in zip(fn.params, args)]
        self.interpreter.check_writable(fn, values)
        if self.invcheck:
            self.check_aliasing(fn, values)
        return values

    def check_aliasing(self, fn, values: list) -> None:
        """The interpreter's rule: a written argument shares no memory with another."""
        self.interpreter.check_argument_aliasing(fn, values)

    def types_of(self, values: list) -> tuple:
        """The IR types of bound argument values (BackendUnsupported if none)."""
        return tuple(type_of_value(v) for v in values)

    def conforms(self, name: str, signature, inverse: bool = False) -> bool:
        """Whether arguments of `signature` (argument_types.signature_of) are known to
        bind to `name`'s parameters as they are (none are, here)."""
        return False

    def note_as_is(self, name: str, signature, inverse: bool, types: tuple) -> None:
        """Remember that arguments of `signature` bound to `name`'s parameters (of
        IR `types`) as they are (nothing to remember, here)."""

    def conformed(self, name: str, signature, inverse: bool = False):
        """(native module, symbol) of `name`'s entry point where arguments of
        `signature` are known to bind as they are and run there directly, else
        None (always, here)."""
        return None

    def arrays_written(self, native):
        """The positions of the array parameters the entry point of `native` may
        write, or None where that is not known (here)."""
        return None

    def to_device(self, arrays: list) -> list:
        raise InternalError(f"{type(self).__name__} has no device memory")

    def resident(self):
        """A context for calls whose host arrays may stay with the backend (see the
        module docstring); nothing here."""
        return contextlib.nullcontext()

    def prepared(self, native, symbol: str, values: list):
        """One call packed for `run_groups` (backends/llvm/groups.py); None: this
        backend runs a laned Hessian's groups from Python."""
        return None

    def paired(self, forward, backward):
        """A callable running the entry points `forward` ((native, symbol), or None)
        then `backward` on one packed buffer (backends/llvm/paired.py), taking and
        returning the values `run(*backward, values)` does (and, as a second
        argument, a function that sees the forward's outputs); None: this backend
        runs them one `run` at a time."""
        return None

    def native_call(self, entries: list, call):
        """A builtin making a derivative's whole call on arguments of one kind
        (backends/llvm/call_builtins.py): `entries` the (native, symbol) of each run
        of `call`, a NativeCall (ad/native_calls.py); it gives back the call's
        results, or () where the caller must make the call.  None where there is none
        (here: always), False where there is none yet (ask again after a later
        call)."""
        return None

    def prepare_gradients(self, arrays: list) -> None:
        """The host gradient buffers of a pass about to run (see the module
        docstring); nothing here."""

    # ------------------------------------------------------------ lowering
    def lowered(self, name: str, types: tuple, inverse: bool) -> ir.Module:
        """The IR of one specialisation, lowered once per backend object (a gradient
        needs f's IR for its plan and ~f's for its pass; a Hessian both again)."""
        key = (name, types, inverse)
        module = self._lowered.get(key)
        if module is None:
            from ..lower.statements import lower    # (not on a call the disk cache serves)

            module = self._lowered[key] = lower(self.unit, name, types, inverse,
                                                self.invcheck)
        return module

    def forward_adds(self, name: str, types: tuple, inverse: bool):
        """The positions of the parameters the specialisation only adds to, when it
        only reads the others (ir/outputs.py `accumulate_only`; None otherwise)."""
        return accumulate_only(self.lowered(name, types, inverse))

    def lowered_for(self, name: str, types: tuple, inverse: bool):
        """`lowered(backward)` of ad/derivatives.py for the specialisation: its IR run
        forward (`backward` False) or backward."""
        return lambda backward: self.lowered(name, types, inverse != backward)

    def run_main(self) -> list:
        """Run `main()`; return its store as (name, value) pairs."""
        if "main" not in self.unit.functions:
            return self.interpreter.run_main()      # the interpreter's error
        native = self.native("main", (), False)
        return run_deep(native.call, symbol_of("main", (), False), [],
                        self.interpreter.max_depth)
