"""A REPL session: the store of session variables, the functions defined so far,
and the history that `:undo` walks back (LANGUAGE.md §12).

In: complete inputs, one at a time (`Session.execute(text)`).  Out: values and
command output written to `out`, errors rendered as LANGUAGE.md §8 shows written to
`err`; `execute` returns False once `:quit` is given.

Invariants:
- Every input is checked and run by the real checker and interpreter (see
  rlang/repl/toplevel.py), on a copy of the store; the copy replaces the store only
  when the whole input succeeded.  An error, or Ctrl-C, anywhere in an input leaves
  the session exactly as it was.
- Each input is a source file of its own, `<repl N>`, so error messages quote it and
  functions defined in it keep their spans.
- `steps` holds every state-changing statement input with the functions and
  constants it ran with; `undo()` runs the inverse of the last one (the same
  functions, even if redefined since) and forgets it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from ..frontend import ast
from ..frontend.check import check
from ..deep import run_deep
from ..errors import RlangError
from ..interp.interpreter import Interpreter
from ..frontend.invert import invert_body
from ..frontend.loader import loads_unit
from ..frontend.unit import Unit
from ..span import Span
from ..values import format_value
from .reader import Command, Definitions, Expression, Statements, read
from .toplevel import (TOP, VALUE, allocations, callees, checked_form, copy_store,
                       running_form)


@dataclass(frozen=True)
class Step:
    """A statement input that changed the store, and what it ran with."""

    stmts: tuple
    functions: dict
    consts: dict


class Session:
    def __init__(self, out=None, err=None, invcheck: bool = True):
        self.out = out if out is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.invcheck = invcheck
        self.store: dict = {}           # session variable → value, in allocation order
        self.origins: dict = {}         # session variable → span of its allocation
        self.functions: dict = {}       # name → ast.Function
        self.consts: dict = {}          # name → ast.Const
        self.steps: list[Step] = []     # what :undo walks back, last last
        self.inputs = 0                 # inputs read so far (names the next one)
        self.errors = 0                 # inputs that failed

    # ------------------------------------------------------------ one input
    def execute(self, text: str) -> bool:
        """Run one complete input and report what goes wrong; False after `:quit`."""
        self.inputs += 1
        try:
            return self._execute(text, f"<repl {self.inputs}>")
        except RlangError as error:
            self.report(error)
        except KeyboardInterrupt:
            self.fail("interrupted; the session is as it was before the input")
        except RecursionError:
            self.fail("the input is nested or recurses too deeply")
        except MemoryError:
            self.fail("out of memory")
        except Exception as error:  # a bug in rlang: say so, keep the session
            self.fail(f"internal error: {type(error).__name__}: {error}\n"
                      "This is a bug in rlang; please report it with the input.")
        return True

    def _execute(self, text: str, file: str) -> bool:
        item = read(text, file, self.functions)
        if isinstance(item, Command):
            from .commands import run_command

            return run_command(self, item, file)
        if isinstance(item, Definitions):
            self.define(loads_unit(item.text, file))
        elif isinstance(item, Statements):
            self.run_statements(item.stmts, file)
        elif isinstance(item, Expression):
            self.write(format_value(self.evaluate(item.expr, file)))
        return True

    # -------------------------------------------------------------- output
    def write(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    def report(self, error: RlangError) -> None:
        """Render `error` (LANGUAGE.md §8) without the synthesized top-level frame."""
        error.frames = [frame for frame in error.frames if frame.function != TOP]
        self.out.flush()
        self.err.write(error.render() + "\n")
        self.err.flush()
        self.errors += 1

    def fail(self, message: str) -> None:
        self.out.flush()
        self.err.write(f"error: {message}\n")
        self.err.flush()
        self.errors += 1

    # --------------------------------------------------------- definitions
    def define(self, unit: Unit) -> list[str]:
        """Add the functions and constants of `unit` (checked with the functions
        they call) to the session; a name defined before is replaced."""
        functions = {**self.functions, **unit.functions}
        consts = {**self.consts, **unit.consts}
        reached = dict(unit.functions)
        for fn in unit.functions.values():
            reached.update(callees(fn.body, functions))
        run_deep(check, Unit(program=unit.program, file=unit.file, functions=reached,
                             consts=consts, redefinitions=unit.redefinitions))
        self.functions, self.consts = functions, consts
        return list(unit.functions) + list(unit.consts)

    def unit_of(self, functions: dict, file: str, consts: dict | None = None) -> Unit:
        """A unit holding `functions` and the session's constants (or `consts`)."""
        consts = self.consts if consts is None else consts
        program = ast.Program(tuple(functions.values()) + tuple(consts.values()))
        return Unit(program=program, file=file, functions=dict(functions), consts=dict(consts))

    # ---------------------------------------------------------- statements
    def run_statements(self, stmts: tuple, file: str) -> None:
        """Run statements on the store; remember them for `:undo` if they can
        change it (anything but `@safe`)."""
        self._commit(self._run(stmts, file, self.functions, self.consts), stmts)
        if not all(isinstance(stmt, ast.Safe) for stmt in stmts):
            self.steps.append(Step(stmts, callees(stmts, self.functions), dict(self.consts)))

    def evaluate(self, expr, file: str):
        """The value of an expression over the session variables (`<value> ← expr`
        run like any statement, and the store left as it was)."""
        env = self._run((ast.Alloc(VALUE, expr, span=expr.span),), file, self.functions,
                        self.consts)
        return env[VALUE]

    def undo(self) -> tuple:
        """Run the inverse of the last state-changing input; return that input."""
        if not self.steps:
            raise RlangError("nothing to undo")
        step = self.steps[-1]
        inverse = invert_body(step.stmts)
        self._commit(self._run(inverse, f"<repl {self.inputs}>", step.functions, step.consts),
                     inverse)
        self.steps.pop()
        return step.stmts

    def _commit(self, store: dict, stmts: tuple) -> None:
        """Make `store`, computed by `stmts`, the session's variables."""
        allocated = allocations(stmts)
        self.origins = {name: allocated.get(name) or self.origins.get(name) for name in store}
        self.store = store

    def _run(self, stmts: tuple, file: str, functions: dict, consts: dict) -> dict:
        """Check `stmts` as a function body over the session variables, run them on
        a copy of the store, and return the copy."""
        return run_deep(self._check_and_run, stmts, file, callees(stmts, functions), consts)

    def _check_and_run(self, stmts: tuple, file: str, reached: dict, consts: dict) -> dict:
        span = _span_of(stmts, file)
        checked = {**reached, TOP: checked_form(stmts, self.store, span, self.origins)}
        check(self.unit_of(checked, file, consts))
        store = copy_store(self.store)
        interpreter = Interpreter(self.unit_of(reached, file, consts), invcheck=self.invcheck,
                                  out=self.out)
        interpreter.run_in(running_form(stmts, span), store)
        return store


def _span_of(stmts: tuple, file: str):
    """A span covering the statements (for the synthesized nodes around them)."""
    spans = [stmt.span for stmt in stmts if stmt.span.line > 0]
    if not spans:
        return Span(file, 1, 1, 1, 2)
    first, last = spans[0], spans[-1]
    return Span(first.file, first.line, first.col, last.end_line, last.end_col)
