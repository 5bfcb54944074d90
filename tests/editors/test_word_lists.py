"""The word lists of every editor file equal the grammar's keywords and annotations
and the registry's types, constants, instructions and built-ins: a word missing from
an editor, or an editor word the language does not have, fails."""
from __future__ import annotations

import pytest

from word_lists import (CATEGORIES, EMACS_LISTS, VIM_LISTS, emacs_lists, emacs_words,
                        expected_words, textmate_words, vim_lists, vim_words)

EDITOR_WORDS = {"vscode": textmate_words, "vim": vim_words, "emacs": emacs_words}


def test_expected_words_come_from_the_grammar_and_registry():
    expected = expected_words()
    assert {"function", "end", "elseif", "until", "include", "true"} <= expected["keywords"]
    assert {"@routine", "@inline", "@zeros"} <= expected["annotations"]
    assert {"f64", "ulog", "complex"} <= expected["types"]
    assert {"SWAP", "IROT", "POP"} <= expected["instructions"]
    assert {"sin", "zeros", "print"} <= expected["builtins"]
    assert not expected["builtins"] & expected["types"]


@pytest.mark.parametrize("editor", sorted(EDITOR_WORDS))
@pytest.mark.parametrize("category", CATEGORIES)
def test_editor_lists_equal_the_language(editor, category):
    listed = EDITOR_WORDS[editor]()[category]
    expected = expected_words()[category]
    assert not expected - listed, f"{editor} lacks {category}: {sorted(expected - listed)}"
    assert not listed - expected, (f"{editor} lists {category} that rev does not have: "
                                   f"{sorted(listed - expected)}")


@pytest.mark.parametrize("lists, names", [(vim_lists, VIM_LISTS), (emacs_lists, EMACS_LISTS)],
                         ids=["vim", "emacs"])
def test_every_word_list_is_checked(lists, names):
    """A list the parser finds but no category claims would escape the check above."""
    claimed = {name for group in names.values() for name in group}
    assert set(lists()) == claimed
