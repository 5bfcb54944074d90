"""The reverse-stepping debugger (LANGUAGE.md §15): a stepping machine over the
interpreter (machine), the motions, breakpoints and watches (session), the
terminal front end (terminal), the Debug Adapter Protocol server (dap), and the
post-mortem entry at a failed run (resume).

`rlang.debug.post_mortem(error=None)` enters the terminal debugger where a call of a
program loaded with the interpreter failed, as `pdb.post_mortem` does.
"""
from __future__ import annotations


def post_mortem(error=None) -> int:
    """The terminal debugger at the failure `error` (default: the RlangError being
    handled, else the last one Python reported); see rlang/debug/resume.py."""
    from .resume import post_mortem as enter
    return enter(error)
