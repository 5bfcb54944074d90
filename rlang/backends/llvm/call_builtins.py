"""Calls as Python builtins: `call_builtin(entries, call, max_depth)` is a builtin
function that makes a whole call as `call` (a NativeCall, rlang/ad/native_calls.py)
describes it: the arguments checked, the values it needs made (zero gradients
seeded, copies), the entry points run in turn (a function's; a forward run and a
gradient pass; their tangent runs for `rlang.hvp`), the caller's arrays put back,
the results' tuple; or gives back () where the caller must make the call; None
where no such builtin can be made (Note [Calls without ctypes], Note [Gradient
calls without Python]).

Note [Calls without ctypes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
`square!(y!, x)` (`y! += x * x`, GradBench's hello) took 5–8 µs a call, PyTorch's
`x * x` 1.7 µs: the native work is a nanosecond, the rest was Python around one
ctypes call (the module's `call`, the signature, `pack`, ctypes' own argument
conversion, `unpack`).  From the second call of a function with arguments of some
kinds (`LlvmFunctions.call`), its calls go through a builtin function
(METH_FASTCALL) generated in LLVM IR over CPython's C API: it reads the argument
objects, fills the entry point's holders on its stack, releases the GIL around the
entry point as ctypes does, and builds the tuple of new values (floats and ints
made, arrays the same objects, updated in place).  It decides nothing the general
call would decide differently:

- each argument must be exactly a `float` (f64), an `int` in i64's range (i64) or
  an `np.ndarray` of the canonical dtype, rank and last-axis stride kind of the
  signature the builtin was made for (a written one writable and, with the
  reversibility checks on, apart from the others' memory), so every argument the
  general call would convert, refuse or range-check goes there;
- any other count of arguments, a failed check in the code (a status other than 0)
  or a failed allocation of a result gives back the empty tuple, and the caller
  makes the general call from the start: the code has no `print` and its failed
  checks leave nothing changed that the second run would see differently (the
  run is the only one anybody sees: its error is the general call's, with its
  frame variables, once the first run's are dropped);
- modules whose code prints or recurses deeply (the big-stack thread) are not
  given one, nor is code that is still the quick first tier (Note [A quick first
  call]).  The builtin's context says one thread, so planned `@parallel for` loops
  run their blocks in the compiled code itself, as one thread does in the general
  call (Note [Parallel loops on threads]); for such modules the builtin is wrapped
  (`one_thread_only`) so that it runs only while `rlang.get_num_threads()` is 1,
  and with more threads gives () and the general call hands the blocks to the
  pool.  A function with a `@parallel for` of eight passes went from about 15 µs a
  call to 2 µs.

The C structures read are CPython's object header (`ob_type` at 8 bytes), a float's
value (at 16) and a tuple's items (from 24), as CPython 3.8–3.13 lay them out, and
NumPy's array object (`marshal.array_header()` and its `descr`);
`process_table.layout_known()` and `descr_offset()` read them from live objects
first, and where they differ (a free-threaded or debug build) no builtin is made.

Note [Gradient calls without Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.grad(f, loss, argnums=1)` on the 10-vertex graph embedding (invcheck off)
took 12.7 µs a call of which the native gradient pass was 4.4: the rest was the
short route's Python (Note [The gradient's short route], ad/gradient_route.py):
the signature and the plan's key, the zero gradients and the seed, the copies,
packing the buffer, unpacking it and the tuple.  All of it is decided by the
route's plan (the argument kinds, which gradients are arrays, the loss element,
which arrays are copied or kept), written down as a `NativeCall`, so a builtin
generated in LLVM IR over CPython's and NumPy's C APIs does it in one call:

- each argument must be exactly what the route's signature says: a `float` (f64),
  an `int` in i64's range (i64), an `np.ndarray` whose dtype is the canonical one
  (the same object as `np.dtype(…)`), of the rank and last-axis stride kind of the
  signature; an array the function writes must be writable, the loss element must
  be inside its array, and with the reversibility checks on no array the function
  writes may overlap another argument's memory (a test of address ranges, wider
  than `np.shares_memory`, so anything it refuses goes to the general rule);
- the zero gradients are `PyArray_Zeros` of the arguments' extents (float64, C
  order, as `np.zeros`) and float scalars; the seed is written into the loss's;
- the arrays the pass alone works on are `PyArray_NewCopy` copies (as `.copy()`),
  and with the forward run the arrays the function writes are copied before and
  put back after with `PyArray_CopyInto` (Note [The caller's arrays]);
- the holders are one word each, as the entry points' one-word layouts read them
  (arrays by their objects, Note [Arrays read by the entry point]), on the
  builtin's stack with one array of argument pointers per entry point (the forward
  and the pass share the holders of f's arguments, as on one packed buffer: Note
  [Two entry points on one buffer]), and the entry points run with the GIL
  released, as ctypes runs them;
- anything else, a failed check in the code (status ≠ 0) or a failed allocation
  gives back the empty tuple after putting the caller's arrays back and dropping
  what it made, and the route makes the call from the start, with its errors.

NumPy's C API is reached through its `_ARRAY_API` table, whose slots are NumPy's
stable ABI (an extension built against NumPy 1.x runs on 2.x); the table is checked
to hold `PyArray_Type` in its slot first.  Where it is not found, or the array
objects are not laid out as `marshal.array_header()` reads them, or the code
prints or recurses deeply (as for function calls), no builtin is made; code with
`@parallel for` loops runs its builtin only with one thread (`one_thread_only`).  On the embedding (invcheck off) a call now takes 2.9 µs, less
than the pass alone took through ctypes (3.1 µs).  `rlang.hvp` has the same: its
forward tangent run and the tangent run of the gradient pass, on copies of the
arrays and the vector's entries (None: zeros).

Note [Builtins kept on disk]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Once a warm process loads its modules without LLVM (Note [Code without LLVM],
shared_code.py), a call's builtin made at the second call was what loaded it: 64–74
ms (llvmlite's binding 29 ms, the IR and MCJIT 35 ms), against a first call of 25
ms.  A builtin's code used to hold this process's addresses as constants (the
`float` and `ndarray` types, `None`, dtypes, the C API's functions, NumPy's table,
the entry points it runs), so it could not be kept.  Now it reads every one of them
from a table: its `self` is `(table, code, definition, …)`, `table` a uint64 array
of the addresses of `process_table.table_keys(…)` in a fixed order, filled in each
process (`process_table.address_of`).  The code is then the same in every process,
and `jit.process_code` keeps it in the disk cache as a shared library (or MCJIT
object code) under a key made of the NativeCall's repr, the depth limit and the
object offsets it reads (the package digest and host CPU are added there).  A
later process makes the builtin without the IR or LLVM: the decision and the key
in Python (`call_builtin`), the library opened.  Each library is opened once per
process and shared by the builtins with the same key (the code keeps nothing of
its own but arrays for its next call, Note [Scratch arrays kept] in
call_builtin_code.py: what differs is the table).  The table costs each call three dependent
loads before its first use.
"""
from __future__ import annotations

import ctypes
import hashlib

from ...ad.native_calls import indexed_elements, is_array, rank_of
from ...lower.argument_types import DTYPE_SCALARS
from ...threads import get_num_threads
from .marshal import array_header
from .process_table import FLOAT_AT, address_of, canonical, descr_offset, layout_known, \
    new_builtin, numpy_api, table_keys

def call_builtin(entries: list, call, max_depth: int):
    """The builtin making `call` (a NativeCall) with `entries` ((NativeModule,
    symbol) per run of `call.runs`), or None where it cannot have one (see the
    Note).  Its context says one thread (`one_thread_only`)."""
    natives = [native for native, _ in entries]
    if not layout_known() or numpy_api() is None or descr_offset() is None or any(
            n.recursive or not n.settled_now() for n in natives):
        return None
    codes = [n.settled() for n in natives]
    if any(code.prints for code in codes) or not all(
            _fits(call, holders, native.layout(symbol))
            for (native, symbol), holders in zip(entries, call.runs)):
        return None
    dtypes = [canonical(kind[0]) for kind in call.inputs if is_array(kind)]
    if any(dtype is None for dtype in dtypes) or \
            any(i < 0 for _, index in indexed_elements(call) for i in index):
        return None
    kept = [native.entry_of(symbol)[0] for native, symbol in entries]
    keys = table_keys(len(entries), dtypes)
    at = [ctypes.cast(entry, ctypes.c_void_p).value for entry in kept]
    addresses = [address_of(key, at) for key in keys]
    code = _builtin_code(call, max_depth, keys)
    return new_builtin(f"{entries[-1][1]}_call", code, addresses,
                       tuple(codes + kept + dtypes))


def _builtin_code(call, max_depth: int, keys: tuple):
    """The loaded code of the builtin making `call` (Note [Builtins kept on disk]):
    from the disk cache, else its IR written and compiled once; shared in the
    process by the builtins with the same key."""
    key = hashlib.sha256(repr((call, max_depth, keys, array_header(), descr_offset(),
                               FLOAT_AT)).encode()).hexdigest()
    code = _LOADED.get(key)
    if code is None:
        from .jit import process_code

        code = _LOADED[key] = process_code(f"builtin|{key}", lambda: _ir(call, max_depth, keys))
    return code


#: the code of the builtins this process loaded, by key
_LOADED: dict = {}


def _ir(call, max_depth: int, keys: tuple) -> str:
    from .call_builtin_code import builtin_ir   # (llvmlite's IR: only to compile one)

    return builtin_ir(call, max_depth, keys)


def _array_kind(call, j: int):
    """(element type name, rank) of array input j, or None."""
    kind = call.inputs[j]
    return (DTYPE_SCALARS.get(kind[0]), kind[1]) if is_array(kind) else None


def _holder_type(call, holder):
    """The entry point type (an IR type name, or (element, rank) of an array) that a
    holder gives, or None where it gives none an entry point takes."""
    source = holder[0]
    if source == "number":
        return "f64"
    j = holder[1]
    if source == "input":
        kind = call.inputs[j]
        return kind if kind in ("f64", "i64") else _array_kind(call, j)
    if source == "copy":
        return _array_kind(call, j)
    if source in ("zeros", "seeded"):
        return ("f64", rank_of(call, j))
    if source == "direction":
        like = call.inputs[holder[2]]
        return "f64" if like == "f64" else ("f64", rank_of(call, holder[2]))
    return None


def one_thread_only(builtin):
    """`builtin` for modules with planned `@parallel for` loops: called only while
    `rlang.get_num_threads()` is 1, else () (the caller's general call then hands
    the loops' blocks to the pool; Note [Calls without ctypes])."""
    def call(*args):
        return builtin(*args) if get_num_threads() == 1 else ()
    return call


def _fits(call, holders: tuple, layout) -> bool:
    """Whether an entry point of `layout` takes these holders: one-word holders of
    the types they give."""
    if not layout.one_word or len(layout.types) != len(holders):
        return False
    for holder, t in zip(holders, layout.types):
        given = _holder_type(call, call.holders[holder])
        if isinstance(given, tuple):
            if getattr(t, "elem", None) != given[0] or getattr(t, "ndim", None) != given[1]:
                return False
        elif given is None or given != t:
            return False
    return True


