"""The Emacs major mode (editors/emacs/rev-mode.el) in a batch Emacs: it byte-compiles
without a warning, *.rev files open in it, every marked character of the annotated
sample has its category's face, and `indent-region` re-indents every example and
library file (indentation removed first) back to what is written."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REV_MODE, lisp_string
from editor_support import (SOURCES, assert_same_indentation, flattened_copies,
                            require_program, run_program, source_id)
from highlight_expectations import assert_sample_highlighted


def test_byte_compiles_without_warnings(tmp_path):
    copy = tmp_path / "rev-mode.el"
    shutil.copy(REV_MODE, copy)
    done = run_program([require_program("emacs"), "-Q", "--batch",
                        "--eval", "(setq byte-compile-error-on-warn t)",
                        "-f", "batch-byte-compile", str(copy)])
    assert (tmp_path / "rev-mode.elc").is_file()
    assert "Warning" not in done.stdout + done.stderr


def test_rev_files_open_in_rev_mode(emacs, tmp_path):
    out = emacs(f"(find-file {lisp_string(tmp_path / 'new.rev')})",
                "(princ (format \"%S %S %S\" major-mode comment-start indent-tabs-mode))")
    assert out == 'rev-mode "# " nil'


def test_faces_of_the_sample(emacs_faces):
    assert_sample_highlighted(emacs_faces, editor=1)


@pytest.fixture(scope="module")
def emacs_reindented(emacs, tmp_path_factory) -> dict[Path, str]:
    """Every source with its indentation removed, re-indented by `indent-region`."""
    copies = flattened_copies(tmp_path_factory.mktemp("emacs-indent"))
    emacs(f"(dolist (file '({' '.join(map(lisp_string, copies.values()))}))"
          "  (with-temp-file file (insert-file-contents file) (rev-mode)"
          "    (let ((inhibit-message t)) (indent-region (point-min) (point-max)))))")
    return {path: copy.read_text(encoding="utf-8") for path, copy in copies.items()}


@pytest.mark.parametrize("path", SOURCES, ids=source_id)
def test_indent_region_reproduces_the_sources(emacs_reindented, path):
    assert_same_indentation(emacs_reindented[path], path.read_text(encoding="utf-8"),
                            source_id(path))
