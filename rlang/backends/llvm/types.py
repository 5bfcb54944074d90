"""The LLVM types of the IR's scalar types: in registers and in memory.

The bottom of the llvm backend: the expression emitter (expr.py) and the modules
it delegates to (arith.py, convert.py, systems.py) all read these.
"""
from __future__ import annotations

from llvmlite import ir as ll

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
F32, F64 = ll.FloatType(), ll.DoubleType()

# fixed and ulog are held as their representation (Note [Number systems in the IR])
# a complex is two doubles, re then im (Note [Complex numbers in the IR])
COMPLEX = ll.ArrayType(F64, 2)
_REGISTER = {"bool": I1, "i32": I32, "i64": I64, "f32": F32, "f64": F64, "fixed": I64,
             "ulog": F64, "complex": COMPLEX}
_STORAGE = {"bool": I8, "i32": I32, "i64": I64, "f32": F32, "f64": F64, "fixed": I64,
            "ulog": F64, "complex": COMPLEX}


def llvm_type(t: str):
    return _REGISTER[t]


def storage_type(t: str):
    return _STORAGE[t]
