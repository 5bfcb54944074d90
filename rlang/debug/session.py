"""A debugging session: the motions of LANGUAGE.md §15 over a `Machine`, with
breakpoints and watches.  What the terminal debugger and the DAP server share.

In: a checked `Unit` and what to run (`Session.start`), or a failed run
(`Session.at_failure`, rlang/debug/resume.py).  Out: `Stop`s, each saying why the
session stopped and where.  Every motion catches the program's errors: an error
stops the session where it happened (reason "error"), and the user may step
backward from there.  Nothing here prints.

Motions: `step` (one statement, into calls), `next` (one statement of the current
list, calls run whole), `back` and `reverse_next` (their mirrors, running inverses),
`cont` and `reverse_cont` (to a breakpoint, a changed watch, an error, the end or the
start), `finish` (until the current function returns).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arguments import parse_argument
from ..errors import RlangError
from ..frontend import ast
from ..frontend.analysis import walk_stmts
from ..frontend.parser import parse_expression
from ..interp import ops
from ..interp.comparisons import values_equal
from ..interp.interpreter import Interpreter
from ..span import source_line
from ..values import Stack, format_value
from .machine import Machine, is_simple

#: Going back at the start, or forward at the end, says so and stays.
START, END = "start", "end"


@dataclass
class Stop:
    """Why a motion stopped: `reason` is "entry", "step", "breakpoint", "watch",
    "error", START or END; `detail` the breakpoint or the `(watch, old, new)`, or the
    error; `messages` lines the front end shows before the position."""

    reason: str
    detail: object = None
    messages: list = field(default_factory=list)


@dataclass
class Breakpoint:
    """`break LINE|FILE:LINE|FUNCTION [if EXPR]` as numbered by the session."""

    number: int
    file: str | None
    line: int | None
    function: str | None
    condition: object = None        # an expression AST
    condition_text: str = ""

    def describe(self) -> str:
        where = f"function {self.function}" if self.function else f"{self.file}:{self.line}"
        return f"Breakpoint {self.number} at {where}" + \
            (f" if {self.condition_text}" if self.condition_text else "")


class _Undefined:
    def __repr__(self):
        return "undefined"


UNDEFINED = _Undefined()


@dataclass
class Watch:
    """`watch VIEW`: the view, the frame it is read in, and its last value."""

    number: int
    text: str
    expr: object
    frame: object
    last: object


class Session:
    """A program stopped under the debugger; see the module docstring."""

    def __init__(self, interp: Interpreter, machine: Machine, file: str):
        self.interp, self.machine, self.file = interp, machine, file
        self.breakpoints: list[Breakpoint] = []
        self.watches: list[Watch] = []
        self._numbers = 0
        self.error: RlangError | None = None
        self._interrupted = False
        self._interruption = _Interruption(self)

    def interrupt(self) -> None:
        """Ask the running motion to stop at the next statement (Ctrl-C)."""
        self._interrupted = True

    @classmethod
    def start(cls, unit, function: str | None = None, args=(), inverse: bool = False,
              invcheck: bool = True, out=None) -> Session:
        """A session before the first statement of `function` (main when None; its
        inverse with `inverse`) on `args` (Python values, as `rlang.load` takes)."""
        interp = Interpreter(unit, invcheck=invcheck, out=out)
        name = "main" if function is None else function
        fn = unit.functions.get(name)
        if fn is None:
            if function is None:
                interp.run_main()           # raises the "no main" error of `rlang run`
            raise RlangError(f"{unit.file} has no function `{name}`")
        if function is None or (name == "main" and not fn.params and not args):
            if inverse:
                raise RlangError("--inverse needs a FUNCTION: `main` takes no arguments to "
                                 "run backward")
            env: dict = {}
        else:
            values = interp.bind_arguments(name, list(args))
            interp.check_writable(fn, values)
            if invcheck:
                interp.check_argument_aliasing(fn, values)
            env = dict(zip((p.name for p in fn.params), values))
        return cls(interp, Machine(interp, fn, env, inverse, invcheck), unit.file)

    # --------------------------------------------------------------- motions
    def step(self) -> Stop:
        return self._move(forward=True, until=lambda: True, whole=False)

    def back(self) -> Stop:
        return self._move(forward=False, until=lambda: True, whole=False)

    def next(self) -> Stop:
        depth = self.machine.depth
        return self._move(forward=True, until=lambda: self.machine.depth <= depth)

    def reverse_next(self) -> Stop:
        depth = self.machine.depth
        return self._move(forward=False, until=lambda: self.machine.depth <= depth)

    def finish(self) -> Stop:
        frames = len(self.machine.frames)
        if frames == 1:
            return self.cont()
        return self._move(forward=True, until=lambda: len(self.machine.frames) < frames)

    def cont(self) -> Stop:
        return self._move(forward=True, until=lambda: False)

    def reverse_cont(self) -> Stop:
        return self._move(forward=False, until=lambda: False)

    def _move(self, forward: bool, until, whole: bool = True) -> Stop:
        """Step the machine in one direction until `until()` holds, a breakpoint or a
        watch stops it, an error happens, or the program's end (start) is reached."""
        with self.interp.dialect():
            return self._moving(forward, until, whole and not self.breakpoints
                                and not self.watches)

    def _moving(self, forward: bool, until, whole: bool) -> Stop:
        """The motion; with `whole`, compound statements forward run whole on the
        interpreter (Note [Motions at the interpreter's speed])."""
        machine = self.machine
        if forward and machine.finished:
            return Stop(END, messages=[self._finished_message()])
        if not forward and machine.at_start:
            return Stop(START, messages=["at the start of the program"])
        self.error = None
        self._interrupted = False
        while True:
            try:
                if forward and whole and runs_whole(machine.statement):
                    machine.run_whole(self._interruption)
                elif forward:
                    machine.step()
                elif whole and runs_whole(machine.previous):
                    try:
                        machine.undo_whole(self._interruption)
                    except Interrupted:
                        raise
                    except RlangError:      # the store is back: step to the failure
                        whole = False
                        continue
                elif not machine.back():
                    return Stop(START, messages=["at the start of the program"])
            except Interrupted:
                return Stop("interrupted", messages=["interrupted"])
            except RlangError as error:
                self.error = error = self.interp.worded(error)
                return Stop("error", error, [error.render()])
            changed = self._changed_watch()
            if changed is not None:
                watch, old, new = changed
                return Stop("watch", changed, [f"Watchpoint {watch.number}: {watch.text}",
                                               f"old: {watch.text} = {_shown(old)}",
                                               f"new: {watch.text} = {_shown(new)}"])
            if forward and machine.finished:
                return Stop(END, messages=[self._finished_message()])
            hit = self.breakpoint_here()
            if hit is not None:
                return Stop("breakpoint", hit, [f"Breakpoint {hit.number}"])
            if until():
                return Stop("step")
            if self._interrupted:
                return Stop("interrupted", messages=["interrupted"])

    def _finished_message(self) -> str:
        return f"finished: `{self.machine.frames[0].function.name}` ran to its end"

    # ----------------------------------------------------------- breakpoints
    def add_breakpoint(self, spec: str) -> Breakpoint:
        """`LINE`, `FILE:LINE` or `FUNCTION`, optionally followed by `if EXPR`."""
        spec = spec.strip()
        where, _, condition_text = spec.partition(" if ")
        if spec.startswith("if "):
            raise RlangError("break needs a LINE or a FUNCTION before `if`")
        where = where.strip()
        if not where:
            raise RlangError("break needs a LINE or a FUNCTION")
        condition = parse_expression(condition_text.strip(), "<condition>") \
            if condition_text.strip() else None
        file, line, function = self.file, None, None
        head, colon, tail = where.rpartition(":")
        if colon and tail.isdigit():
            file, line = head, int(tail)
        elif where.isdigit():
            line = int(where)
        elif where in self.interp.functions:
            function = where
        else:
            raise RlangError(f"no function `{where}` and no line `{where}` to break at")
        if line is not None and not _has_statement(self.interp.unit, file, line):
            raise RlangError(f"no statement on line {line} of {file}")
        self._numbers += 1
        bp = Breakpoint(self._numbers, file, line, function, condition, condition_text.strip())
        self.breakpoints.append(bp)
        return bp

    def delete(self, number: int | None = None) -> list[int]:
        """Delete breakpoint or watch `number` (every one when None); the numbers deleted."""
        if number is None:
            gone = [b.number for b in self.breakpoints] + [w.number for w in self.watches]
            self.breakpoints, self.watches = [], []
            return gone
        before = len(self.breakpoints) + len(self.watches)
        self.breakpoints = [b for b in self.breakpoints if b.number != number]
        self.watches = [w for w in self.watches if w.number != number]
        if before == len(self.breakpoints) + len(self.watches):
            raise RlangError(f"no breakpoint or watch number {number}")
        return [number]

    def breakpoint_here(self) -> Breakpoint | None:
        machine = self.machine
        stmt = machine.statement
        frame = machine.frame
        at_function_start = len(frame.seqs) == 1 and frame.seq.index == 0
        for bp in self.breakpoints:
            if bp.function is not None:
                hit = at_function_start and frame.function.name == bp.function
            else:
                hit = stmt is not None and stmt.span.line == bp.line and stmt.span.file == bp.file
            if hit and (bp.condition is None or self._holds(bp.condition)):
                return bp
        return None

    def _holds(self, condition) -> bool:
        try:
            value = self.interp.evaluator.eval(condition, self.machine.frame.env)
            return ops.truth(value, "a breakpoint condition", condition.span)
        except RlangError:
            return True             # a condition that cannot be evaluated stops

    # --------------------------------------------------------------- watches
    def add_watch(self, text: str) -> Watch:
        expr = parse_expression(text.strip(), "<watch>")
        if not ast.is_view(expr):
            raise RlangError(f"`{text.strip()}` is not a view (a variable, an element or a "
                             "field)")
        frame = self.machine.frame
        self._numbers += 1
        watch = Watch(self._numbers, text.strip(), expr, frame, self._read(expr, frame.env))
        self.watches.append(watch)
        return watch

    def _changed_watch(self):
        for watch in self.watches:
            frame = watch.frame if watch.frame in self.machine.frames else None
            now = UNDEFINED if frame is None else self._read(watch.expr, frame.env)
            if not _same(now, watch.last):
                old, watch.last = watch.last, now
                return watch, old, now
        return None

    def _read(self, expr, env):
        try:
            return _snapshot(self.interp.evaluator.eval(expr, env))
        except RlangError:
            return UNDEFINED

    # --------------------------------------------------------------- looking
    def evaluate(self, text: str, frame: int = 0):
        """The value of the expression `text` in frame `frame` (0: the innermost)."""
        expr = parse_expression(text.strip(), "<print>")
        with self.interp.dialect():
            return self.interp.evaluator.eval(expr, self._frame(frame).env)

    def locals(self, frame: int = 0) -> list[tuple[str, object]]:
        """The variables of frame `frame`, in the order they were bound."""
        return list(self._frame(frame).env.items())

    def _frame(self, number: int):
        frames = self.machine.frames
        if not 0 <= number < len(frames):
            raise RlangError(f"no frame {number}: frames are 0 to {len(frames) - 1}")
        return frames[len(frames) - 1 - number]

    def where(self) -> list[tuple[str, bool, object]]:
        """The call chain, innermost first: (function, backward, span of its position)."""
        machine = self.machine
        chain = [(machine.frame.function.name, machine.frame.backward, machine.span())]
        frames = machine.frames
        for k in range(len(frames) - 1, 0, -1):
            chain.append((frames[k - 1].function.name, frames[k - 1].backward,
                          frames[k].call_site))
        return chain

    def position(self):
        """The span of the statement the session stands before (see Machine.span)."""
        return self.machine.span()

    def line(self) -> tuple[str, int]:
        """The file and line of the position: the statement's first line, or at the
        end of a function its last (the `end`)."""
        span = self.position()
        if self.machine.statement is not None or self.machine.frame.seq.owner.stmt is not None:
            return span.file, span.line
        # a Janus procedure's span is its name; its last line is its last statement's
        body = self.machine.frame.function.body
        return span.file, max([span.end_line] + [s.span.end_line for s in walk_stmts(body)])

    def location(self) -> str:
        """`FILE:LINE: <source line>` of the position (LANGUAGE.md §15)."""
        file, line = self.line()
        text = source_line(file, line) or ""
        return f"{file}:{line}: {text.strip()}"


# Note [Motions at the interpreter's speed]
# Stepping one statement at a time costs the machine's bookkeeping on every statement
# (about half the interpreter's speed).  A motion that cannot stop inside a compound
# statement (`next`, `continue`, `finish` while no breakpoint or watch is set) runs
# it whole on the interpreter instead (Machine.run_whole), at the interpreter's speed.
# If it fails inside, the error's trail puts the machine where it failed, as for a
# post-mortem.  Ctrl-C and DAP's pause still work: the statement runs with a budget
# (the sandbox's hook in every loop pass and call) that raises `Interrupted` once
# the session is interrupted, and the trail puts the machine where that happened.
# Going backward, `reverse-next` and `reverse-continue` undo a compound statement whole
# (Machine.undo_whole), running its inverse on the interpreter.  An error in the
# middle of an inverted statement has no position in the forward source, so the
# frame's store is copied first (one copy, dropped once the statement is undone: no
# log builds up), put back on an error, and the statement is then undone step by
# step to stand where it fails; an interruption puts the store back and stops
# before the statement.  `step` and `back` always enter.


class Interrupted(RlangError):
    """A statement run whole was interrupted (Session.interrupt)."""


class _Interruption:
    """The budget a statement run whole gets: its loops and calls check whether the
    session was interrupted; no limits."""

    def __init__(self, session: Session):
        self.session = session

    def tick(self, span) -> None:
        if self.session._interrupted:
            raise Interrupted("interrupted", span)

    def enter(self, depth: int, span) -> None:
        self.tick(span)

    def reserve(self, *_) -> None:
        pass

    release = check = reserve


def runs_whole(stmt) -> bool:
    """Whether a motion that cannot stop inside `stmt` may run it whole: a compound
    statement or a call (a `@routine` marker is stepped: it belongs to its list)."""
    return stmt is not None and not is_simple(stmt) and \
        not isinstance(stmt, (ast.Routine, ast.UnRoutine))


def _has_statement(unit, file: str, line: int) -> bool:
    """Whether a statement of `unit` starts on `line` of `file`."""
    for fn in unit.functions.values():
        for stmt in walk_stmts(fn.body):
            if stmt.span.file == file and stmt.span.line == line:
                return True
    return False


def _snapshot(value):
    return value.copy() if isinstance(value, (np.ndarray, Stack)) else value


def _same(a, b) -> bool:
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if isinstance(a, Stack) or isinstance(b, Stack):
        return isinstance(a, Stack) and isinstance(b, Stack) and a.items == b.items
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return values_equal(a, b, 0.0)
    return type(a) is type(b) and (a == b or a != a and b != b)


def _shown(value) -> str:
    return "undefined" if value is UNDEFINED else format_value(value)


def launch(file: str, function: str | None = None, arg_texts=(), inverse: bool = False,
           invcheck: bool = True, out=None, modular: bool = False) -> Session:
    """Load and check `file` (rev or Janus, whose integers wrap at 32 bits with
    `modular`) and start a session on `function` with the arguments written as on the
    command line (rev literals)."""
    from ..frontend.check import check
    from ..frontend.loader import load_unit
    unit = load_unit(file, modular=modular)
    check(unit)
    args = [parse_argument(text, k + 1) for k, text in enumerate(arg_texts)]
    return Session.start(unit, function, args, inverse, invcheck, out)
