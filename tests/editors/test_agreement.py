"""The three editors agree on real code: every token that VS Code's tokenizer finds
in the examples and the standard library gets, in Vim and in Emacs, the syntax group
and face of its category (highlight_expectations.SCOPES), and none is invalid."""
from __future__ import annotations

import pytest

from editor_support import SOURCES, source_id
from highlight_expectations import translate


@pytest.fixture(scope="module")
def tokens(textmate_tokens):
    """{source: [(line, last column, scope)]} for every token that is not blank."""
    found = textmate_tokens(SOURCES)
    return {path: [(line, end - 1, scope) for line, start, end, scope in found[path]
                   if scope != "source.rev" and end > start] for path in SOURCES}


def disagreements(tokens, got, column) -> list[str]:
    lines = [f"line {line + 1} col {col}: {scope} is {have!r}, expected {translate(scope)[column]!r}"
             for (line, col, scope), have in zip(tokens, got) if have != translate(scope)[column]]
    return lines[:20]


def test_no_token_is_invalid(tokens):
    invalid = [(source_id(path), line + 1, col) for path in SOURCES
               for line, col, scope in tokens[path] if scope.startswith("invalid")]
    assert not invalid


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_vim_agrees_with_vscode(tokens, vim_groups, path):
    marks = tokens[path]
    wrong = disagreements(marks, vim_groups(path, [(line, col) for line, col, _ in marks]), 0)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_emacs_agrees_with_vscode(tokens, emacs_faces, path):
    marks = tokens[path]
    wrong = disagreements(marks, emacs_faces(path, [(line, col) for line, col, _ in marks]), 1)
    assert not wrong, "\n".join(wrong)
