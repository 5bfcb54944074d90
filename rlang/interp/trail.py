"""Where the interpreter stood when an error left it: the points of `RlangError.trail`.

The interpreter appends one point per level it unwinds through, innermost first:
a `BodyPoint` per statement list, a `LoopIndex` per `for` loop, a `CallPoint` per
call statement and a `FunctionPoint` per function.  Nothing is recorded while no
error is raised (each level records in an `except` clause).  The debugger
(rlang/debug/resume.py) turns a trail back into a position it can step from.

# Note [Resuming at a failure]
A post-mortem must show the store as it was at the failure and let the user step
backward from there.  Re-running the program to the failure would need its inputs as
they were (a Python caller's arrays were updated in place) and would run at the
debugger's speed; instead the interpreter, as the error unwinds, notes where each
level was: which statement of which list, in which direction, with which `invcheck`,
each `for` loop's index, each call's bound arguments and each function's variables.
The variables are the live dictionaries, so the store is exactly the one the failing
statement saw.  A statement that fails leaves the store as it was before it (each
statement checks before it writes), so the position is *at* the failing statement.
A check made after a body ran (an `if` postcondition, a loop's condition after a
pass) records the end of that body instead, so stepping backward from there undoes
the body's last statement first.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BodyPoint:
    """At `body[index]` (== len(body): after its last statement), running `backward`
    relative to the source with `invcheck` as given."""

    body: tuple
    index: int
    backward: bool
    invcheck: bool


@dataclass
class LoopIndex:
    """The index value of the `for` loop `stmt` in the pass that failed."""

    stmt: object
    value: int


@dataclass
class CallPoint:
    """A call statement whose callee failed: its `CallEntry` (rlang/interp/calls.py)."""

    entry: object


@dataclass
class FunctionPoint:
    """A function that was running: its definition, its variables and direction, and
    the interpreter running it."""

    function: object
    env: dict
    backward: bool
    call_site: object
    interpreter: object


@dataclass
class AfterStatement:
    """The failing statement had run: a check after it failed (an expression argument
    a call changed, a `for` range its body changed); the position is after it."""


def record_body(error, stmts: tuple, stmt, backward: bool, invcheck: bool) -> None:
    """Note on `error` that `stmt` of `stmts` failed (found by identity: equal
    statements may stand twice in one list)."""
    for index, candidate in enumerate(stmts):
        if candidate is stmt:
            error.trail.append(BodyPoint(stmts, index, backward, invcheck))
            return


def record_end(error, body: tuple, backward: bool, invcheck: bool) -> None:
    """Note on `error` that a check after `body` ran failed."""
    error.trail.append(BodyPoint(body, len(body), backward, invcheck))
