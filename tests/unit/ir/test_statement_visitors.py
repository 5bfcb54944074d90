"""Statement visitors dispatch through explicit tables, and each handles every form.

The IR's visitors (both emitters and both derivative transforms) dispatch through
`ir.STATEMENT_VISITS`; the lowering through `statements.LOWERINGS`.  These tests walk
the tables: a statement class without a handler fails here, not in a user's program.
"""
from __future__ import annotations

import dataclasses

import pytest

from rlang.ad.adjoint_ir import AdjointFunction
from rlang.ad.tangent_ir import TangentFunction
from rlang.frontend import ast
from rlang.ir import nodes as ir
from rlang.lower.statements import LOWERINGS

#: Every IR statement class: the dataclasses of rlang/ir/nodes.py below its
#: "statements" heading that a function body holds.
IR_STATEMENTS = {ir.Update, ir.Push, ir.Pop, ir.Instr, ir.If, ir.While, ir.From, ir.For,
                 ir.Call, ir.Alloc, ir.Dealloc, ir.Print, ir.Assert}


def _visitors():
    from rlang.backends.cuda.emit import FunctionWriter
    from rlang.backends.llvm.emit import _FunctionEmitter

    return [_FunctionEmitter, FunctionWriter, AdjointFunction, TangentFunction]


def test_the_table_names_every_ir_statement():
    assert set(ir.STATEMENT_VISITS) == IR_STATEMENTS


@pytest.mark.parametrize("visitor", _visitors(), ids=lambda v: v.__name__)
def test_every_visitor_handles_every_statement(visitor):
    missing = [f"{cls.__name__} → {method}" for cls, method in ir.STATEMENT_VISITS.items()
               if not callable(getattr(visitor, method, None))]
    assert missing == []


def test_visit_calls_the_method_of_the_statement_class():
    seen = []

    class Recorder:
        def __getattr__(self, name):
            return lambda stmt: seen.append((name, type(stmt).__name__))

    ir.visit(Recorder(), ir.Assert(ir.Const(True, "bool"), 0))
    assert seen == [("_assert", "Assert")]
    with pytest.raises(KeyError):
        ir.visit(Recorder(), ir.Branch(None, None, ()))      # not a statement


def _ast_statements() -> set:
    """The AST's statement classes: the dataclasses between its "statements" and
    "top level" headings."""
    import inspect

    source = inspect.getsource(ast)
    statements = source[source.index(" statements\n"):source.index(" top level\n")]
    return {cls for name, cls in vars(ast).items()
            if dataclasses.is_dataclass(cls) and f"class {name}:" in statements}


def test_the_lowering_handles_every_statement_but_the_routine_pairs():
    # @routine / ~@routine are paired by `body`; an `if` branch is part of its `If`
    by_body = {ast.Routine, ast.UnRoutine, ast.IfBranch}
    assert set(LOWERINGS) == _ast_statements() - by_body


def test_every_lowering_method_exists():
    from rlang.lower.statements import _FunctionLowering as lowering

    assert [m for m in LOWERINGS.values() if not callable(getattr(lowering, m, None))] == []
