"""Builders of small IR modules for the tests of rlang/ir (plain dataclasses of
rlang/ir/nodes.py: a function `f` of parameters, its body, a site table)."""
from __future__ import annotations

import textwrap

from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.ir import nodes as ir
from rlang.ir.passes import run_passes
from rlang.ir.walk import walk
from rlang.lower.statements import lower

VEC = ir.ArrayType("f64", 1, unit_stride=True)
IVEC = ir.ArrayType("i64", 1, unit_stride=True)


def f64(value: float) -> ir.Const:
    return ir.Const(value, "f64")


def read(var) -> ir.Read:
    return ir.Read(var)


def add(var, value, op="+=") -> ir.Update:
    return ir.Update(ir.VarPlace(var), op, value)


def times(a, b) -> ir.Binary:
    return ir.Binary("*", a, b, "f64")


def param(name, t="f64") -> ir.Var:
    return ir.Var(name, t, is_param=True)


def module_of(*functions, sites=None) -> ir.Module:
    return ir.Module(functions[0].symbol, {fn.symbol: fn for fn in functions},
                     [] if sites is None else sites)


def function(body, params=(), symbol="f", results=(), written=()) -> ir.Function:
    return ir.Function(symbol, symbol, False, tuple(params), tuple(body),
                       results=tuple(results), written=frozenset(written))


def a_site(module: ir.Module, kind: str) -> int:
    return module.add_site(ir.Site(kind, None, "f", False))


def body_of(module: ir.Module, symbol: str = "f") -> tuple:
    return module.functions[symbol].body


def count(module: ir.Module, kind) -> int:
    return sum(isinstance(s, kind) for fn in module.functions.values() for s in walk(fn.body))


def passed_from_source(source: str, file: str, name: str, types: tuple,
                       invcheck: bool) -> ir.Module:
    """The function `name` of the program `source` (shown as `file`), lowered for
    argument `types` and passed through every IR pass."""
    unit = loads_unit(textwrap.dedent(source), file)
    check(unit)
    return run_passes(lower(unit, name, types, False, invcheck))
