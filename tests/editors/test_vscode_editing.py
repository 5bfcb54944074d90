"""Editing rev in VS Code: the indentation rules re-indent every example and library
file as written, the snippets expand to rev that parses and is indented by those
rules, and the comment, bracket and Enter settings do what they say."""
from __future__ import annotations

import json
import re

import pytest

from editor_support import (EDITORS, SOURCES, assert_same_indentation, continuation_lines,
                            flatten, source_id)
from rlang.frontend.parser import parse
from vscode_indent import configuration, reindent

SNIPPETS = json.loads((EDITORS / "vscode" / "snippets" / "rev.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_indentation_rules_reindent_the_sources(path):
    """Lines inside an open bracket are aligned under it by hand; VS Code's rules
    cannot express that, so those lines are compared without their indentation."""
    text = path.read_text(encoding="utf-8")
    assert_same_indentation(reindent(flatten(text)), text, path.name,
                            ignore=continuation_lines(text))


@pytest.mark.parametrize("line, opens", [
    ("function f(x)", True), ("@inline function f(x)", True), ("if (a, b)  # if end", True),
    ("elseif c", True), ("else", True), ("while (a, b)", True), ("@parallel for i = 0:n", True),
    ("@invcheckoff for i = 0:n", True), ("from i == 0 do", True), ("loop", True),
    ("@routine begin", True), ("~begin", True), ("begin  # comment", True),
    ("if c; x += 1; end", False), ("from i == 0 do i += 1 until i == 3", False),
    ("~@routine", False), ("x += 1  # while", False), ("# function", False),
    ("ending += 1", False), ("@safe print(\"begin\")", False), ("iffy(x)", False),
])
def test_increase_indent_pattern(line, opens):
    rule = configuration()["indentationRules"]["increaseIndentPattern"]
    assert bool(re.search(rule, "    " + line, re.ASCII)) == opens


@pytest.mark.parametrize("line, closes", [
    ("end", True), ("else", True), ("elseif (a, b)", True), ("until i == 0", True),
    ("loop  # again", True), ("endx += 1", False), ("x += 1  # end", False),
    ("~end_of(x)", False),
])
def test_decrease_indent_pattern(line, closes):
    rule = configuration()["indentationRules"]["decreaseIndentPattern"]
    assert bool(re.search(rule, "    " + line, re.ASCII)) == closes


def expand(body: list[str]) -> str:
    """A snippet as VS Code inserts it with every placeholder left at its default
    (tabs become four spaces, the editor's indentation of rev)."""
    text = "\n".join(body).replace("\t", "    ")
    defaults = {}

    def placeholder(match):
        defaults.setdefault(match[1], match[2])
        return match[2]
    while re.search(r"\$\{\d+:[^{}]*\}", text):
        text = re.sub(r"\$\{(\d+):([^{}]*)\}", placeholder, text)
    while re.search(r"\$\d+", text):
        text = re.sub(r"\$(\d+)", lambda m: defaults.get(m[1], ""), text)
    return text


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_expands_to_rev_indented_by_the_rules(name):
    code = expand(SNIPPETS[name]["body"])
    assert_same_indentation(reindent(flatten(code)), code, f"snippet {name}")
    if not code.startswith("function"):
        code = "function host()\n" + "\n".join("    " + line for line in code.split("\n")) + "\nend"
    parse(code)


def test_snippets_cover_the_block_forms():
    prefixes = {snippet["prefix"] for snippet in SNIPPETS.values()}
    assert {"function", "if", "while", "from", "for", "@routine", "ancilla"} <= prefixes
    assert len(prefixes) == len(SNIPPETS)
    bodies = {name: "\n".join(s["body"]) for name, s in SNIPPETS.items()}
    assert "~@routine" in bodies["routine"] and "loop" in bodies["from"]
    assert "←" in bodies["ancilla"] and "→" in bodies["ancilla"]


def test_comments_and_brackets():
    config = configuration()
    assert config["comments"] == {"lineComment": "#"}
    pairs = {tuple(pair) for pair in config["brackets"]}
    assert pairs == {("(", ")"), ("[", "]"), ("{", "}")}
    closing = {(p["open"], p["close"]) for p in config["autoClosingPairs"]}
    assert pairs | {('"', '"')} == closing


def test_word_pattern_keeps_the_bang_of_mutated_names():
    pattern = re.compile(configuration()["wordPattern"])
    assert pattern.findall("y! += θ1 * 2.5e3im; y!=3 @routine") == [
        "y!", "θ1", "2.5e3im", "y", "3", "@routine"]


def test_enter_inside_a_comment_continues_it():
    [rule] = configuration()["onEnterRules"]
    before, after = re.compile(rule["beforeText"]), re.compile(rule["afterText"])
    assert before.search("    # split this") and after.search("comment here")
    assert not after.search("")                 # Enter at the end of a comment: plain
    assert not before.search("    x += 1")
    assert rule["action"]["appendText"] == "# "
