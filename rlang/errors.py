"""The errors of rlang and how they are shown.

Every user-facing error is an `RlangError` (LANGUAGE.md §8) with a message, a `Span`,
optional notes, and -- for runtime errors -- the call chain, filled in by the
interpreter as the error leaves each call.  `render()` gives the text the command
line prints:

    file.rev:12:5: error: deallocation check failed: n = 0.25, expected 0.0
       12 |     n → 0.0
          |     ^^^^^^^
      in function logplus, called at file.rev:30:5 (running backward)
          with y! = 0.0, x = 2.0

`InternalError` is a bug in rlang and deliberately not an `RlangError`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .span import Span, location, source_line


@dataclass
class Frame:
    """One entry of the call chain of a runtime error (innermost first)."""

    function: str
    call_site: Span | None      # where this function was called from; None at the top
    backward: bool              # True when the function's inverse was running
    locals: str = ""            # "name = value, ..." of the frame's variables


class RlangError(Exception):
    """Base class of every error a user can cause."""

    kind = "error"

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = tuple(notes)
        self.frames: list[Frame] = []
        # frames between frames[HEAD_FRAMES - 1] and the rest that a compiled call
        # did not record (rlang/backends/abi.py, Note [Deep call chains])
        self.omitted_frames = 0
        # where the interpreter stood when the error left it, innermost first
        # (rlang/interp/trail.py, Note [Resuming at a failure])
        self.trail: list = []

    def __str__(self) -> str:
        where = location(self.span)
        return f"{where}: {self.message}" if where else self.message

    def add_frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def render(self) -> str:
        """The full text of the error, as the command line prints it."""
        out = []
        where = location(self.span)
        out.append(f"{where}: error: {self.message}" if where else f"error: {self.message}")
        out.extend(_quote(self.span))
        for note in self.notes:
            out.append(f"  note: {note}")
        frames = self.frames
        if len(frames) + self.omitted_frames > SHOWN_FRAMES_HEAD + SHOWN_FRAMES_TAIL:
            hidden = len(frames) + self.omitted_frames - SHOWN_FRAMES_HEAD - SHOWN_FRAMES_TAIL
            for frame in frames[:SHOWN_FRAMES_HEAD]:
                out.extend(_frame_lines(frame))
            out.append(f"  … {hidden} more calls …")
            frames = frames[-SHOWN_FRAMES_TAIL:]
        for frame in frames:
            out.extend(_frame_lines(frame))
        return "\n".join(out)


def in_batch_item(error: RlangError, k: int) -> RlangError:
    """`error` marked as raised by item k of a batch (`rlang.vmap`): `batch_item` is
    k, and a note says so."""
    error.batch_item = k
    error.notes = tuple(error.notes) + (f"raised by item {k} of the batch (rlang.vmap)",)
    return error


#: A call chain longer than HEAD + TAIL frames is shown with its middle left out.
SHOWN_FRAMES_HEAD = 10
SHOWN_FRAMES_TAIL = 5


def _frame_lines(frame: Frame) -> list[str]:
    direction = "running backward" if frame.backward else "running forward"
    called = f", called at {frame.call_site}" if frame.call_site is not None else ""
    lines = [f"  in function {frame.function}{called} ({direction})"]
    if frame.locals:
        lines.append(f"      with {frame.locals}")
    return lines


def _quote(span: Span | None) -> list[str]:
    """The source line of `span` with a caret underline, or nothing if unknown."""
    if span is None:
        return []
    text = source_line(span.file, span.line)
    if text is None:
        return []
    text = text.replace("\t", " ").rstrip()
    number = f"{span.line:>5}"
    gutter = " " * len(number)
    start = max(span.col - 1, 0)
    if span.end_line == span.line and span.end_col > span.col:
        width = span.end_col - span.col
    else:
        width = max(len(text.rstrip()) - start, 1)
    width = max(1, min(width, max(len(text) - start, 1)))
    if len(text) > QUOTE_WIDTH:     # show a window of a long line around the caret
        left = max(0, min(start - QUOTE_WIDTH // 3, len(text) - QUOTE_WIDTH))
        shown = text[left:left + QUOTE_WIDTH]
        prefix = "…" if left > 0 else ""
        suffix = "…" if left + QUOTE_WIDTH < len(text) else ""
        start = start - left + len(prefix)
        width = max(1, min(width, len(shown) + len(prefix) - start))
        text = prefix + shown + suffix
    return [f"{number} | {text}", f"{gutter} | {' ' * start}{'^' * width}"]


#: Longest source line quoted in full; longer ones are cut around the caret.
QUOTE_WIDTH = 100


class ParseError(RlangError):
    """The source does not follow the grammar (or cannot be read)."""

    def __init__(self, message: str, span: Span | None = None, notes=(), incomplete: bool = False):
        super().__init__(message, span, notes)
        #: True when the input ended too early: more lines could complete it (REPL).
        self.incomplete = incomplete


class CheckError(RlangError):
    """A static rule of LANGUAGE.md §6 is broken."""


class CheckErrors(CheckError):
    """Several static errors found in one program; rendered one after another."""

    def __init__(self, errors: list[CheckError]):
        first = errors[0]
        super().__init__(first.message, first.span, first.notes)
        self.errors = list(errors)

    def render(self) -> str:
        return "\n".join(error.render() for error in self.errors)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


class RlangTypeError(RlangError):
    """An operation is applied to values of the wrong type."""


class ReversibilityError(RlangError):
    """A runtime check of LANGUAGE.md §6 failed."""


class RlangRuntimeError(RlangError):
    """Index out of bounds, integer division by zero, call depth exceeded, ..."""


class LimitExceeded(RlangRuntimeError):
    """A sandboxed run passed one of its limits: `limit` is "time", "memory" or
    "depth" (docs/sandbox.md)."""

    def __init__(self, limit: str, message: str, span: Span | None = None, notes=()):
        super().__init__(message, span, notes)
        self.limit = limit


class InternalError(Exception):
    """A bug in rlang itself (never the user's fault)."""


class NoSuchFunction(RlangError, AttributeError):
    """`module.name` where the program has no function `name` (still an
    AttributeError, as Python's protocols such as `hasattr` expect)."""


class NoSuchFunctionKey(RlangError, KeyError):
    """`module["name"]` where the program has no function `name` (still a KeyError)."""

    def __str__(self) -> str:           # not KeyError's repr of the message
        return RlangError.__str__(self)
