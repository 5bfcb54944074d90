"""What an ahead-of-time compile emits: the specialisations of a program's functions
that its declarations fix (`rlang compile --emit …`, rlang/backends/llvm/aot.py and
rlang/backends/cuda/ptx.py)."""
from __future__ import annotations

from ..ir import nodes as ir
from ..errors import RlangError
from .statements import lower_many


def declared_types(fn, undeclared: str = "f64") -> tuple:
    """The specialisation types of a function's parameters (`undeclared` where a
    parameter has no declared type)."""
    types = []
    for param in fn.params:
        t = param.type
        if t is None:
            types.append(undeclared)
        elif t.is_stack:
            types.append(ir.StackType(t.scalar))
        else:
            types.append(ir.ArrayType(t.scalar, t.ndim) if t.ndim else t.scalar)
    return tuple(types)


def entries_of(unit, invcheck: bool) -> tuple:
    """(specialisations to compile as (name, types, inverse), functions left out as
    (name, reason)): each function forward and inverse (`main` forward only), with
    its declared types, undeclared parameters as f64, else as i64."""
    entries, skipped, names = [], [], {}
    for name, fn in unit.functions.items():
        directions = (False,) if name == "main" else (False, True)   # main has no inverse
        same = names.setdefault(ir.c_identifier(name), name)
        if same != name:                # `g!` and `g_`: one symbol; the first one is kept
            skipped.append((name, f"`{same}` has the same name in compiled code "
                                  f"(`{ir.c_identifier(name)}`)"))
            continue
        error = None
        for undeclared in ("f64", "i64"):   # undeclared parameters: f64, else i64
            try:
                types = declared_types(fn, undeclared)
                for inverse in directions:
                    lower_many(unit, [(name, types, inverse)], invcheck)
            except RlangError as failure:   # unsupported, or not typable this way
                error = error or failure
                continue
            entries += [(name, types, inverse) for inverse in directions]
            error = None
            break
        if error is not None:
            skipped.append((name, error.message))
    return entries, skipped
