"""Programs whose array extents are wrong or too large, shared by the llvm
(tests/backends/llvm/test_llvm_array_extents.py) and cuda (tests/backends/cuda/test_systems.py)
agreement tests: every case must end as the interpreter's does, with its error.

- `a → e` compares shapes too: a literal or zeros(T, n…) of another shape fails the
  deallocation check (compiled code compared only a's own elements, reading past a
  shorter constant and writing past `a` for `a → [x, 2x]` with too few elements);
- `zeros` with a negative extent, or with more bytes than an int64 holds, fails
  with the interpreter's message at the source position (compiled code multiplied
  the extents without looking: 2^62 elements crashed the process, and (2^32, 2^32)
  wrapped to an empty array that writes then ran past).
"""
from __future__ import annotations

PROGRAM = """
function lit(x: f64)
    a ← [1.0, 2.0]
    a → [1.0, 2.0, 3.0]
end
function lit2(x: f64)
    a ← [1.0, 2.0, 3.0]
    a → [1.0, 2.0]
end
function zs(n: i64)
    a ← zeros(f64, n)
    a → zeros(f64, n + 1)
end
function z2(n: i64, m: i64)
    a ← zeros(i64, n, m)
    a → zeros(i64, m, n)
end
function zneg(n: i64)
    a ← zeros(f64, n)
    a → zeros(f64, n - 5)
end
function zt(n: i64)
    a ← zeros(f64, n)
    a → zeros(i64, n + 1)
end
function zr(n: i64)
    a ← zeros(f64, n)
    a → zeros(f64, n, 1)
end
function vl(x: f64)
    a ← zeros(f64, 2)
    a → [x, 2.0 * x, 3.0]
end
function vl2(x: f64)
    a ← [x, 2.0 * x]
    a[1] += 1.0
    a → [x, 2.0 * x]
end
function ok(x: f64, n: i64)
    a ← [x, 2.0 * x]
    a → [x, 2.0 * x]
    b ← zeros(f64, n)
    b → zeros(f64, n)
end
function big(n: i64)
    a ← zeros(f64, n)
    a → zeros(f64, n)
end
function square(n: i64, i: i64)
    a ← zeros(f64, n, n)
    a[i, i] += 1.0
    a[i, i] -= 1.0
    a → zeros(f64, n, n)
end
function third(n: i64, m: i64)
    a ← zeros(i32, 3, n, m)
    a → zeros(i32, 3, n, m)
end
"""

#: Where compiled code's message differs: `a → [x, 2x]` is checked by subtracting
#: the literal (so that gradients reach x), after comparing the extents; it does not
#: record the literal's values to show.
COMPILED_MESSAGES = {
    "vl": "deallocation check failed: a has shape (2,), expected `[x, 2.0 * x, 3.0]` of "
          "shape (3,)",
    "vl2": "deallocation check failed: a differs from `[x, 2.0 * x]` in 1 element(s)",
}

#: (function, arguments, the start of the interpreter's message or None: no error)
CASES = [
    ("lit", [1.0], "deallocation check failed: a = [1.0, 2.0], expected [1.0, 2.0, 3.0]"),
    ("lit2", [1.0], "deallocation check failed: a = [1.0, 2.0, 3.0], expected [1.0, 2.0]"),
    ("zs", [2], "deallocation check failed: a = [0.0, 0.0], expected [0.0, 0.0, 0.0]"),
    ("z2", [2, 3], "deallocation check failed: a = [[0, 0, 0], [0, 0, 0]], expected "
                   "[[0, 0], [0, 0], [0, 0]]"),
    ("zneg", [2], "`zeros`: a dimension must be a non-negative integer, got -3"),
    ("zt", [2], "deallocation check failed: a = [0.0, 0.0], expected [0, 0, 0]"),
    ("zr", [2], "deallocation check failed: a = [0.0, 0.0], expected [[0.0], [0.0]]"),
    ("vl", [1.0], "deallocation check failed: a = [0.0, 0.0], expected [1.0, 2.0, 3.0]"),
    ("vl2", [1.0], "deallocation check failed: a = [1.0, 3.0], expected [1.0, 2.0]"),
    ("ok", [1.0, 3], None),
    ("vl", [5.0], "deallocation check failed: a = [0.0, 0.0], expected [5.0, 10.0, 3.0]"),
    ("big", [-1], "`zeros`: a dimension must be a non-negative integer, got -1"),
    ("big", [1 << 62], "`zeros`: cannot allocate an array of shape (4611686018427387904,)"),
    ("big", [(1 << 63) - 1], "`zeros`: cannot allocate an array of shape "
                             "(9223372036854775807,)"),
    ("square", [1 << 32, 100000], "`zeros`: cannot allocate an array of shape "
                                  "(4294967296, 4294967296)"),
    ("third", [0, 1 << 62], "`zeros`: cannot allocate an array of shape "
                            "(3, 0, 4611686018427387904)"),
    ("third", [1 << 62, 4], "`zeros`: cannot allocate an array of shape "
                            "(3, 4611686018427387904, 4)"),
    ("third", [0, 5], None),
]
