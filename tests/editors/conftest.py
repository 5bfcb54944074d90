"""Fixtures that drive the real editors (and VS Code's tokenizer) for tests/editors.

Positions are (0-based line, 0-based column in characters) everywhere; each fixture
converts them to what its editor counts (Vim: 1-based bytes, Emacs: 1-based buffer
positions).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from editor_support import EDITORS, missing, require_program, run_program

Position = tuple[int, int]
NODE_MODULES = EDITORS / "vscode" / "node_modules"
GRAMMAR_PATH = EDITORS / "vscode" / "syntaxes" / "rev.tmLanguage.json"
REV_MODE = EDITORS / "emacs" / "rev-mode.el"


def vim_quote(text) -> str:
    """A Vim string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def lisp_string(text) -> str:
    return json.dumps(str(text))      # a JSON string of a path reads back in Emacs Lisp


def one_per_position(found: list[str], positions: list[Position]) -> list[str]:
    assert len(found) == len(positions), f"{len(found)} answers for {len(positions)} positions"
    return found


@pytest.fixture(scope="session")
def vim(tmp_path_factory):
    """Runs a Vim script (a list of lines) with editors/vim on the runtime path and no
    user configuration; returns the lines the script wrote to the file `g:out`."""
    exe = require_program("vim")
    directory = tmp_path_factory.mktemp("vim")

    def run(lines: list[str]) -> list[str]:
        script, out = directory / "script.vim", directory / "out.txt"
        out.unlink(missing_ok=True)
        script.write_text("\n".join([f"let g:out = {vim_quote(out)}", *lines, "qa!"]) + "\n",
                          encoding="utf-8")
        run_program([exe, "-N", "-u", "NONE", "-i", "NONE", "-n", "-es",
                     "--cmd", f"set rtp^={EDITORS / 'vim'}", "--cmd", "filetype plugin indent on",
                     "--cmd", "syntax on", "--cmd", "packadd matchit", "-S", str(script)])
        return out.read_text(encoding="utf-8").split("\n")[:-1] if out.exists() else []
    return run


@pytest.fixture(scope="session")
def vim_groups(vim, tmp_path_factory):
    """The syntax group names ("" for none) at positions of a file."""
    directory = tmp_path_factory.mktemp("vim-positions")

    def groups(path: Path, positions: list[Position]) -> list[str]:
        lines = path.read_text(encoding="utf-8").split("\n")
        listing = directory / "positions.txt"
        listing.write_text("".join(f"{line + 1} {len(lines[line][:col].encode()) + 1}\n"
                                   for line, col in positions))
        out = vim([f"edit {path}", "let names = []",
                   f"for [l, c] in map(readfile({vim_quote(listing)}), 'split(v:val)')",
                   "  call add(names, synIDattr(synID(str2nr(l), str2nr(c), 1), 'name'))",
                   "endfor", "call writefile(names, g:out)"])
        return one_per_position(out, positions)
    return groups


@pytest.fixture(scope="session")
def emacs():
    """Evaluates Lisp forms in `emacs -Q --batch` with rev-mode loaded; returns stdout."""
    exe = require_program("emacs")

    def run(*forms: str) -> str:
        return run_program([exe, "-Q", "--batch", "-l", str(REV_MODE),
                            *[arg for form in forms for arg in ("--eval", form)]]).stdout
    return run


@pytest.fixture(scope="session")
def emacs_faces(emacs):
    """The faces ("nil" for none) at positions of a file, fontified by rev-mode."""
    def faces(path: Path, positions: list[Position]) -> list[str]:
        starts = [0]
        for line in path.read_text(encoding="utf-8").split("\n"):
            starts.append(starts[-1] + len(line) + 1)
        points = " ".join(str(starts[line] + col + 1) for line, col in positions)
        out = emacs("(with-temp-buffer"
                    f" (insert-file-contents {lisp_string(path)}) (rev-mode) (font-lock-ensure)"
                    f" (dolist (pos '({points}))"
                    "   (princ (format \"%S\\n\" (get-text-property pos 'face)))))")
        return one_per_position(out.split("\n")[:-1], positions)
    return faces


@pytest.fixture(scope="session")
def textmate_tokens():
    """{file: [(line, start, end, innermost scope), ...]} from VS Code's tokenizer."""
    node = require_program("node")
    if not (NODE_MODULES / "vscode-textmate").is_dir():
        missing(f"{NODE_MODULES} is not installed")

    def tokenize(paths: list[Path]) -> dict[Path, list[tuple[int, int, int, str]]]:
        done = run_program([node, str(Path(__file__).parent / "tokenize.js"), str(NODE_MODULES),
                            str(GRAMMAR_PATH), *map(str, paths)])
        found = json.loads(done.stdout)
        return {path: [tuple(token) for token in found[str(path)]] for path in paths}
    return tokenize
