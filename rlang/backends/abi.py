"""The calling convention of compiled rev functions, shared by the code generator,
the Python caller and the C header.

Every generated function is `int32 f(int64_t *ctx, void *arg1, …)`:

- a scalar argument is a pointer to its storage (read on entry, written in place);
  bools are stored as one byte;
- an array argument is a pointer to a descriptor `{ data*, shape[ndim], strides[ndim] }`
  with shape and strides in elements, all int64;
- a stack argument is a pointer to `{ data*, length, capacity }` (int64 length and
  capacity in items; `data` is malloc memory the callee may realloc, see
  rlang/backends/llvm/stacks.py);
- the result is 0, or 1 when a check failed; the failure is described in `ctx`.

`ctx` is an array of `CTX_WORDS` int64 words (layout below).  The entry point that
Python and C call, `<symbol>_entry(ctx, void **args)`, takes the argument pointers as
one array.
"""

CTX_SITE = 0          # the failed site's id + 1 (0: none)
CTX_DEPTH = 1         # the current call depth
CTX_MAX_DEPTH = 2     # the limit of the call depth
CTX_IVALS = 3         # 4 int64 values of the failed check
CTX_FVALS = 7         # 4 doubles (stored as their bits) of the failed check
CTX_NFRAMES = 11      # how many call sites were recorded while unwinding
CTX_FRAMES = 12       # the call-site ids, innermost first
MAX_FRAMES = 64       # … at most this many: the innermost HEAD_FRAMES, then the
HEAD_FRAMES = 40      # outermost ones in a ring (Note [Deep call chains]); the count
TAIL_FRAMES = MAX_FRAMES - HEAD_FRAMES      # goes on past MAX_FRAMES
CTX_ITEMS = CTX_FRAMES + MAX_FRAMES   # the first items of a stack found not empty
STACK_ITEMS = 8                       # … at most this many (16 words: 8 complex),
CTX_EXPECTED_ITEMS = CTX_ITEMS + 2 * STACK_ITEMS    # then those of the stack it should equal
CTX_SHAPE = CTX_EXPECTED_ITEMS + 2 * STACK_ITEMS    # an array's extents (the first
ARRAY_DIMS = 8                                      # items, in C order, at CTX_ITEMS),
CTX_EXPECTED_SHAPE = CTX_SHAPE + ARRAY_DIMS          # then those of the one it should
#                                                      equal (at CTX_EXPECTED_ITEMS)
CTX_THREADS = CTX_EXPECTED_SHAPE + ARRAY_DIMS        # the threads a `@parallel for`
CTX_WORDS = CTX_THREADS + 1                          # may use (0: no Python hook)

# Note [Deep call chains]
# ~~~~~~~~~~~~~~~~~~~~~~~
# An error 10,000 calls deep shows its innermost and outermost frames and says how
# many it leaves out (RlangError.render).  Compiled code counts every frame it
# unwinds (CTX_NFRAMES) and records the call sites of the innermost HEAD_FRAMES and,
# in a ring, of the outermost TAIL_FRAMES, so the error has both ends and the true
# count, as the interpreter's has.


def frame_slot(count: int) -> int:
    """The slot (from CTX_FRAMES) of the call site of the count-th frame unwound."""
    return count if count < HEAD_FRAMES else HEAD_FRAMES + (count - HEAD_FRAMES) % TAIL_FRAMES


def recorded_calls(words, count: int) -> tuple:
    """(the call-site ids of the innermost frames, those of the outermost ones, how
    many in between were not recorded) from the CTX_FRAMES words and CTX_NFRAMES."""
    if count <= MAX_FRAMES:
        return list(words[:count]), [], 0
    tail = [words[frame_slot(j)] for j in range(count - TAIL_FRAMES, count)]
    return list(words[:HEAD_FRAMES]), tail, count - MAX_FRAMES


#: The globals through which compiled code calls back into its caller:
#: `void (*hook)(int64 site, double *words)`, null until set (rlang/backends/llvm/report.py).
PRINT_HOOK = "rev_print_hook"         # `@safe print/show`
LOCALS_HOOK = "rev_locals_hook"       # a failing frame's variables
#: `int32 (*hook)(plan, ctx, void **outer, first, stride, count, blocks)`: runs a
#: `@parallel for` in blocks on threads (Note [Parallel loops on threads], rlang/ir/blocks.py).
PARALLEL_HOOK = "rev_parallel_hook"
#: `i8* (*hook)(i64 size)` and `void (*hook)(i8* data)`: the process's routines that
#: keep large ancillas' blocks (Note [Large ancillas kept between calls],
#: rlang/backends/llvm/kept_blocks.py); null: calloc and free.
TAKE_HOOK, GIVE_HOOK = "rev_take_hook", "rev_give_hook"
TAKE_RAW_HOOK = "rev_take_raw_hook"      # memory that need not be zero
#: `i8 rev_preempt`: set (not 0) while a module's quickly compiled code should leave
#: its call for the optimised code (Note [Leaving the quick code],
#: rlang/backends/llvm/tiers.py); the call then fails with CTX_SITE = PREEMPTED.
PREEMPT_FLAG = "rev_preempt"
PREEMPTED = -1

#: How scalars are stored in memory (array elements and scalar arguments).
STORAGE = {"bool": "i8", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
C_TYPES = {"bool": "uint8_t", "i32": "int32_t", "i64": "int64_t", "f32": "float",
           "f64": "double",
           # fixed: the raw Q20.43 value (value · 2^43); ulog: the logarithm;
           # complex: a pointer to two doubles, re then im (as C's double _Complex)
           "fixed": "int64_t", "ulog": "double", "complex": "double"}


#: Bytes of one scalar in memory (an array element, a stack item).
ITEM_BYTES = {"bool": 1, "i32": 4, "i64": 8, "f32": 4, "f64": 8, "fixed": 8, "ulog": 8,
              "complex": 16}

#: The NumPy dtype of a stack item in memory (bools: one byte; complex: re, im).
ITEM_DTYPES = {"bool": "u1", "i32": "<i4", "i64": "<i8", "f32": "<f4", "f64": "<f8",
               "fixed": "<i8", "ulog": "<f8", "complex": "<c16"}


#: The Python types whose items of a stack{elem} go to memory as they are (the fast
#: path of `pack_items`: a stack of thousands of floats crosses each call).
_PLAIN_ITEM_TYPES = {"f64": {float}, "i64": {int}, "bool": {bool}}


def pack_items(elem: str, items) -> bytes:
    """Stack items (rev values of type `elem`, bottom first) as they lie in memory;
    ValueError for an item of another type."""
    import numpy as np

    from ..values import type_name

    if set(map(type, items)) <= _PLAIN_ITEM_TYPES.get(elem, set()):
        return np.array(items, dtype=ITEM_DTYPES[elem]).tobytes()   # no per-item checks
    for item in items:
        if type_name(item) != elem:
            raise ValueError(f"a stack{{{elem}}} cannot hold {type_name(item)} items")
    raw = [item.raw if elem == "fixed" else item.log if elem == "ulog" else item
           for item in items]
    return np.array(raw, dtype=ITEM_DTYPES[elem]).tobytes()


def unpack_items(elem: str, data: bytes) -> list:
    """Stack items from memory (as `pack_items` lays them out) as rev values."""
    import numpy as np

    from ..numbers import F32, I32, Fixed, ULog

    values = np.frombuffer(data, dtype=ITEM_DTYPES[elem]).tolist()
    convert = {"bool": bool, "i32": I32, "f32": F32, "fixed": Fixed, "ulog": ULog}.get(elem)
    return [convert(v) for v in values] if convert else values
