"""What an ahead-of-time compile emits: the specialisations of a program's functions
that its declarations, the use of its undeclared parameters, or the command line's
signatures fix (`rlang compile --emit …`, rlang/backends/llvm/aot.py and
rlang/backends/cuda/ptx.py)."""
from __future__ import annotations

from ..ir import nodes as ir
from ..errors import RlangError
from .parameter_use import array_ranks, integer_params
from .statements import lower_many


def ir_type(t):
    """The IR type of a type as written (an ast.TypeRef)."""
    if t.is_stack:
        return ir.StackType(t.scalar)
    return ir.ArrayType(t.scalar, t.ndim) if t.ndim else t.scalar


def declared_types(fn, undeclared: str = "f64", ranks: dict | None = None,
                   integers: frozenset = frozenset()) -> tuple:
    """The specialisation types of a function's parameters: the declared type, else
    an array of rank `ranks[name]` or a scalar, of i64 for the names in `integers`
    and of `undeclared` for the others (Note [Signatures from use])."""
    ranks = ranks or {}
    types = []
    for param in fn.params:
        if param.type is not None:
            types.append(ir_type(param.type))
            continue
        scalar = "i64" if param.name in integers else undeclared
        rank = ranks.get(param.name, 0)
        types.append(ir.ArrayType(scalar, rank) if rank else scalar)
    return tuple(types)


def entries_of(unit, invcheck: bool, signatures: dict | None = None) -> tuple:
    """(specialisations to compile as (name, types, inverse), functions left out as
    (name, reason)): each function forward and inverse (`main` forward only), with
    the types of `signatures` (name → tuple of IR types) where it names the function,
    else its declared types, an undeclared parameter being what its use shows (an
    array of its rank; i64 where it is an index), else f64, else i64."""
    signatures = signatures or {}
    entries, skipped, names = [], [], {}
    ranks = array_ranks(unit.functions)
    for name, fn in unit.functions.items():
        directions = (False,) if name == "main" else (False, True)   # main has no inverse
        same = names.setdefault(ir.c_identifier(name), name)
        if same != name:                # `g!` and `g_`: one symbol; the first one is kept
            skipped.append((name, f"`{same}` has the same name in compiled code "
                                  f"(`{ir.c_identifier(name)}`)"))
            continue
        if name in signatures:
            candidates = [signatures[name]]
        else:
            integers = integer_params(fn)
            candidates = list(dict.fromkeys(     # undeclared: f64, else i64
                declared_types(fn, undeclared, ranks[name], integers)
                for undeclared in ("f64", "i64")))
        error = None
        for types in candidates:
            try:
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
