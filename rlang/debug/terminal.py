"""The terminal debugger: `rlang debug FILE [FUNCTION] [ARGS…] [--inverse]` and
`rlang run … --debug` (LANGUAGE.md §15).

In: a `Session` (rlang/debug/session.py), the lines typed, and where to write.  Out:
`run_commands` returns the exit status when `quit` or the end of input ends the
session.  On a terminal, input is read with prompt-toolkit (prompt `(rdb) `, history,
Enter on an empty line repeats the last motion) and each stop shows the highlighted
source around the statement; otherwise commands are read line by line, with no
prompt and no colour, and every value is printed on its own line.  Each stop prints
`FILE:LINE: <source line>`.  (Janus source is shown without colours: the lexer is
rev's.)  Ctrl-C during a long motion stops it at the next
statement.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager

from ..errors import RlangError
from ..span import SOURCES
from ..values import format_value
from .session import Session

HELP = """\
step, s               run one statement, into calls
next, n               run one statement; calls run whole
back, b               undo one statement (its inverse runs), into calls from their end
reverse-next, rn      undo one statement; calls are undone whole
continue, c           run to a breakpoint, a changed watch, an error or the end
reverse-continue, rc  run backward to a breakpoint, a changed watch or the start
finish                run until the current function returns
break LINE|FILE:LINE|FUNCTION [if EXPR]   set a breakpoint
delete [N]            delete breakpoint or watch N (all without N)
watch VIEW            stop when VIEW changes, in either direction
print EXPR, p EXPR    print a value
locals                the variables of the current function
where, bt             the call chain, innermost first, with directions
quit, q               leave the debugger"""

#: Motions, by every name they answer to, as Session method names.
MOTIONS = {
    "step": "step", "s": "step", "next": "next", "n": "next", "back": "back", "b": "back",
    "reverse-next": "reverse_next", "rn": "reverse_next", "continue": "cont", "c": "cont",
    "reverse-continue": "reverse_cont", "rc": "reverse_cont", "finish": "finish",
}

#: Lines of source shown above and below the statement on a terminal.
CONTEXT = 2


class Debugger:
    """Runs commands against a session, writing to `write` (a str → None)."""

    def __init__(self, session: Session, write, terminal: bool = False):
        self.session, self.write, self.terminal = session, write, terminal

    def show_position(self) -> None:
        """The stop line, and on a terminal the source around it."""
        if self.terminal:
            self._show_context()
        self.write(self.session.location())

    def run(self, line: str) -> bool:
        """Run one command line; False when it asks to quit."""
        word, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if not word:
            return True
        if word in ("quit", "q"):
            return False
        try:
            self._command(word, rest)
        except RlangError as error:
            self.write(error.render() if error.span is not None else f"error: {error.message}")
        return True

    def _command(self, word: str, rest: str) -> None:
        session = self.session
        if word in MOTIONS:
            with _interruptible(session):
                stop = getattr(session, MOTIONS[word])()
            for message in stop.messages:
                self.write(message)
            self.show_position()
        elif word == "break":
            self.write(session.add_breakpoint(rest).describe())
        elif word == "delete":
            numbers = session.delete(int(rest) if rest.isdigit() else None)
            if rest and not rest.isdigit():
                raise RlangError(f"delete takes a number, not `{rest}`")
            self.write("deleted " + (", ".join(map(str, numbers)) if numbers else "nothing"))
        elif word in ("print", "p"):
            if not rest:
                raise RlangError("print needs an expression")
            self.write(f"{rest} = {format_value(session.evaluate(rest))}")
        elif word == "locals":
            for name, value in session.locals():
                self.write(f"{name} = {format_value(value)}")
        elif word in ("where", "bt"):
            for k, (function, backward, span) in enumerate(session.where()):
                direction = "backward" if backward else "forward"
                self.write(f"#{k} {function} ({direction}) at {span.file}:{span.line}")
        elif word == "watch":
            watch = session.add_watch(rest)
            self.write(f"Watchpoint {watch.number}: {watch.text} = "
                       f"{format_value(watch.last) if watch.last is not None else 'undefined'}")
        elif word == "help":
            for line in HELP.splitlines():
                self.write(line)
        else:
            raise RlangError(f"unknown command `{word}` (type `help` for the commands)")

    def _show_context(self) -> None:
        file, current = self.session.line()
        text = SOURCES.get(file)
        if text is None:
            return
        lines = text.splitlines()
        for number in range(max(1, current - CONTEXT), min(len(lines), current + CONTEXT) + 1):
            marker = "→" if number == current else " "
            text = lines[number - 1]
            self.write(f"{marker}{number:5} " + (_highlighted(text) if file.endswith(".rev")
                                                 else text))


def run_commands(session: Session, lines, write, terminal: bool = False) -> int:
    """Stop before the first statement, then run each command line of `lines` (an
    iterable of str) until `quit` or its end; 0."""
    debugger = Debugger(session, write, terminal)
    if session.error is not None:
        write(session.error.render())
    debugger.show_position()
    for line in lines:
        if not debugger.run(line):
            break
    return 0


def run_terminal(session: Session) -> int:
    """The debugger on this process's standard input and output: prompt-toolkit on
    a terminal, plain lines otherwise."""
    def write(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return run_commands(session, (line.rstrip("\n") for line in sys.stdin), write)
    return run_commands(session, prompted_lines(), _ansi_writer(), terminal=True)


def prompted_lines(input=None, output=None):
    """Lines typed at the `(rdb) ` prompt (prompt-toolkit's `input`/`output`, the
    terminal by default); an empty line repeats the last motion."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import InMemoryHistory
    prompt = PromptSession(history=InMemoryHistory(), input=input, output=output)
    last = ""
    while True:
        try:
            line = prompt.prompt("(rdb) ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return
        if not line.strip():
            line = last
        elif line.split()[0] in MOTIONS:
            last = line
        yield line


def _ansi_writer():
    from prompt_toolkit import print_formatted_text
    from prompt_toolkit.formatted_text import ANSI

    def write(text: str) -> None:
        print_formatted_text(ANSI(text))
    return write


def _highlighted(line: str) -> str:
    """`line` of rev source in ANSI colours (Pygments' terminal formatter)."""
    from pygments import highlight
    from pygments.formatters import TerminalFormatter

    from ..highlight import RevLexer
    return highlight(line, RevLexer(), TerminalFormatter()).rstrip("\n")


@contextmanager
def _interruptible(session: Session):
    """Ctrl-C asks the motion to stop at the next statement (Session.interrupt)."""
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: session.interrupt())
    except ValueError:                  # not the main thread: no handler
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
