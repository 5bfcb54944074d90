"""Post-mortem: a debugging session standing where a run of the interpreter failed.

In: an `RlangError` raised by the interpreter (its `trail`, Note [Resuming at a
failure] in rlang/interp/trail.py).  Out: `session_at_failure(error)`, a `Session`
whose machine stands at the failing statement (or at the end of the body whose
check failed), with the store as the failure left it, so the user can step backward
from there.  `post_mortem(error=None)` runs the terminal debugger on it (the error
being handled, or the last one Python reported, when none is given), as
`pdb.post_mortem` does.
"""
from __future__ import annotations

import sys

from ..errors import RlangError
from ..frontend import ast
from ..interp.interpreter import Interpreter
from ..interp.loops import for_range
from ..interp.trail import AfterStatement, BodyPoint, CallPoint, FunctionPoint, LoopIndex
from .machine import Frame, Machine, Owner, Seq
from .session import Session


def session_at_failure(error: RlangError) -> Session:
    """A session at the place `error` was raised; an RlangError saying why not when
    the error did not come from the interpreter running a function."""
    points = list(reversed(getattr(error, "trail", None) or []))
    if not points or not isinstance(points[0], FunctionPoint):
        raise RlangError("this error has no place to debug: post-mortem debugging needs a "
                         "failure of the interpreter while a function ran (load the program "
                         "with backend=\"interp\", the default, or run it with `rlang run "
                         "… --debug`)")
    interp = points[0].interpreter
    if type(interp) is not Interpreter:
        raise RlangError("a failure of a gradient run cannot be debugged post-mortem: call "
                         "the function itself on the same arguments and debug that failure")
    if interp.budget is not None:
        raise RlangError("a sandboxed run cannot be debugged: the debugger runs without the "
                         "sandbox's limits; run the program without --sandbox / sandbox=True")
    machine = Machine(interp, points[0].function, points[0].env, points[0].backward)
    machine.frames = _frames(interp, points)
    machine.show_through()
    session = Session(interp, machine, interp.unit.file)
    session.error = error
    return session


def _frames(interp, points) -> list[Frame]:
    """The machine's frames from a trail read outermost first."""
    frames: list[Frame] = []
    entry = loop_index = None
    for point in points:
        if isinstance(point, FunctionPoint):
            frames.append(Frame(point.function, point.env, point.backward, point.call_site,
                                entry, []))
            entry = None
        elif isinstance(point, CallPoint):
            entry = point.entry
        elif isinstance(point, LoopIndex):
            loop_index = point
        elif isinstance(point, BodyPoint):
            frame = frames[-1]
            owner = _owner(interp, frame, point.body, loop_index)
            loop_index = None
            frame.seqs.append(Seq(point.body, point.index, owner, point.backward,
                                  point.invcheck))
        elif isinstance(point, AfterStatement):
            frames[-1].seqs[-1].index += 1
    return frames


def _owner(interp, frame: Frame, body: tuple, loop_index: LoopIndex | None) -> Owner:
    """The owner of the statement list `body`, entered from the statement the frame's
    innermost list stands at."""
    if not frame.seqs:
        return Owner("function")
    outer = frame.seqs[-1]
    stmt = outer.body[outer.index]
    match stmt:
        case ast.If():
            taken = next((k for k, branch in enumerate(stmt.branches) if branch.body is body),
                         None)
            return Owner("if", stmt, taken)
        case ast.While():
            return Owner("while", stmt)
        case ast.From():
            return Owner("do" if body is stmt.body else "loop", stmt)
        case ast.For():
            bounds, indices = for_range(interp, stmt, frame.env)
            value = loop_index.value
            frame.env[stmt.var] = value
            k = next((k for k, i in enumerate(indices) if i == value), 0)
            return Owner("for", stmt, None, bounds, indices, k)
    return Owner("block", stmt)


def post_mortem(error: RlangError | None = None) -> int:
    """The terminal debugger at the failure `error` (default: the exception being
    handled, else the last one Python reported, `sys.last_value`)."""
    from .terminal import run_terminal
    if error is None:
        error = sys.exc_info()[1] or getattr(sys, "last_value", None)
    if not isinstance(error, RlangError):
        raise ValueError("post_mortem needs an RlangError (none is being handled, and "
                         "Python reported none)")
    return run_terminal(session_at_failure(error))
