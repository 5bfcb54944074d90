"""The Pygments lexer (rlang/highlight.py): word lists against the grammar and the
registry, token types of LANGUAGE.md §2, every example lexed without an error token,
and `pygmentize` finding the lexer through the installed entry point."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation,
                            String)

from rlang.highlight import ANNOTATIONS, RevLexer
from rlang.frontend.parser import CONTEXTUAL_KEYWORDS, KEYWORDS
from rlang.primitives import BUILTINS, CONVERSIONS, INSTRUCTION_TABLE

REPO = Path(__file__).resolve().parents[2]
GRAMMAR = (REPO / "grammar" / "rev.lark").read_text(encoding="utf-8")
SOURCES = sorted(REPO.glob("examples/*.rev")) + sorted(REPO.glob("rlang/std/*.rev"))


def tokens(text: str) -> list[tuple]:
    """(token type, text) pairs, whitespace left out."""
    return [(t, v) for t, v in RevLexer().get_tokens(text) if v.strip()]


def token_of(text: str, word: str):
    types = [t for t, v in tokens(text) if v == word]
    assert types, f"{word!r} is not a token of {text!r}: {tokens(text)}"
    return types[0]


# ------------------------------------------------------- lists that cannot drift

def test_keywords_are_the_grammars_words():
    quoted = set(re.findall(r'"([a-z]+)"', GRAMMAR))
    assert set(KEYWORDS) <= quoted
    assert quoted - set(KEYWORDS) <= set(CONTEXTUAL_KEYWORDS)


def test_annotations_are_the_grammars():
    assert set(ANNOTATIONS) == set(re.findall(r'"(@[a-z]+)"', GRAMMAR))


@pytest.mark.parametrize("word", KEYWORDS)
def test_every_keyword_is_a_keyword_token(word):
    assert token_of(f"{word} x", word) in Keyword


@pytest.mark.parametrize("word", ANNOTATIONS)
def test_every_annotation_is_a_decorator_token(word):
    assert token_of(f"{word} x", word) is Name.Decorator


@pytest.mark.parametrize("name", sorted(BUILTINS) + ["length", "size", "zero", "one", "zeros",
                                                     "print", "show", "assert"])
def test_every_builtin_function_is_a_builtin_token(name):
    assert token_of(f"y += {name}(x)", name) is Name.Builtin


@pytest.mark.parametrize("name", sorted(INSTRUCTION_TABLE))
def test_every_instruction_is_a_pseudo_keyword(name):
    assert token_of(f"{name}(a, b)", name) is Keyword.Pseudo


@pytest.mark.parametrize("name", CONVERSIONS + ("complex", "stack", "ulog", "fixed"))
def test_conversions_and_types_are_type_tokens(name):
    assert token_of(f"y += {name}(x)", name) is Keyword.Type


# ---------------------------------------------------------- tokens of §2

@pytest.mark.parametrize("text, expected", [
    ("y!=3", [(Name, "y"), (Operator, "!="), (Number.Integer, "3")]),
    ("y! += 3", [(Name, "y!"), (Operator, "+="), (Number.Integer, "3")]),
    ("x ← 2.0im", [(Name, "x"), (Operator, "←"), (Number.Imaginary, "2.0im")]),
    ("x <- 0x2A_ff", [(Name, "x"), (Operator, "<-"), (Number.Hex, "0x2A_ff")]),
    ("n → 1_000", [(Name, "n"), (Operator, "→"), (Number.Integer, "1_000")]),
    ("n -> 1e-3", [(Name, "n"), (Operator, "->"), (Number.Float, "1e-3")]),
    ("a <=> b", [(Name, "a"), (Operator, "<=>"), (Name, "b")]),
    ("a ↔ b", [(Name, "a"), (Operator, "↔"), (Name, "b")]),
    ("b ⊻= c ≠ d", [(Name, "b"), (Operator, "⊻="), (Name, "c"), (Operator, "≠"), (Name, "d")]),
    ("b ^= c <= d", [(Name, "b"), (Operator, "^="), (Name, "c"), (Operator, "<="), (Name, "d")]),
    ("i ≤ j ≥ k", [(Name, "i"), (Operator, "≤"), (Name, "j"), (Operator, "≥"), (Name, "k")]),
    ("3.5e+10 2im 1_0.2_5", [(Number.Float, "3.5e+10"), (Number.Imaginary, "2im"),
                             (Number.Float, "1_0.2_5")]),
    ("x ** 2 // 3", [(Name, "x"), (Operator, "**"), (Number.Integer, "2"), (Operator, "//"),
                     (Number.Integer, "3")]),
    ("θ += α", [(Name, "θ"), (Operator, "+="), (Name, "α")]),
    ("~@routine", [(Operator, "~"), (Name.Decorator, "@routine")]),
    ("~f(x)", [(Operator, "~"), (Name, "f"), (Punctuation, "("), (Name, "x"), (Punctuation, ")")]),
    ("z.re += pi", [(Name, "z"), (Punctuation, "."), (Name, "re"), (Operator, "+="),
                    (Name.Constant, "pi")]),
    ("xs: f64[:,:]", [(Name, "xs"), (Punctuation, ":"), (Keyword.Type, "f64"),
                      (Punctuation, "["), (Punctuation, ":"), (Punctuation, ","),
                      (Punctuation, ":"), (Punctuation, "]")]),
    ("s: stack{i32}", [(Name, "s"), (Punctuation, ":"), (Keyword.Type, "stack"),
                       (Punctuation, "{"), (Keyword.Type, "i32"), (Punctuation, "}")]),
    ("x += 1 # the rest ← is a comment", [(Name, "x"), (Operator, "+="), (Number.Integer, "1"),
                                          (Comment.Single, "# the rest ← is a comment")]),
    ('@safe print("a\\"b")', [(Name.Decorator, "@safe"), (Name.Builtin, "print"),
                              (Punctuation, "("), (String.Double, '"'), (String.Double, "a"),
                              (String.Escape, '\\"'), (String.Double, "b"),
                              (String.Double, '"'), (Punctuation, ")")]),
    ("function f!(y!)", [(Keyword.Declaration, "function"), (Name.Function, "f!"),
                         (Punctuation, "("), (Name, "y!"), (Punctuation, ")")]),
    ('include "std/blas.rev"', [(Keyword.Namespace, "include"), (String.Double, '"'),
                                (String.Double, "std/blas.rev"), (String.Double, '"')]),
    ("const N = true", [(Keyword.Declaration, "const"), (Name, "N"), (Operator, "="),
                        (Keyword.Constant, "true")]),
])
def test_token_types(text, expected):
    assert tokens(text) == expected


@pytest.mark.parametrize("text, name", [
    ("endx += 1", "endx"), ("ifs += 1", "ifs"), ("end! += 1", "end!"), ("sinh2 += 1", "sinh2"),
    ("SWAPPED += 1", "SWAPPED"), ("f64x += 1", "f64x"), ("pies += 1", "pies"),
])
def test_words_inside_longer_names_are_names(text, name):
    assert tokens(text)[0] == (Name, name)


@pytest.mark.parametrize("text, bad", [
    ("@routin x", "@routin"), ("x ← $", "$"), ('"open\nx', "\n"), ("x ?= 1", "?"),
])
def test_what_the_grammar_refuses_is_an_error_token(text, bad):
    assert (Error, bad) in list(RevLexer().get_tokens(text))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_example_lexes_without_error_tokens(path):
    text = path.read_text(encoding="utf-8")
    lexed = list(RevLexer().get_tokens(text))
    assert [v for t, v in lexed if t in Error] == []
    assert "".join(v for _, v in lexed) == (text if text.endswith("\n") else text + "\n")


# ------------------------------------------------------- the installed plugin

def _pygmentize(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "pygmentize"
    assert script.exists(), f"pygmentize is not installed beside {sys.executable}"
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=REPO,
                          timeout=60)


def test_pygmentize_finds_the_lexer_by_file_name():
    done = _pygmentize("-N", "examples/multiplier.rev")
    assert (done.returncode, done.stdout.strip()) == (0, "rev"), done.stderr


@pytest.mark.parametrize("alias", ["rev", "rlang"])
def test_pygmentize_highlights_with_the_lexer_by_name(alias):
    done = _pygmentize("-l", alias, "-f", "raw", "examples/multiplier.rev")
    assert done.returncode == 0, done.stderr
    assert "Token.Keyword.Declaration\t'function'" in done.stdout
    assert "Token.Name.Function\t'multiplier'" in done.stdout
    assert "Token.Error" not in done.stdout


def test_import_rlang_imports_neither_pygments_nor_prompt_toolkit():
    code = ("import sys, rlang, rlang.cli; "
            "print(sorted(m for m in ('pygments', 'prompt_toolkit') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
