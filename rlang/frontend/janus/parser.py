"""Janus source text → a Janus parse tree (`JProgram`), as the jana interpreter reads it.

`parse_janus(text, file)` returns a `JProgram`: the procedures in source order, each a
`JProc` with its parameter and variable declarations (`JDecl`) and its statements as
lark trees whose nodes carry positions.  `rlang.frontend.janus.lower` turns it into
rev's AST.  A text jana's parser refuses is a `ParseError` at the position jana reports
(the first character it cannot take), worded as jana words it ("Unexpected …",
"Expecting …").

The grammar follows jana's (Note [Janus grammar]); it is LALR(1) over lark's basic
lexer, in this module so that it travels with the package.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ...errors import ParseError
from ...span import Span, register_source

# Note [Janus grammar]
# ~~~~~~~~~~~~~~~~~~~~
# Facts taken from jana's Parsec parser (mbudde/jana, src/Jana/Parser.hs):
# - A program is a sequence of `procedure NAME(params) body`; the one named `main`
#   takes `()` only and may open its body with declarations `int x`, `int a[n]`,
#   `stack s`; every body has at least one statement.
# - Parameters are `int x`, `int a[]`, `int a[n]` and `stack s`.
# - Operators, tightest first, all left-associative: prefix `!` (repeatable);
#   `* / %`; `+ -`; `<= < >= > = !=`; `& | ^`; `&& ||`.  There is no unary minus:
#   a number literal may carry a sign (`-5`, `+ 5`), so `x += -1` is legal and
#   `x += -y` is not.  Numbers may be written in hex `0x1F` or octal `0o17`.
# - Arguments of call, uncall, push, pop, `<=>`, show and printf are plain names.
# - Comments are `// …` and `/* … */` (not nested).  Keywords are reserved.
# - `error`, `print` and `printf` take a string literal in parentheses.

GRAMMAR = r"""
start: proc*
proc: "procedure" NAME "(" params ")" decl* stmt+
params: [decl ("," decl)*]

decl: "int" NAME                        -> int_decl
    | "int" NAME "[" [size] "]"         -> array_decl
    | "stack" NAME                      -> stack_decl

?stmt: lval MODOP expr                                  -> assign
     | "if" expr "then" body ["else" body] "fi" expr    -> if_stmt
     | "from" expr [DO body] [LOOP body] "until" expr   -> from_stmt
     | "push" "(" NAME "," NAME ")"                     -> push
     | "pop" "(" NAME "," NAME ")"                      -> pop
     | "local" TYPE NAME "=" expr body "delocal" TYPE NAME "=" expr -> local
     | "call" NAME "(" [NAME ("," NAME)*] ")"           -> call
     | "uncall" NAME "(" [NAME ("," NAME)*] ")"         -> uncall
     | NAME "<=>" NAME                                  -> swap
     | "error" "(" STRING ")"                           -> error
     | "print" "(" STRING ")"                           -> print
     | "printf" "(" STRING ("," NAME)* ")"              -> printf
     | "show" "(" NAME ("," NAME)* ")"                  -> show
     | "skip"                                           -> skip
body: stmt+
size: [ADD_OP] INT

lval: NAME                      -> var
    | NAME "[" expr "]"         -> lookup

?expr: expr LOGIC_OP bits       -> binary
     | bits
?bits: bits BIT_OP rel          -> binary
     | rel
?rel: rel REL_OP sum            -> binary
    | sum
?sum: sum ADD_OP product        -> binary
    | product
?product: product MUL_OP unary  -> binary
        | unary
?unary: "!" unary               -> not_
      | atom
?atom: "(" expr ")"
     | [ADD_OP] INT             -> number
     | "true"                   -> true
     | "false"                  -> false
     | lval
     | "empty" "(" NAME ")"     -> empty
     | "top" "(" NAME ")"       -> top
     | "size" "(" NAME ")"      -> size
     | "nil"                    -> nil

DO: "do"
LOOP: "loop"
TYPE: "int" | "stack"
MODOP: "+=" | "-=" | "^="
LOGIC_OP: "&&" | "||"
BIT_OP: "&" | "|" | "^"
REL_OP: "<=" | "<" | ">=" | ">" | "=" | "!="
ADD_OP: "+" | "-"
MUL_OP: "*" | "/" | "%"
NAME: /[A-Za-z][A-Za-z0-9_]*/
INT: /0[xX][0-9a-fA-F]+|0[oO][0-7]+|[0-9]+/
STRING: /"(\\.|[^"\\\n])*"/
COMMENT: /\/\/[^\n]*/ | /\/\*(.|\n)*?\*\//
%import common.WS
%ignore WS
%ignore COMMENT
"""

#: jana's reserved words: no variable or procedure may be named so.
KEYWORDS = ("procedure", "int", "stack", "bool", "true", "false", "if", "then", "else", "fi",
            "from", "do", "loop", "until", "push", "pop", "local", "delocal", "call",
            "uncall", "error", "skip", "empty", "top", "size", "show", "print", "printf",
            "nil")

#: How a terminal is named in "Expecting …" (the words jana's parser uses).
_EXPECTED = {
    "NAME": "identifier", "INT": "number", "STRING": "string", "MODOP": "\"+=\", \"-=\" or \"^=\"",
    "LPAR": "\"(\"", "RPAR": "\")\"", "LSQB": "\"[\"", "RSQB": "\"]\"", "COMMA": "\",\"",
    "$END": "end of input", "EQUAL": "\"=\"", "TYPE": "type",
}


@dataclass
class JDecl:
    """`int x` (kind "int"), `int a[n]` / `int a[]` ("array", size n or None), `stack s`."""

    kind: str
    name: str
    size: int | None
    span: Span


@dataclass
class JProc:
    name: str
    params: list          # of JDecl
    decls: list           # of JDecl: main's variables (an error anywhere else)
    body: list            # of lark statement trees
    span: Span            # of the name, where jana reports errors about the procedure


@dataclass
class JProgram:
    procs: list
    file: str


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=True,
                maybe_placeholders=True)


def token_span(file: str, token: Token) -> Span:
    return Span(file, token.line, token.column, token.end_line or token.line,
                token.end_column or token.column + len(token))


def tree_span(file: str, node) -> Span:
    """The span of a token or a tree (from its first to its last character)."""
    if isinstance(node, Token):
        return token_span(file, node)
    meta = node.meta
    if getattr(meta, "empty", True):
        return Span(file, 0, 0, 0, 0)
    return Span(file, meta.line, meta.column, meta.end_line, meta.end_column)


def parse_janus(text: str, file: str) -> JProgram:
    """The procedures of the Janus program `text` (named `file` in errors)."""
    register_source(file, text)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _parse_error(error, text, file) from None
    procs = [_proc(node, file) for node in tree.children]
    for proc in procs:
        for decl in proc.params + proc.decls:
            _refuse_keyword(decl.name, decl.span)
    return JProgram(procs, file)


def _proc(node: Tree, file: str) -> JProc:
    name, params, *rest = node.children
    params = [_decl(d, file) for d in params.children if d is not None]
    decls = [_decl(d, file) for d in rest if _is_decl(d)]
    body = [child for child in rest if not _is_decl(child)]
    _refuse_keyword(str(name), token_span(file, name))
    return JProc(str(name), params, decls, body, token_span(file, name))


def _is_decl(node) -> bool:
    return isinstance(node, Tree) and node.data in ("int_decl", "array_decl", "stack_decl")


def _decl(node: Tree, file: str) -> JDecl:
    name = node.children[0]
    span = token_span(file, name)
    if node.data == "int_decl":
        return JDecl("int", str(name), None, span)
    if node.data == "stack_decl":
        return JDecl("stack", str(name), None, span)
    size = node.children[1]
    if size is None:
        return JDecl("array", str(name), None, span)
    sign, digits = size.children
    value = int_value(str(digits)) * (-1 if sign is not None and str(sign) == "-" else 1)
    return JDecl("array", str(name), value, span)


def int_value(text: str) -> int:
    """The value of a jana number literal: decimal, `0x…` hex or `0o…` octal."""
    lowered = text.lower()
    if lowered.startswith("0x"):
        return int(lowered[2:], 16)
    if lowered.startswith("0o"):
        return int(lowered[2:], 8)
    return int(text)


def _refuse_keyword(name: str, span: Span) -> None:
    if name in KEYWORDS:
        raise ParseError(f"Unexpected reserved word \"{name}\"", span)


def _parse_error(error: UnexpectedInput, text: str, file: str) -> ParseError:
    line, col = getattr(error, "line", 1), getattr(error, "column", 1)
    if isinstance(error, UnexpectedEOF) or \
            isinstance(error, UnexpectedToken) and error.token.type == "$END":
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
        unexpected = "end of input"
    elif isinstance(error, UnexpectedCharacters):
        unexpected = f"\"{text[error.pos_in_stream]}\""
    else:
        token = error.token
        word = str(token)
        unexpected = f"reserved word \"{word}\"" if word in KEYWORDS else f"\"{word}\""
    expected = _expected_words(getattr(error, "expected", None) or
                               getattr(error, "allowed", None) or ())
    message = f"Unexpected {unexpected}"
    if expected:
        message += f"; expecting {expected}"
    end = col + 1
    return ParseError(message, Span(file, max(line, 1), max(col, 1), max(line, 1), end),
                      incomplete=unexpected == "end of input")


def _expected_words(names) -> str:
    words = []
    for name in sorted(names):
        if name in _EXPECTED:
            word = _EXPECTED[name]
        elif name.isupper() and name.endswith("_OP") or name in ("DO", "LOOP"):
            continue
        else:
            pattern = _parser().get_terminal(name).pattern.value \
                if name in {t.name for t in _parser().terminals} else name.lower()
            word = f"\"{pattern}\""
        if word not in words:
            words.append(word)
    if len(words) > 6:
        return "statement" if "\"skip\"" in words else "expression"
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1] if words else ""
