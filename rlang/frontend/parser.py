"""Source text → AST.

`parse(text, file)` returns an `ast.Program`; `parse_expression(text, file)` one
expression (used for command-line arguments); `parse_statements(text, file)` a tuple
of statements (the REPL's top-level input); `parse_signature(text, file)` the
`NAME(T, …)` of `rlang compile --signature`.  All raise `ParseError` carrying a
span and, in words, what was expected; `ParseError.incomplete` says that the text
ended too early (the REPL uses it to ask for more lines).

The grammar is grammar/rev.lark (shipped in the package as rlang/grammar/rev.lark),
parsed LALR(1) with lark's contextual lexer.  The post-lexer below implements the
layout rules of LANGUAGE.md §2: a newline inside ( [ { or after a binary operator
continues the line; runs of separators are folded into one.
"""
from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput,
                             UnexpectedToken, VisitError)

from . import ast
from ..deep import run_deep
from ..errors import ParseError, RlangError
from ..primitives import INSTRUCTION_TABLE
from ..span import Span, register_source, source_line

#: Nesting deeper than this (brackets or blocks) is refused: no program needs it and
#: it keeps every recursive pass over the tree far from Python's recursion limit.
MAX_NESTING = 200
#: A statement (or an expression) of more tokens than this is refused: a 100,000-term
#: sum is 200,000 tokens; parsing and checking are linear, and this bounds their time.
MAX_STATEMENT_TOKENS = 250_000
#: Arrays have at most this many dimensions (NumPy's limit), in types and literals.
MAX_ARRAY_RANK = 64
#: A name longer than this is refused (compiled code shortens long names anyway).
MAX_NAME_LENGTH = 4_096

#: Tokens after which a newline does not end the statement.
_CONTINUES = {
    "+", "-", "*", "/", "//", "%", "÷", "**", "==", "!=", "≠", "<", "<=", "≤", ">", ">=",
    "≥", "&&", "||", "|", "^", "⊻", "&", "<<", ">>", ",", "=", "+=", "-=", "*=", "/=",
    "^=", "⊻=", "<-", "←", "->", "→", "<=>", "↔",
}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}
_BLOCK_OPENERS = {"function", "if", "while", "for", "begin"}
#: The keywords of LANGUAGE.md §2.  lark's contextual lexer reads a keyword as a NAME
#: where the grammar cannot take the keyword; the post-lexer gives it back its type so
#: that a misplaced keyword is reported as itself.
KEYWORDS = ("function", "end", "if", "elseif", "else", "while", "from", "do", "loop",
            "until", "for", "begin", "const", "include", "true", "false")
#: Words of the derivative statement (`grad f(…) wrt x into t`, docs/nested.md): words
#: only there, names everywhere else (the lexer is contextual), so not reserved.
CONTEXTUAL_KEYWORDS = ("grad", "fgrad", "wrt", "into")

_TERMINAL_WORDS = {
    "NAME": "a name", "INT": "a number", "HEX": "a number", "FLOAT": "a number",
    "IMAG": "an imaginary number", "STRING": "a string", "_SEP": "a new line or ';'",
    "UPDATE_OP": "an update operator (+= -= *= /= ^=)", "SWAP_OP": "'<=>'",
    "ALLOC_OP": "'←'", "DEALLOC_OP": "'→'", "CMP_OP": "a comparison", "MUL_OP": "'*' or '/'",
    "XOR_OP": "'^'", "SHIFT_OP": "'<<' or '>>'", "DIMS": "':'", "$END": "the end of the input",
    "INLINE": "'@inline'", "DERIVATIVE_MODE": "'grad' or 'fgrad'",
}


def _grammar_path() -> Path:
    """The installed grammar (rlang/grammar) or, in a source tree, grammar/rev.lark."""
    here = Path(__file__).resolve().parent.parent          # rlang/
    for candidate in (here / "grammar" / "rev.lark", here.parent / "grammar" / "rev.lark"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("grammar/rev.lark is missing from the installation")


class _Layout:
    """Lark post-lexer applying the layout rules of LANGUAGE.md §2."""

    always_accept = ("_SEP",)

    def process(self, stream):
        # Separators are decided from the previous token alone: holding one back to
        # look ahead would desynchronise lark's contextual lexer from the parser.
        depth: list[str] = []
        blocks = 0
        previous = None
        tokens = 0          # in the statement so far
        for token in stream:
            tokens += 1
            if tokens > MAX_STATEMENT_TOKENS:
                raise _TooBig(token, f"a statement of more than {MAX_STATEMENT_TOKENS:,} "
                                     f"tokens (split the expression with ancillas)")
            if token.type == "_SEP":
                newline = token.value != ";"
                if previous is None or previous.type == "_SEP":
                    continue
                if newline and (depth or (previous.type != "STRING"
                                          and previous.value in _CONTINUES)):
                    continue
                previous = token
                tokens = 0
                yield token
                continue
            value = token.value
            if token.type == "NAME" and len(value) > MAX_NAME_LENGTH:
                raise _TooBig(token, f"a name longer than {MAX_NAME_LENGTH:,} characters")
            if token.type == "NAME" and value in KEYWORDS:
                token.type = value.upper()
            if token.type != "STRING":
                if value in _OPENERS:
                    depth.append(_OPENERS[value])
                    if len(depth) > MAX_NESTING:
                        raise _TooBig(token, f"nesting deeper than {MAX_NESTING} levels")
                elif value in _CLOSERS and depth:
                    depth.pop()
                elif value in _BLOCK_OPENERS:
                    blocks += 1
                    if blocks > MAX_NESTING:
                        raise _TooBig(token, f"nesting deeper than {MAX_NESTING} levels")
                elif value == "end":
                    blocks = max(blocks - 1, 0)
            previous = token
            yield token


class _TooBig(Exception):
    """Input past one of the limits above (docs/language-decisions.md "Limits")."""

    def __init__(self, token, message: str):
        self.token, self.message = token, message


@functools.lru_cache(maxsize=None)
def _parser(start: str) -> Lark:
    return Lark(
        _grammar_path().read_text(encoding="utf-8"),
        start=start,
        parser="lalr",
        lexer="contextual",
        postlex=_Layout(),
        propagate_positions=True,
        maybe_placeholders=True,
        cache=True,     # the LALR tables are kept in the temp directory, keyed by grammar
    )


def parse(text: str, file: str = "<string>") -> ast.Program:
    """Parse a whole program; raise ParseError with a position on bad input."""
    return run_deep(_run, text, file, "program")


def parse_expression(text: str, file: str = "<argument>") -> object:
    """Parse a single expression (a command-line argument, a REPL expression)."""
    return run_deep(_run, text, file, "expr")


def parse_statements(text: str, file: str = "<input>") -> tuple:
    """Parse a list of statements, as a function body holds (a REPL input)."""
    return run_deep(_run, text, file, "body")


def parse_signature(text: str, file: str = "<signature>") -> tuple:
    """Parse `NAME(T, …)` (`rlang compile --signature`) into (name, tuple of
    ast.TypeRef)."""
    return run_deep(_run, text, file, "signature")


def _run(text: str, file: str, start: str):
    if not isinstance(text, str):
        raise ParseError("source is not text", Span(file, 1, 1, 1, 1))
    register_source(file, text)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise ParseError("the source contains a NUL byte (is it a binary file?)",
                         Span(file, line, 1, line, 2))
    try:
        tree = _parser(start).parse(text)
        return _ToAst(file).transform(tree)
    except _TooBig as error:
        raise ParseError(error.message, _token_span(file, error.token)) from None
    except VisitError as error:
        if isinstance(error.orig_exc, RlangError):
            raise error.orig_exc from None
        if isinstance(error.orig_exc, RecursionError):
            raise ParseError("the program is nested too deeply", Span(file, 1, 1, 1, 2)) from None
        raise
    except UnexpectedInput as error:
        raise _parse_error(error, file, start) from None
    except RecursionError:
        raise ParseError("the program is nested too deeply", Span(file, 1, 1, 1, 2)) from None


def _token_span(file: str, token: Token) -> Span:
    line, col = token.line or 1, token.column or 1
    end_line = token.end_line or line
    end_col = token.end_column or col + max(len(str(token)), 1)
    return Span(file, line, col, end_line, end_col)


def _describe_expected(names) -> str:
    parser = _parser("program")
    words = []
    if "NAME" in names:     # `grad`/`fgrad` are names to a reader, where a name may stand
        names = [name for name in names if name != "DERIVATIVE_MODE"]
    # Statement ends and `end` first: they are what a reader most often forgot.
    for name in sorted(names, key=lambda n: (0 if n in ("_SEP", "END") else 2 if n == "$END"
                                             else 1, n)):
        if name in _TERMINAL_WORDS:
            word = _TERMINAL_WORDS[name]
        else:
            try:
                pattern = parser.get_terminal(name).pattern
                word = f"'{pattern.value}'" if pattern.type == "str" else name.lower()
            except KeyError:
                word = name.lower()
        if word not in words:
            words.append(word)
    if not words:
        return ""
    if len(words) > 12:
        words = words[:12] + ["…"]
    return "expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))


def _parse_error(error: UnexpectedInput, file: str, start: str) -> ParseError:
    line = getattr(error, "line", None) or 1
    col = getattr(error, "column", None) or 1
    at_end = isinstance(error, UnexpectedEOF) or \
        isinstance(error, UnexpectedToken) and error.token.type == "$END"
    if at_end:
        expected = _describe_expected(_acceptable(error))
        last = _last_position(file)
        span = Span(file, last[0], last[1], last[0], last[1] + 1)
        message = "unexpected end of input" + (f"; {expected}" if expected else "")
        return ParseError(message, span, incomplete=True)
    if isinstance(error, UnexpectedToken):
        token = error.token
        span = _token_span(file, token)
        shown = "end of line" if token.type == "_SEP" and token.value != ";" else f"'{token.value}'"
        expected = _describe_expected(_acceptable(error))
        notes = ()
        if token.value in ("function", "const", "include") and token.type != "STRING":
            notes = ("is an `end` missing before it?",)
        return ParseError(f"unexpected {shown}" + (f"; {expected}" if expected else ""), span,
                          notes)
    if isinstance(error, UnexpectedCharacters):
        char = error.char
        span = Span(file, line, col, line, col + 1)
        if char == '"':
            return ParseError("unterminated string", span)
        if char == "@":
            word = _word_at(file, line, col)
            span = Span(file, line, col, line, col + len(word))
            return ParseError(f"unknown annotation `{word}`; annotations are @routine "
                              "@invcheckoff @inbounds @safe @zeros @parallel @inline", span)
        shown = f"'{char}'" if char.isprintable() else f"U+{ord(char):04X}"
        return ParseError(f"unexpected character {shown}", span)
    return ParseError(str(error).splitlines()[0], Span(file, line, col, line, col + 1))


def _word_at(file: str, line: int, col: int) -> str:
    """The `@word` that starts at (line, col) of `file`."""
    import re

    text = source_line(file, line) or "@"
    match = re.match(r"@[A-Za-z_0-9]*", text[col - 1:])
    return match.group(0) if match else "@"


def _acceptable(error) -> set:
    """The terminals the parser could really take at the error.

    LALR merges states, so the lookahead set lark reports may hold tokens that only
    another context accepts (`until` inside a function body); asking the interactive
    parser, which tries each candidate, removes them."""
    expected = set(getattr(error, "expected", None) or ())
    interactive = getattr(error, "interactive_parser", None)
    if interactive is not None:
        try:
            expected = set(interactive.accepts()) or expected
        except Exception:  # the reported set is still a useful answer
            pass
    return expected


def _last_position(file: str) -> tuple[int, int]:
    from ..span import SOURCES

    lines = SOURCES.get(file, "").splitlines() or [""]
    index = len(lines)
    while index > 1 and not lines[index - 1].strip():
        index -= 1
    return index, len(lines[index - 1].rstrip()) + 1


# ------------------------------------------------------------------ tree → AST

def _parse_int(text: str) -> int:
    return int(text.replace("_", ""), 16 if text[:2].lower() == "0x" else 10)


@v_args(meta=True)
class _ToAst(Transformer):
    """Turns lark's parse tree into `rlang.frontend.ast` nodes with spans."""

    def __init__(self, file: str):
        # Tokens are left as they are (no method is named after a token type).  Lark
        # would look each token type up with getattr, and the AttributeError of every
        # miss costs time proportional to the depth of the nested transform
        # generators (CPython finds the exception being handled by walking them), which
        # made a 40,000-term sum take 3.6 s here and the check quadratic.
        super().__init__(visit_tokens=False)
        self.file = file

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _error(self, message: str, meta) -> ParseError:
        return ParseError(message, self._span(meta))

    # -- top level
    def program(self, meta, items):
        return ast.Program(tuple(items), span=self._span(meta))

    def function(self, meta, children):
        inline, name, params, body = children
        return ast.Function(str(name), params or (), body, inline=inline is not None,
                            span=self._span(meta))

    def signature(self, meta, children):
        name, types = children
        return str(name), types or ()

    def types(self, meta, children):
        return tuple(children)

    def params(self, meta, children):
        return tuple(children)

    def param(self, meta, children):
        name, type_ = children
        return ast.Param(str(name), type_, span=self._span(meta))

    def array_type(self, meta, children):
        name, dims = children
        self._check_scalar(name, meta)
        ndim = 0 if dims is None else str(dims).count(":")
        if ndim > MAX_ARRAY_RANK:
            raise self._error(f"an array type of {ndim} dimensions; arrays have at most "
                              f"{MAX_ARRAY_RANK} (as in NumPy)", meta)
        return ast.TypeRef(str(name), ndim, span=self._span(meta))

    def stack_type(self, meta, children):
        name, elem = children
        if str(name) != "stack":
            raise self._error(f"unknown type '{name}{{…}}'; did you mean stack{{{elem}}}?", meta)
        self._check_scalar(elem, meta)
        return ast.TypeRef(str(elem), 0, is_stack=True, span=self._span(meta))

    def _check_scalar(self, name, meta):
        if str(name) not in ast.SCALAR_TYPES:
            raise self._error(f"unknown type '{name}'; types are {', '.join(ast.SCALAR_TYPES)}",
                              meta)

    def const(self, meta, children):
        name, value = children
        return ast.Const(str(name), value, span=self._span(meta))

    def include(self, meta, children):
        return ast.Include(_unquote(children[0]), span=self._span(meta))

    # -- statements
    def body(self, meta, children):
        return tuple(children)

    def update(self, meta, children):
        target, op, value = children
        op = "^=" if str(op) == "⊻=" else str(op)
        return ast.Update(target, op, value, span=self._span(meta))

    def swap(self, meta, children):
        return ast.Instr("SWAP", (children[0], children[2]), span=self._span(meta))

    def alloc(self, meta, children):
        return ast.Alloc(str(children[0]), children[2], span=self._span(meta))

    def dealloc(self, meta, children):
        return ast.Dealloc(str(children[0]), children[2], span=self._span(meta))

    def zeros(self, meta, children):
        return ast.Zeros(children[0], tuple(str(n) for n in children[1:]), span=self._span(meta))

    def inv_zeros(self, meta, children):
        return ast.Zeros(children[0], tuple(str(n) for n in children[1:]), inverse=True,
                         span=self._span(meta))

    def call(self, meta, children):
        name, args = str(children[0]), children[1] or ()
        if name in INSTRUCTION_TABLE:
            return ast.Instr(name, args, span=self._span(meta))
        return ast.CallStmt(name, args, span=self._span(meta))

    def uncall(self, meta, children):
        name, args = str(children[0]), children[1] or ()
        if name in INSTRUCTION_TABLE:
            return ast.Instr(INSTRUCTION_TABLE[name].inverse, args, span=self._span(meta))
        return ast.CallStmt(name, args, inverse=True, span=self._span(meta))

    def derivative(self, meta, children, inverse: bool = False):
        mode, name, args, *rest = children
        wrt = tuple(str(t) for t in rest if isinstance(t, Token))
        targets = tuple(t for t in rest if not isinstance(t, Token))
        return ast.Derivative(str(mode), str(name), args or (), wrt, targets,
                              inverse=inverse, span=self._span(meta))

    def inv_derivative(self, meta, children):
        return self.derivative(meta, children, inverse=True)

    def block(self, meta, children):
        return ast.Block(children[0], span=self._span(meta))

    def inv_block(self, meta, children):
        return ast.Block(children[0], inverse=True, span=self._span(meta))

    def routine(self, meta, children):
        stmt = children[0]
        body = stmt.body if isinstance(stmt, ast.Block) and not stmt.inverse else (stmt,)
        return ast.Routine(body, span=self._span(meta))

    def unroutine(self, meta, children):
        return ast.UnRoutine(span=self._span(meta))

    def if_stmt(self, meta, children):
        cond, body, *rest = children
        orelse = rest.pop()
        branches = [ast.IfBranch(cond[0], cond[1], body, span=self._span(meta))]
        branches.extend(rest)
        return ast.If(tuple(branches), orelse, span=self._span(meta))

    def elseif(self, meta, children):
        (pre, post), body = children
        return ast.IfBranch(pre, post, body, span=self._span(meta))

    def else_part(self, meta, children):
        return children[0]

    def cond_single(self, meta, children):
        return (children[0], None)

    def cond_pair(self, meta, children):
        return (children[0], children[1])

    def cond_same(self, meta, children):
        return (children[0], None)

    def while_stmt(self, meta, children):
        pre, post, body = children
        return ast.While(pre, post, body, span=self._span(meta))

    def from_stmt(self, meta, children):
        start, body, step, stop = children     # Janus leaves out an empty do or loop part
        return ast.From(start, body or (), step or (), stop, span=self._span(meta))

    def do_part(self, meta, children):
        return children[0]

    def loop_part(self, meta, children):
        return children[0]

    def for_stmt(self, meta, children):
        name, (start, step, stop), body = children
        return ast.For(str(name), start, step, stop, body, span=self._span(meta))

    def par_for(self, meta, children):
        loop = children[0]
        return ast.For(loop.var, loop.start, loop.step, loop.stop, loop.body, parallel=True,
                       span=self._span(meta))

    def range2(self, meta, children):
        return (children[0], ast.IntLit(1, span=self._span(meta)), children[1])

    def range3(self, meta, children):
        return tuple(children)

    def invcheckoff(self, meta, children):
        return self._annotated("invcheckoff", children[0], meta)

    def inbounds(self, meta, children):
        return self._annotated("inbounds", children[0], meta)

    def _annotated(self, annotation: str, stmt, meta):
        if isinstance(stmt, (ast.Routine, ast.UnRoutine)):
            raise self._error(f"@{annotation} cannot apply to a routine marker; put it on the "
                              "statements inside the @routine block", meta)
        return ast.Annotated(annotation, stmt, span=self._span(meta))

    def safe(self, meta, children):
        return ast.Safe(str(children[0]), children[1] or (), span=self._span(meta))

    def args(self, meta, children):
        return tuple(children)

    # -- expressions
    def name(self, meta, children):
        text = str(children[0])
        if text in ast.SCALAR_TYPES or text == "stack":
            return ast.TypeExpr(ast.TypeRef(text, span=self._span(meta)), span=self._span(meta))
        return ast.Name(text, span=self._span(meta))

    def index(self, meta, children):
        return ast.Index(children[0], children[1], span=self._span(meta))

    def field(self, meta, children):
        return ast.Field(children[0], str(children[1]), span=self._span(meta))

    def call_expr(self, meta, children):
        return ast.Call(str(children[0]), children[1] or (), span=self._span(meta))

    def int_lit(self, meta, children):
        text = str(children[0])
        value = _parse_int(text)
        if text[:2].lower() == "0x":
            if value >= 1 << 64:
                raise self._error(f"hexadecimal literal {text} needs more than 64 bits", meta)
            if value >= 1 << 63:   # two's complement, written as the negation it means
                return ast.Unary("-", ast.IntLit((1 << 64) - value, span=self._span(meta)),
                                 span=self._span(meta))
        elif value > 1 << 63:   # 2^63 itself is allowed so that -9223372036854775808 reads
            raise self._error(f"integer literal {text} is out of the range of i64 "
                              f"(at most {(1 << 63) - 1}); write a float such as {value}.0",
                              meta)
        return ast.IntLit(value, span=self._span(meta))

    def float_lit(self, meta, children):
        return ast.FloatLit(float(str(children[0]).replace("_", "")), span=self._span(meta))

    def imag_lit(self, meta, children):
        return ast.ImagLit(float(str(children[0])[:-2].replace("_", "")), span=self._span(meta))

    def true_lit(self, meta, children):
        return ast.BoolLit(True, span=self._span(meta))

    def false_lit(self, meta, children):
        return ast.BoolLit(False, span=self._span(meta))

    def str_lit(self, meta, children):
        return ast.StrLit(_unquote(children[0]), span=self._span(meta))

    def array_lit(self, meta, children):
        literal = ast.ArrayLit(children[0] or (), span=self._span(meta))
        rank, inner = 1, literal
        while inner.items and isinstance(inner.items[0], ast.ArrayLit):
            rank, inner = rank + 1, inner.items[0]
        if rank > MAX_ARRAY_RANK:
            raise self._error(f"an array literal of {rank} dimensions; arrays have at most "
                              f"{MAX_ARRAY_RANK} (as in NumPy)", meta)
        return literal

    def _binary(op):
        def build(self, meta, children):
            return ast.Binary(op, children[0], children[1], span=self._span(meta))
        return build

    or_ = _binary("||")
    and_ = _binary("&&")
    bor = _binary("|")
    band = _binary("&")
    add = _binary("+")
    sub = _binary("-")

    def _binary_token(canonical):
        def build(self, meta, children):
            left, op, right = children
            op = canonical.get(str(op), str(op))
            return ast.Binary(op, left, right, span=self._span(meta))
        return build

    compare = _binary_token({"≠": "!=", "≤": "<=", "≥": ">="})
    bxor = _binary_token({"⊻": "^"})
    shift = _binary_token({})
    pow = _binary_token({})
    mul = _binary_token({"÷": "//"})

    def _unary(op):
        def build(self, meta, children):
            return ast.Unary(op, children[0], span=self._span(meta))
        return build

    neg = _unary("-")
    not_ = _unary("!")
    bnot = _unary("~")


def _unquote(token) -> str:
    text = str(token)[1:-1]
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(escapes.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
