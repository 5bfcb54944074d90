"""Programs checked clean, kept on disk (Note [Checked programs on disk],
rlang/frontend/check_cache.py): a file whose sources checked clean is not checked
again; a program with errors, a changed file or an included file changed, and a
program given as a string are."""
from __future__ import annotations

import pytest

import rlang
from rlang.frontend import check, check_cache

PROGRAM = """include "helper.rev"

function f(y!: f64, x: f64)
    add_twice!(y!, x)
end
"""
HELPER = """function add_twice!(y!: f64, x: f64)
    y! += 2.0 * x
end
"""


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """The list of units `collect_errors` checked, with an empty disk cache."""
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path / "cache"))
    checked = []
    real = check_cache.collect_errors

    def counting(unit):
        checked.append(unit.file)
        return real(unit)

    monkeypatch.setattr(check_cache, "collect_errors", counting)
    monkeypatch.setattr(check, "collect_errors", counting)      # (what `check` calls)
    return checked


def _files(tmp_path, program=PROGRAM, helper=HELPER):
    (tmp_path / "helper.rev").write_text(helper)
    path = tmp_path / "prog.rev"
    path.write_text(program)
    return str(path)


def _helper_free(tmp_path, body: str) -> str:
    path = tmp_path / "prog.rev"
    path.write_text(body)
    return str(path)


def test_a_clean_program_is_checked_once(counted, tmp_path):
    path = _helper_free(tmp_path, "function f(y!: f64, x: f64)\n    y! += x * x\nend\n")
    assert rlang.load(path).f(0.0, 3.0) == (9.0, 3.0)
    assert rlang.load(path).f(0.0, 2.0) == (4.0, 2.0)
    assert counted == [path]


def test_a_program_with_errors_is_checked_every_time(counted, tmp_path):
    path = _helper_free(tmp_path, "function f(y!: f64, x: f64)\n    y! += x * z\nend\n")
    for _ in range(2):
        with pytest.raises(rlang.CheckErrors) as error:
            rlang.load(path)
        assert "z" in error.value.render()
    assert counted == [path, path]


def test_a_change_in_an_included_file_is_checked(counted, tmp_path):
    path = _files(tmp_path)
    assert rlang.load(path).f(0.0, 1.5) == (3.0, 1.5)
    _files(tmp_path, helper=HELPER.replace("2.0 * x", "2.0 * w"))
    with pytest.raises(rlang.CheckErrors) as error:
        rlang.load(path)
    assert "w" in error.value.render()
    assert counted == [path, path]


def test_programs_given_as_strings_are_checked_every_time(counted):
    source = "function f(y!: f64, x: f64)\n    y! += x\nend\n"
    rlang.loads(source)
    rlang.loads(source)
    assert counted == ["<string>", "<string>"]
