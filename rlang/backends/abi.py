"""The calling convention of compiled rev functions, shared by the code generator,
the Python caller and the C header.

Every generated function is `int32 f(int64_t *ctx, void *arg1, …)`:

- a scalar argument is a pointer to its storage (read on entry, written in place);
  bools are stored as one byte;
- an array argument is a pointer to a descriptor `{ data*, shape[ndim], strides[ndim] }`
  with shape and strides in elements, all int64;
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
MAX_FRAMES = 64
CTX_WORDS = CTX_FRAMES + MAX_FRAMES

#: How scalars are stored in memory (array elements and scalar arguments).
STORAGE = {"bool": "i8", "i32": "i32", "i64": "i64", "f32": "float", "f64": "double"}
C_TYPES = {"bool": "uint8_t", "i32": "int32_t", "i64": "int64_t", "f32": "float",
           "f64": "double",
           # fixed: the raw Q20.43 value (value · 2^43); ulog: the logarithm;
           # complex: a pointer to two doubles, re then im (as C's double _Complex)
           "fixed": "int64_t", "ulog": "double", "complex": "double"}
