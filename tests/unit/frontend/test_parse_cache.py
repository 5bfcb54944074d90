"""Parsed programs kept on disk (Note [Parsed programs on disk],
rlang/frontend/parse_cache.py): a file parsed once is read back, equal, with its
text registered for errors; what cannot be kept is parsed as before."""
from __future__ import annotations

import subprocess
import sys

import pytest

import rlang
from rlang import span
from rlang.frontend import parse_cache

PROGRAM = """include "std/stats.rev"

function f(y!: f64, x: f64)
    y! += x * x
    @safe assert(y! < 10.0, "y! too big")
end
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "parsed"


def _no_parser(monkeypatch):
    def refuse(text, file):
        raise AssertionError(f"{file} was parsed again")
    monkeypatch.setattr(parse_cache, "_parse", refuse)


def test_a_file_is_parsed_once_and_read_back_equal(cache, tmp_path, monkeypatch):
    path = tmp_path / "prog.rev"
    path.write_text(PROGRAM)
    first = rlang.load(str(path))
    assert len(list(cache.glob("*.rpa"))) == 2          # the file and std/stats.rev
    _no_parser(monkeypatch)
    span.SOURCES.pop(str(path), None)
    second = rlang.load(str(path))
    assert second.unit.program == first.unit.program
    assert second.f(0.0, 2.0) == (4.0, 2.0)
    with pytest.raises(rlang.RlangError) as error:     # the text is there for errors
        second.f(0.0, 5.0)
    assert 'assert(y! < 10.0, "y! too big")' in error.value.render()


def test_a_changed_file_is_parsed_again(cache, tmp_path):
    path = tmp_path / "prog.rev"
    path.write_text(PROGRAM)
    rlang.load(str(path))
    path.write_text(PROGRAM.replace("x * x", "x * 3.0"))
    assert rlang.load(str(path)).f(0.0, 2.0) == (6.0, 2.0)


def test_a_damaged_entry_is_parsed_again(cache, tmp_path):
    path = tmp_path / "prog.rev"
    path.write_text(PROGRAM)
    rlang.load(str(path))
    for entry in cache.glob("*.rpa"):
        entry.write_bytes(b"not a pickle")
    assert rlang.load(str(path)).f(1.0, 2.0) == (5.0, 2.0)


def test_a_parse_error_is_never_kept(cache, tmp_path):
    path = tmp_path / "bad.rev"
    path.write_text("function f(x)\n    x += \nend\n")
    for _ in range(2):
        with pytest.raises(rlang.ParseError, match="bad.rev:3:1: unexpected .end."):
            rlang.load(str(path))
    assert not list(cache.glob("*.rpa"))


def test_programs_given_as_strings_are_not_kept(cache):
    rlang.loads("function g(x, y)\n    x += y\nend\n")
    assert not cache.exists() or not list(cache.glob("*.rpa"))


def test_a_deep_expression_in_a_file_is_kept_without_crashing(cache, tmp_path):
    # pickling recurses as deep as the tree: on the main thread, with the deep-stack
    # worker's recursion limit, this crashed the process
    path = tmp_path / "deep.rev"
    path.write_text("function f(x, y)\n    x += " + "-" * 50_000 + "y\nend\n")
    code = ("import rlang, sys\n"
            "for _ in range(2):\n"
            f"    print(rlang.load({str(path)!r}).f(1.0, 2.0))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["(3.0, 2.0)", "(3.0, 2.0)"]
