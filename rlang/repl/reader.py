"""What a REPL input is, and whether it is finished (LANGUAGE.md §12).

In: the text of one input (one or more lines).  Out: `read(text, file)` gives one of

- `None`: nothing to do (blank, or only comments);
- `Command(name, argument)`: a line starting with `:`;
- `Definitions(text)`: top-level items (`function … end`, `const`, `include`);
- `Statements(stmts)`: statements to run on the session store;
- `Expression(expr)`: a bare expression whose value is printed;

or raises the `ParseError` of the input.  `is_complete(text)` says whether the input
is ready to run: it is not when the parser ran out of text (`function` without
`end`, an open bracket, a trailing binary operator: ParseError.incomplete), and it
is when it parses or when it is wrong in a way more lines cannot mend, so that a
genuine syntax error is reported at once.

An input that is not a definition is parsed as statements first, then as an
expression: `f(x)` is a call, `x` and `x + 1` are expressions, and a lone call of a
built-in (`sin(x)`, `f64(n)`) is an expression too.  When both parses fail, the
error is the one that ran out of text (more may come), else the one that got
further into the input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..frontend import ast
from ..errors import ParseError
from ..frontend.parser import parse, parse_expression, parse_statements
from ..primitives import is_builtin_function

#: First words of an input holding top-level items rather than statements.
DEFINITION_WORDS = ("function", "const", "include", "@inline")


@dataclass(frozen=True)
class Command:
    name: str           # without the colon
    argument: str       # the rest of the line, stripped


@dataclass(frozen=True)
class Definitions:
    text: str


@dataclass(frozen=True)
class Statements:
    stmts: tuple


@dataclass(frozen=True)
class Expression:
    expr: object


def read(text: str, file: str, functions=()):
    """The meaning of one complete input (see the module docstring); `functions`
    are the names of the session's functions (a call of one is never a built-in)."""
    text = text.rstrip()        # a final newline would end an expression too early
    stripped = text.lstrip()
    if not stripped:
        return None
    if stripped.startswith(":"):
        name, _, argument = stripped[1:].partition(" ")
        return Command(name.strip(), argument.strip())
    if _first_word(stripped) in DEFINITION_WORDS:
        parse(text, file)
        return Definitions(text)
    return _statements_or_expression(text, file, functions)


def is_complete(text: str) -> bool:
    """False while more lines could complete `text`; True when it is ready to run
    (it parses, or its error is not mended by more input)."""
    try:
        read(text, "<input>")
    except ParseError as error:
        return not error.incomplete
    return True


def _first_word(text: str) -> str:
    match = re.match(r"@?[A-Za-z_]\w*", text)
    return match.group(0) if match else ""


def _statements_or_expression(text: str, file: str, functions):
    try:
        stmts = parse_statements(text, file)
    except ParseError as as_statements:
        try:
            return Expression(parse_expression(text, file))
        except ParseError as as_expression:
            raise _more_telling(as_statements, as_expression) from None
    if not stmts:
        return None
    if _is_builtin_call(stmts, functions):
        return Expression(parse_expression(text, file))
    return Statements(stmts)


def _is_builtin_call(stmts: tuple, functions) -> bool:
    if len(stmts) != 1 or not isinstance(stmts[0], ast.CallStmt):
        return False
    call = stmts[0]
    return not call.inverse and call.func not in functions and is_builtin_function(call.func)


def _more_telling(first: ParseError, second: ParseError) -> ParseError:
    """Of two parses of one input, the error to report: one that ran out of text
    (the input may go on), else the one further into the input (`first` on a tie)."""
    if first.incomplete or second.incomplete:
        return first if first.incomplete else second
    return second if _position(second) > _position(first) else first


def _position(error: ParseError) -> tuple[int, int]:
    span = error.span
    return (span.line, span.col) if span is not None else (0, 0)
