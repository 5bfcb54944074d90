"""Syntax highlighting of rev source: the Pygments lexer `RevLexer`.

In: rev source text (LANGUAGE.md §2).  Out: Pygments tokens.  Registered under the
`pygments.lexers` entry point (pyproject.toml), so that with rlang installed
`pygmentize -l rev file.rev` and `pygmentize -N file.rev` find it; the REPL uses it
to highlight its input.  Importing this module imports Pygments, so nothing in
`import rlang` imports it.

The word lists are not written twice: keywords are the parser's, built-in functions,
conversions, constants and instructions come from the registry (rlang/primitives.py),
types from rlang/frontend/ast.py.  Only the annotations are listed here; a test checks them,
and the keywords, against grammar/rev.lark.

Tokens: `Keyword` (control flow), `Keyword.Declaration` (`function`, `const`),
`Keyword.Namespace` (`include`), `Keyword.Constant` (`true false`), `Keyword.Type`
(`f64`, `stack`, … also as conversions `f64(x)`), `Keyword.Pseudo` (instructions
`SWAP`, `ROT`, …), `Name.Decorator` (`@routine`, …; an unknown `@word` is an
`Error`), `Name.Builtin` (`sin`, `length`, `print`, …), `Name.Constant` (`pi inf
nan`), `Name.Function` (the name after `function`), `Name` (identifiers, a trailing
`!` included but not the `!` of `!=`), `Number.Integer/Hex/Float/Imaginary`,
`String`, `Comment.Single`, `Operator` (Unicode and ASCII spellings alike) and
`Punctuation`.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation,
                            String, Whitespace)

from .frontend.ast import SCALAR_TYPES
from .frontend.parser import KEYWORDS
from .primitives import (BUILTINS, CONSTANTS, CONVERSIONS, INSTRUCTION_TABLE, SAFE_FUNCTIONS,
                         STRUCTURAL_BUILTINS)

#: The annotations of LANGUAGE.md §2 (checked against the grammar by a test).
ANNOTATIONS = ("@routine", "@invcheckoff", "@inbounds", "@safe", "@zeros", "@parallel",
               "@inline")

#: Type names: the scalar types, and `stack` of `stack{T}` / `stack(T)`.
TYPES = tuple(dict.fromkeys(SCALAR_TYPES + CONVERSIONS + ("stack",)))

#: Built-in functions of expressions and the `@safe` functions.
BUILTIN_FUNCTIONS = tuple(dict.fromkeys(
    [*BUILTINS, *(n for n in STRUCTURAL_BUILTINS if n not in TYPES), *SAFE_FUNCTIONS]))

INSTRUCTIONS = tuple(INSTRUCTION_TABLE)

_LETTER = "A-Za-z_α-ωΑ-Ω"
_IDENT = f"[{_LETTER}][{_LETTER}0-9]*(?:!(?!=))?"
#: After a word: no further identifier character, and no `!` that belongs to it.
_WORD_END = f"(?![{_LETTER}0-9]|!(?!=))"

_DECLARATIONS = ("function", "const")
_CONTROL = tuple(k for k in KEYWORDS if k not in _DECLARATIONS + ("include", "true", "false"))

_DIGITS = r"\d[\d_]*"
_FLOAT = rf"{_DIGITS}\.{_DIGITS}(?:[eE][+-]?\d+)?|{_DIGITS}[eE][+-]?\d+"

#: Longest spellings first, so that `<=>` is not read as `<=` then `>`.
_OPERATORS = ("<=>", "⊻=", "+=", "-=", "*=", "/=", "^=", "<-", "->", "==", "!=", "<=", ">=",
              "&&", "||", "**", "//", "<<", ">>", "←", "→", "↔", "≠", "≤", "≥", "⊻", "÷",
              "+", "-", "*", "/", "%", "^", "&", "|", "!", "~", "<", ">", "=")


class RevLexer(RegexLexer):
    """Pygments lexer for rev, the reversible language of rlang."""

    name = "rev"
    aliases = ["rev", "rlang"]
    filenames = ["*.rev"]
    mimetypes = ["text/x-rev"]

    tokens = {
        "root": [
            (r"[ \t\f\r\n]+", Whitespace),
            (r"#.*?$", Comment.Single),
            (r'"', String.Double, "string"),
            (words(ANNOTATIONS, suffix=r"(?![A-Za-z0-9_])"), Name.Decorator),
            (r"@[A-Za-z0-9_]*", Error),
            (rf"(function)([ \t]+)({_IDENT})", bygroups(Keyword.Declaration, Whitespace,
                                                       Name.Function)),
            # the derivative statement's words (`grad f(…) wrt x into t`): a mode
            # followed by the function's name, `wrt` and `into` before a name
            (rf"(f?grad)([ \t]+)({_IDENT})(?=[ \t]*\()", bygroups(Keyword, Whitespace,
                                                               Name.Function)),
            (rf"(wrt|into)(?=[ \t]+[{_LETTER}])", Keyword),
            (words(_DECLARATIONS, suffix=_WORD_END), Keyword.Declaration),
            (words(("include",), suffix=_WORD_END), Keyword.Namespace),
            (words(("true", "false"), suffix=_WORD_END), Keyword.Constant),
            (words(_CONTROL, suffix=_WORD_END), Keyword),
            (words(TYPES, suffix=_WORD_END), Keyword.Type),
            (words(INSTRUCTIONS, suffix=_WORD_END), Keyword.Pseudo),
            (words(BUILTIN_FUNCTIONS, suffix=_WORD_END), Name.Builtin),
            (words(tuple(CONSTANTS), suffix=_WORD_END), Name.Constant),
            (_IDENT, Name),
            (rf"(?:{_FLOAT}|{_DIGITS})im(?![A-Za-z0-9_])", Number.Imaginary),
            (_FLOAT, Number.Float),
            (r"0[xX][0-9a-fA-F][0-9a-fA-F_]*", Number.Hex),
            (_DIGITS, Number.Integer),
            (words(_OPERATORS), Operator),
            (r"[()\[\]{},;.:]", Punctuation),
        ],
        "string": [
            (r'\\.', String.Escape),
            (r'"', String.Double, "#pop"),
            (r'[^"\\\n]+', String.Double),
            (r"\n", Error, "#pop"),     # strings end on their line (grammar: STRING)
        ],
    }
