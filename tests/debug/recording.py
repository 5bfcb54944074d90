"""The reference the debugger's stops are compared with: the interpreter, noting
(line, the running function's variables) before each simple statement it runs
(`RecordingInterpreter`), and the same note taken of a stepping machine (`stop_of`)."""
from __future__ import annotations

from rlang.debug.machine import is_simple
from rlang.frontend import ast
from rlang.interp.interpreter import Interpreter
from rlang.values import format_value


class RecordingInterpreter(Interpreter):
    """The interpreter, with `seen`: (line, store) before each simple statement."""

    def __init__(self, unit):
        super().__init__(unit)
        self.seen = []
        for kind in (ast.Update, ast.Instr, ast.Alloc, ast.Dealloc, ast.Zeros, ast.Safe):
            self._stmt[kind] = self._recording(self._stmt[kind])

    def _recording(self, run):
        def record(stmt, env):
            self.seen.append((stmt.span.line, store_of(env)))
            run(stmt, env)
        return record


def store_of(env: dict) -> tuple:
    """A frame's variables as text, in the order they were bound."""
    return tuple((k, format_value(v)) for k, v in env.items())


def stop_of(machine) -> list:
    """[(line, store)] when the machine stands before a simple statement, else []."""
    stmt = machine.statement
    if stmt is not None and is_simple(stmt):
        return [(stmt.span.line, store_of(machine.frame.env))]
    return []
