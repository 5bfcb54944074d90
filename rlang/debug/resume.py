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
from ..interp.interpreter import Interpreter
from ..interp.trail import FunctionPoint
from .machine import Machine
from .session import Session


def session_at_failure(error: RlangError) -> Session:
    """A session at the place `error` was raised; an RlangError saying why not when
    the error did not come from the interpreter running a function."""
    points = list(reversed(getattr(error, "trail", None) or []))
    if not points or not isinstance(points[0], FunctionPoint):
        raise RlangError("this error has no place to debug: post-mortem debugging needs a "
                         "failure of the interpreter while a function ran: load the program "
                         "with rlang.load(…, backend=\"interp\") and call it again, or run "
                         "it with `rlang run … --debug`")
    interp = points[0].interpreter
    if type(interp) is not Interpreter:
        raise RlangError("a failure of a gradient run cannot be debugged post-mortem: call "
                         "the function itself on the same arguments and debug that failure")
    if interp.budget is not None:
        raise RlangError("a sandboxed run cannot be debugged: the debugger runs without the "
                         "sandbox's limits; run the program without --sandbox / sandbox=True")
    machine = Machine(interp, points[0].function, points[0].env, points[0].backward)
    machine.frames = []
    machine.follow_trail(points)
    machine.show_through()
    session = Session(interp, machine, interp.unit.file)
    session.error = error
    return session


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
