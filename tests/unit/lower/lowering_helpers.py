"""What the lowering tests share: a checked unit from source, a lowered module, its
entry function."""
from __future__ import annotations

import textwrap

from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.ir import nodes as ir
from rlang.lower.statements import lower


def checked_unit(source: str, file: str):
    """The checked unit of dedented `source`, named `file` in spans."""
    unit = loads_unit(textwrap.dedent(source), file)
    check(unit)
    return unit


def lowered(unit, name, types, inverse=False, invcheck=True) -> ir.Module:
    return lower(unit, name, tuple(types), inverse, invcheck)


def entry_of(module: ir.Module) -> ir.Function:
    return module.functions[module.entry]
