"""The LLVM types of the IR's scalar types: in registers and in memory.

The bottom of the llvm backend: the expression emitter (expr.py) and the modules
it delegates to (arith.py, convert.py, systems.py) all read these.
"""
from __future__ import annotations

import hashlib

from llvmlite import ir as ll

from ...ir.nodes import c_identifier

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)
F32, F64 = ll.FloatType(), ll.DoubleType()

# fixed and ulog are held as their representation (Note [Number systems in the IR])
# a complex is two doubles, re then im (Note [Complex numbers in the IR])
COMPLEX = ll.ArrayType(F64, 2)
_REGISTER = {"bool": I1, "i32": I32, "i64": I64, "f32": F32, "f64": F64, "fixed": I64,
             "ulog": F64, "complex": COMPLEX}
_STORAGE = {"bool": I8, "i32": I32, "i64": I64, "f32": F32, "f64": F64, "fixed": I64,
            "ulog": F64, "complex": COMPLEX}


#: LLVM truncates the names of local values at 1,024 characters
#: (`-non-global-value-max-name-size`), which made two long names one.
_LOCAL_NAME_CHARACTERS = 96


def local_name(name: str) -> str:
    """The name of a local LLVM value for the rev variable `name`: its C identifier,
    shortened (with a digest of the whole name, so different names stay different)
    where it is long."""
    identifier = c_identifier(name)
    if len(identifier) <= _LOCAL_NAME_CHARACTERS:
        return identifier
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
    return f"{identifier[:_LOCAL_NAME_CHARACTERS - 17]}_{digest}"


def llvm_type(t: str):
    return _REGISTER[t]


def storage_type(t: str):
    return _STORAGE[t]
