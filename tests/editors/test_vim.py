"""The Vim support (editors/vim), run in a real Vim in silent Ex mode: file type
detection and settings, the syntax group at every marked character of the
annotated sample, matchit jumps, and `gg=G` re-indenting every example and library
file (indentation removed first) back to what is written."""
from __future__ import annotations

from pathlib import Path

import pytest

from editor_support import (SOURCES, assert_same_indentation, flattened_copies,
                            source_id)
from highlight_expectations import assert_sample_highlighted


def test_filetype_and_settings(vim, tmp_path):
    source = tmp_path / "new.rev"
    out = vim([f"edit {source}", "call writefile([&filetype, &commentstring, &comments,"
               " &shiftwidth, &expandtab, &indentexpr, exists('b:match_words')], g:out)"])
    assert out == ["rev", "# %s", ":#", "4", "1", "GetRevIndent(v:lnum)", "1"]


def test_syntax_groups_of_the_sample(vim_groups):
    assert_sample_highlighted(vim_groups, editor=0)


def test_percent_jumps_between_the_keywords_of_a_block(vim):
    factor = SOURCES[0].parent / "factor.rev"
    lines = factor.read_text(encoding="utf-8").split("\n")
    start = lines.index("    if fact[i - 1] * fact[i - 1] < fact[i]") + 1
    jump = "normal %\ncall add(seen, line('.') - {0} . ' ' . expand('<cword>'))".format(start)
    out = vim([f"edit {factor}", "let seen = []", f"call cursor({start}, 5)", *[jump] * 3,
               f"call cursor({start + 1}, 9)", *[jump] * 3, "call writefile(seen, g:out)"])
    # if (+0) → else (+4) → end (+6) → if; from (+1) → do (+1) → until (+3) → from
    assert out == ["4 else", "6 end", "0 if", "1 do", "3 until", "1 from"]


@pytest.fixture(scope="module")
def vim_reindented(vim, tmp_path_factory) -> dict[Path, str]:
    """Every source with its indentation removed, re-indented by `gg=G` in one Vim."""
    copies = flattened_copies(tmp_path_factory.mktemp("vim-indent"))
    vim([f"for f in {[str(c) for c in copies.values()]}", "  execute 'edit ' . fnameescape(f)",
         "  normal! gg=G", "  write", "endfor"])
    return {path: copy.read_text(encoding="utf-8") for path, copy in copies.items()}


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_indent_reproduces_the_sources(vim_reindented, path):
    assert_same_indentation(vim_reindented[path], path.read_text(encoding="utf-8"),
                            source_id(path))
