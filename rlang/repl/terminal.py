"""The interactive REPL on a terminal, built on prompt-toolkit.

In: a `Session`, and optionally prompt-toolkit `input`/`output` objects (the tests
pass a pipe and a dummy output).  Out: `run_terminal` returns the exit status (0)
when Ctrl-D or `:quit` ends the session.

- Input is highlighted by the Pygments lexer of rlang/highlight.py.
- History is kept across sessions in `history_path()`: $RLANG_HISTORY, else
  $XDG_DATA_HOME/rlang/history, else ~/.local/share/rlang/history.
- Tab completes keywords, annotations, built-ins, instructions, types, the session's
  functions, constants and variables, `:` commands, and file names after `:load`.
- A paste is typed line by line, each newline an Enter (Note [Pasted input]).
- Enter runs the input when it is complete (reader.is_complete: a genuine syntax
  error counts as complete, so it is reported at once) and otherwise starts a new,
  indented line; Escape Enter always starts a new line.  A recalled history entry
  is a whole multi-line input.
- Ctrl-C at the prompt abandons the input; while a statement runs it interrupts it
  (Session.execute reports it and keeps the session as it was).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.key_binding.key_processor import KeyPress
from prompt_toolkit.keys import Keys
from prompt_toolkit.lexers import PygmentsLexer

from .. import __version__
from ..highlight import (ANNOTATIONS, BUILTIN_FUNCTIONS, INSTRUCTIONS, TYPES, RevLexer)
from ..frontend.parser import KEYWORDS
from ..primitives import CONSTANTS
from .commands import COMMANDS
from .reader import is_complete

PROMPT = "rev> "
CONTINUATION = ".... "
INDENT = "    "
#: Lines whose first word opens a block: the next line is indented one more level.
_OPENING_WORDS = ("function", "if", "elseif", "else", "while", "for", "begin", "from", "do",
                  "loop", "@routine", "@parallel", "@inline", "~begin")
_CLOSING_WORDS = ("end", "else", "elseif", "loop", "until", "do")
_WORD = re.compile(r"(@|[A-Za-z_α-ωΑ-Ω])[A-Za-z0-9_α-ωΑ-Ω]*!?$|@$")


def history_path() -> Path:
    """Where the history of inputs is kept (see the module docstring)."""
    explicit = os.environ.get("RLANG_HISTORY")
    if explicit:
        return Path(explicit).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "rlang" / "history"


def _history():
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError:             # read-only home: keep this session's history only
        return InMemoryHistory()
    return FileHistory(str(path))


# ------------------------------------------------------------------ completion

def completions(session, before_cursor: str) -> list[str]:
    """The words that complete the text before the cursor, in alphabetical order."""
    line = before_cursor.rsplit("\n", 1)[-1]
    if re.fullmatch(r"\s*:\w*", line):
        typed = line.strip()
        return [f":{name}" for name in COMMANDS if f":{name}".startswith(typed)]
    word = _WORD.search(line)
    if word is None:
        return []
    prefix = word.group(0)
    return sorted(w for w in _vocabulary(session) if w.startswith(prefix) and w != prefix)


def _vocabulary(session) -> set[str]:
    return {*KEYWORDS, *ANNOTATIONS, *BUILTIN_FUNCTIONS, *INSTRUCTIONS, *TYPES, *CONSTANTS,
            *session.functions, *session.consts, *session.store}


def _is_rev_or_folder(name: str) -> bool:
    return name.endswith(".rev") or os.path.isdir(name)


class ReplCompleter(Completer):
    """prompt-toolkit's view of `completions` (file names after `:load`)."""

    def __init__(self, session):
        self.session = session
        self.paths = PathCompleter(expanduser=True, file_filter=_is_rev_or_folder)

    def get_completions(self, document, complete_event):
        before = document.text_before_cursor
        load = re.match(r"\s*:load\s+", before)
        if load:
            path = Document(before[load.end():], len(before) - load.end())
            yield from self.paths.get_completions(path, complete_event)
            return
        typed = len(_WORD.search(before).group(0)) if _WORD.search(before) else 0
        if re.fullmatch(r"\s*:\w*", before.rsplit("\n", 1)[-1]):
            typed = len(before.rsplit("\n", 1)[-1].strip())
        for word in completions(self.session, before):
            yield Completion(word, start_position=-typed)


# ------------------------------------------------------------------- the keys

def next_line_indent(document) -> str:
    """The indentation of a new line after the cursor's line."""
    line = document.current_line_before_cursor
    indent = line[: len(line) - len(line.lstrip())]
    first = line.strip().split(" ", 1)[0].split("(", 1)[0]
    return indent + INDENT if first in _OPENING_WORDS else indent


def dedent_closing_line(buffer) -> None:
    """Move a line that closes a block (`end`, `else`, …) back one level."""
    document = buffer.document
    line = document.current_line
    if line.startswith(INDENT) and line.strip().split(" ", 1)[0] in _CLOSING_WORDS:
        start = document.cursor_position + document.get_start_of_line_position()
        buffer.text = buffer.text[:start] + buffer.text[start + len(INDENT):]
        buffer.cursor_position = start + len(line) - len(INDENT)


def key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event):
        buffer = event.current_buffer
        dedent_closing_line(buffer)
        if is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n" + next_line_indent(buffer.document))

    @bindings.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n" + next_line_indent(event.current_buffer.document))

    @bindings.add(Keys.BracketedPaste)
    def _paste(event):                  # Note [Pasted input]
        if "\n" in event.data or "\r" in event.data:
            event.key_processor.feed_multiple(pasted_keys(event.data), first=True)
        else:
            event.current_buffer.insert_text(event.data)

    return bindings


def pasted_keys(text: str) -> list[KeyPress]:
    """The keys that type the pasted `text` line by line: each line (without the
    indentation it brought, which the REPL gives it) as one paste of its own, and an
    Enter after each line but the last."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    keys = []
    for number, line in enumerate(lines):
        if number:
            keys.append(KeyPress(Keys.ControlM, "\r"))
            line = line.lstrip(" \t")
        if line:
            keys.append(KeyPress(Keys.BracketedPaste, line))
    return keys


# Note [Pasted input]
# ~~~~~~~~~~~~~~~~~~~
# A terminal marks pasted text (bracketed paste), and prompt-toolkit inserted it
# as it came: its newlines were new lines, not Enter.  So a pasted `end` (and
# anything pasted after it) neither closed the block it ended nor moved back from
# the indentation the REPL had put before it, and the input never ran: the text
# after it was taken as more of the same input.  A paste is therefore typed: each
# newline is an Enter (the REPL dedents a closing line, runs a complete input, or
# starts an indented line), and each line is inserted without its own leading
# indentation, which the Enter before it has already given.  What follows an Enter
# that ran an input stays queued: prompt-toolkit gives it to the next prompt as
# typeahead, as it does for keys typed faster than the prompt returns.


def prompt_session(session, input=None, output=None, history=None) -> PromptSession:
    """The prompt-toolkit session reading the REPL's inputs."""
    return PromptSession(
        PROMPT, multiline=True, prompt_continuation=CONTINUATION,
        lexer=PygmentsLexer(RevLexer), completer=ReplCompleter(session),
        complete_while_typing=False, key_bindings=key_bindings(),
        history=history if history is not None else _history(),
        input=input, output=output)


def run_terminal(session, prompter: PromptSession | None = None) -> int:
    """Read and run inputs until Ctrl-D or `:quit`; return the exit status."""
    prompter = prompter if prompter is not None else prompt_session(session)
    session.write(f"rlang {__version__}: the rev REPL.  :help lists the commands; "
                  "Ctrl-D leaves.")
    while True:
        try:
            text = prompter.prompt()
        except KeyboardInterrupt:       # Ctrl-C at the prompt: drop the input
            continue
        except EOFError:                # Ctrl-D
            return 0
        if not session.execute(text):
            return 0
