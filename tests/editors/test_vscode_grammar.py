"""The VS Code extension's manifest and TextMate grammar: the grammar test files of
tests/editors/textmate run through vscode-tmgrammar-test (VS Code's own tokenizer,
vscode-textmate with oniguruma), and they assert every scope the grammar assigns."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from editor_support import EDITORS, SAMPLE, missing, require_program
from highlight_expectations import sample_marks

VSCODE = EDITORS / "vscode"
MANIFEST = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
GRAMMAR_PATH = VSCODE / "syntaxes" / "rev.tmLanguage.json"
GRAMMAR = json.loads(GRAMMAR_PATH.read_text(encoding="utf-8"))
TOOL = VSCODE / "node_modules" / "vscode-tmgrammar-test" / "dist" / "unit.js"


@pytest.fixture(scope="module")
def grammar_test():
    """Runs vscode-tmgrammar-test on test files: the finished process."""
    node = require_program("node")
    if not TOOL.is_file():
        missing(f"{TOOL.relative_to(EDITORS.parent)} is not installed")

    def run(*files):
        return subprocess.run([node, str(TOOL), "--compact", "-g", str(GRAMMAR_PATH),
                               *map(str, files)], capture_output=True, text=True, timeout=120)
    return run


def grammar_scopes(rule) -> set[str]:
    """Every scope name that a grammar rule and the rules inside it can assign."""
    if isinstance(rule, dict):
        own = {rule["name"]} if isinstance(rule.get("name"), str) else set()
        return own.union(*(grammar_scopes(v) for k, v in rule.items() if k != "name"))
    if isinstance(rule, list):
        return set().union(*map(grammar_scopes, rule))
    return set()


def test_manifest_contributes_the_language_grammar_and_snippets():
    contributes = MANIFEST["contributes"]
    [language] = contributes["languages"]
    assert language["id"] == "rev" and language["extensions"] == [".rev"]
    assert (VSCODE / language["configuration"]).is_file()
    [grammar] = contributes["grammars"]
    assert grammar["language"] == "rev"
    assert (VSCODE / grammar["path"]).resolve() == GRAMMAR_PATH
    assert grammar["scopeName"] == GRAMMAR["scopeName"] == "source.rev"
    [snippets] = contributes["snippets"]
    assert snippets["language"] == "rev" and (VSCODE / snippets["path"]).is_file()


def test_grammar_regexes_compile():
    """Python's re reads these oniguruma patterns alike: an unbalanced one fails here."""
    regexes = re.findall(r'"(?:match|begin|end)": ("(?:[^"\\]|\\.)*")',
                         GRAMMAR_PATH.read_text(encoding="utf-8"))
    assert len(regexes) > 20
    for regex in regexes:
        re.compile(json.loads(regex))


def test_sample_asserts_every_scope_of_the_grammar():
    asserted = {mark.scope for mark in sample_marks()}
    scopes = grammar_scopes(GRAMMAR["repository"])
    assert not scopes - asserted, f"never asserted: {sorted(scopes - asserted)}"
    assert not asserted - scopes, f"not in the grammar: {sorted(asserted - scopes)}"


def test_grammar_test_files_pass(grammar_test):
    files = sorted(SAMPLE.parent.glob("*.rev"))
    done = grammar_test(*files)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("successfuly") == len(files), done.stdout


def test_a_wrong_scope_is_reported(grammar_test, tmp_path):
    wrong = tmp_path / "wrong.rev"
    wrong.write_text('# SYNTAX TEST "source.rev"\nend\n# <--- keyword.control.loop.rev\n')
    done = grammar_test(wrong)
    assert done.returncode != 0
    assert "Missing required scopes: [ keyword.control.loop.rev ]" in done.stdout
