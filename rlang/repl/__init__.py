"""The rev REPL (LANGUAGE.md §12; docs/repl.md): `rlang` with no arguments, or
`rlang repl`.

In: standard input.  Out: values and command output on stdout, errors on stderr.
`start()` picks the mode: on a terminal, the prompt-toolkit session of
rlang/repl/terminal.py (highlighting, history, completion, multi-line editing);
otherwise `run_script`, which reads statements line by line, continues an unfinished
one on the next line, and prints results without prompts.

Modules: `reader` (what an input is, and whether it is finished), `toplevel` (top-
level statements as functions for the checker and the interpreter), `session` (the
store, definitions and `:undo`), `commands` (the `:` commands), `terminal` (the
interactive front end; the only one that imports prompt-toolkit).
"""
from __future__ import annotations

import sys

#: Exit status when Ctrl-C arrives while no statement runs (script mode).
EXIT_INTERRUPTED = 130


def start(invcheck: bool = True) -> int:
    """Run the REPL on standard input; return the exit status."""
    from .session import Session

    session = Session(invcheck=invcheck)
    if sys.stdin is not None and sys.stdin.isatty():
        from .terminal import run_terminal

        return run_terminal(session)
    if hasattr(sys.stdout, "reconfigure"):     # a program driving the REPL sees each line
        sys.stdout.reconfigure(line_buffering=True)
    return run_script(session, sys.stdin)


def run_script(session, stream) -> int:
    """Read inputs line by line from `stream` and run each once it is complete.

    An error is reported (stderr) and the script goes on with the next input, as a
    REPL would; the exit status is 1 if any input failed, else 0.  Ctrl-C while a
    statement runs interrupts that statement (and counts as a failure); while
    reading it ends the script with status 130.  `:quit` ends it early."""
    from .reader import is_complete

    pending = ""
    while True:
        try:
            line = stream.readline() if stream is not None else ""
        except KeyboardInterrupt:
            return EXIT_INTERRUPTED
        except (OSError, UnicodeDecodeError) as error:
            session.fail(f"cannot read the input: {error}")
            break
        if not line:
            break
        pending += line
        if not is_complete(pending):
            continue
        text, pending = pending, ""
        if not session.execute(text):
            break
    if pending.strip():         # the input ended inside a statement: say where
        session.execute(pending)
    return 1 if session.errors else 0
