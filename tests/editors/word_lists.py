"""The word lists of the editor files, parsed out of them, and the lists they must
equal, computed from grammar/rev.lark and rlang.primitives.

Each function returns {category: set of words} for the categories keywords,
annotations, types, constants, instructions and builtins.
"""
from __future__ import annotations

import functools
import json
import re

import lark
from lark.lexer import PatternStr

from rlang import primitives
from rlang.frontend import ast

from editor_support import EDITORS, REPO

CATEGORIES = ("keywords", "annotations", "types", "constants", "instructions", "builtins")


@functools.cache
def expected_words() -> dict[str, set[str]]:
    """Keywords and annotations: the literal terminals of the grammar (lark reads
    it); the other categories: the primitive registry."""
    grammar = lark.Lark((REPO / "grammar" / "rev.lark").read_text(encoding="utf-8"),
                        start="program", parser="lalr")
    literals = {t.pattern.value for t in grammar.terminals if isinstance(t.pattern, PatternStr)}
    types = set(ast.SCALAR_TYPES) | set(primitives.CONVERSIONS)
    builtins = (set(primitives.BUILTINS) | set(primitives.STRUCTURAL_BUILTINS)
                | set(primitives.SAFE_FUNCTIONS)) - types
    return {
        "keywords": {w for w in literals if re.fullmatch(r"[a-z]+", w)},
        "annotations": {w for w in literals if re.fullmatch(r"@[a-z]+", w)},
        "types": types,
        "constants": set(primitives.CONSTANTS),
        "instructions": set(primitives.INSTRUCTION_TABLE),
        "builtins": builtins,
    }


def _alternatives(regex: str) -> set[str]:
    """The words of every `(?:w1|w2|…)` group of a regular expression."""
    words = set()
    for group in re.findall(r"\(\?:([^()]*)\)", regex):
        alternatives = group.split("|")
        if all(re.fullmatch(r"@?\w+", w) for w in alternatives):
            words.update(alternatives)
    return words


def _regexes(rule: dict) -> list[str]:
    """The `match` regexes of a TextMate rule and of the rules it contains."""
    found = [rule["match"]] if "match" in rule else []
    for inner in rule.get("patterns", []):
        found += _regexes(inner)
    return found


def textmate_words() -> dict[str, set[str]]:
    """From the repository entries of the VS Code grammar named like the categories."""
    path = EDITORS / "vscode" / "syntaxes" / "rev.tmLanguage.json"
    repository = json.loads(path.read_text(encoding="utf-8"))["repository"]
    return {category: set().union(*map(_alternatives, _regexes(repository[category])))
            for category in CATEGORIES}


#: The lists of editors/vim/syntax/rev.vim (`let s:NAME = [...]`) by category.
VIM_LISTS = {
    "keywords": ("conditionals", "loops", "functions", "keywords", "includes", "booleans"),
    "annotations": ("annotations",), "types": ("types",), "constants": ("constants",),
    "instructions": ("instructions",), "builtins": ("builtins",),
}


def vim_lists() -> dict[str, list[str]]:
    """Every `let s:NAME = [...]` list of the Vim syntax file (with its continuation
    lines)."""
    text = (EDITORS / "vim" / "syntax" / "rev.vim").read_text(encoding="utf-8")
    text = re.sub(r"\n\s*\\", " ", text)
    return {name: re.findall(r"'([^']*)'", items)
            for name, items in re.findall(r"^let s:(\w+) = \[(.*)\]$", text, re.M)}


def vim_words() -> dict[str, set[str]]:
    lists = vim_lists()
    return {category: {w for name in names for w in lists.get(name, [])}
            for category, names in VIM_LISTS.items()}


#: The lists of editors/emacs/rev-mode.el (`(defconst rev-NAME '(...))`) by category.
EMACS_LISTS = {
    "keywords": ("rev-keywords", "rev-booleans"), "annotations": ("rev-annotations",),
    "types": ("rev-types",), "constants": ("rev-constants",),
    "instructions": ("rev-instructions",), "builtins": ("rev-builtins",),
}


def emacs_lists() -> dict[str, list[str]]:
    """Every public `(defconst rev-NAME '("word" ...))` list of rev-mode.el."""
    text = (EDITORS / "emacs" / "rev-mode.el").read_text(encoding="utf-8")
    return {name: re.findall(r'"([^"]*)"', items)
            for name, items in re.findall(r"\(defconst (rev-[a-z]+)\s+'\(([^()]*)\)", text)}


def emacs_words() -> dict[str, set[str]]:
    lists = emacs_lists()
    return {category: {w for name in names for w in lists.get(name, [])}
            for category, names in EMACS_LISTS.items()}
