"""Source positions.

`Span(file, line, col, end_line, end_col)` marks a piece of source text; lines and
columns are 1-based and `end_col` is exclusive.  Every AST node carries one, and
every user-facing error points at one.  `SOURCES` keeps the text of every file the
parser has read so that errors can quote the offending line.
"""
from __future__ import annotations

from .records import record


@record
class Span:
    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)


def file_span(file: str) -> Span:
    """A span naming the file `file` as a whole, at no line: the span of an error
    about the file itself (one that cannot be read)."""
    return Span(file, 0, 0, 0, 0)


def location(span: Span | None) -> str:
    """Where `span` is, as errors begin: `file:line:col`, `file` for a span of a whole
    file (`file_span`), "" for no span or NO_SPAN."""
    if span is None or span is NO_SPAN or span.file == NO_SPAN.file:
        return ""
    return str(span) if span.line > 0 else span.file

#: file name -> source text, filled by the parser.
SOURCES: dict[str, str] = {}


def register_source(file: str, text: str) -> None:
    """Remember `text` as the contents of `file` for error rendering."""
    SOURCES[file] = text


def source_line(file: str, line: int) -> str | None:
    """The text of 1-based `line` of `file`, or None when it is not known."""
    text = SOURCES.get(file)
    if text is None or line < 1:
        return None
    lines = text.splitlines()
    if line > len(lines):
        return None
    return lines[line - 1]
