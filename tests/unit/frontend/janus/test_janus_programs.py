"""Janus programs run by the command line, against their expected text.

    programs/NAME.ja + NAME.out    stdout of `rlang run` (exit status 0)
    programs/NAME.ja + NAME.inv    stdout of `rlang invert` (jana -i's program)
    programs/NAME.ja + NAME.mout   stdout of `rlang run --modular`
    errors/NAME.ja   + NAME.err    stderr of `rlang run` (exit status 1, nothing on stdout
                                   but what the program printed before failing)

The programs and their expected texts were written for rlang (the classics of the
Janus literature, and one program per error jana reports); the texts were checked by
eye against what jana prints (docs/janus.md says where rlang differs).  Regenerate
with `RLANG_REGEN_JANUS=1 python -m pytest tests/unit/frontend/janus` and review the
diff.  The llvm backend must print what the interpreter prints on every program it
compiles, and report an overflow where the interpreter's unbounded integers go on.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlang.frontend.invert import invert_program
from rlang.frontend.janus import loads_janus
from rlang.frontend.janus.printer import format_janus_program

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
REGEN = os.environ.get("RLANG_REGEN_JANUS") == "1"
PROGRAMS = sorted((HERE / "programs").glob("*.ja"))
ERRORS = sorted((HERE / "errors").glob("*.ja"))
#: the programs whose values stay within 64 bits, which compiled code must agree on
COMPILED = ("factor", "fib", "modular", "perm-to-code", "run-length", "sqrt",
            "stack-operations")


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO))


def _expect(path: Path, text: str) -> None:
    if REGEN:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path.name} is missing: regenerate with RLANG_REGEN_JANUS=1"
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(REPO)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_program_output(cli, program):
    code, out, err = cli("run", _relative(program))
    assert (code, err) == (0, "")
    _expect(program.with_suffix(".out"), out)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_inverse_program(cli, program):
    code, out, err = cli("invert", _relative(program))
    assert (code, err) == (0, "")
    _expect(program.with_suffix(".inv"), out)
    original = loads_janus(program.read_text(), _relative(program))
    inverse = loads_janus(out, "inverse.ja")
    assert inverse.program == invert_program(original.program)
    assert invert_program(inverse.program) == original.program
    assert format_janus_program(original.program) == \
        format_janus_program(invert_program(inverse.program))


def test_inverse_undoes_the_program(cli, tmp_path):
    """The printed inverse's procedure, called, undoes the original's."""
    program = HERE / "programs" / "perm-to-code.ja"
    procedures = program.read_text().split("procedure main()")[0]
    code, inverse, _ = cli("invert", _relative(program))
    assert code == 0
    main = "procedure main()\n    int x[4]\n{}    call perm_to_code(x)\n"
    (tmp_path / "encode.ja").write_text(
        procedures + main.format("    x[0] += 3\n    x[1] += 1\n    x[2] += 2\n"))
    (tmp_path / "decode.ja").write_text(
        inverse.split("procedure main()")[0] + main.format("    x[2] += 1\n"))
    assert cli("run", str(tmp_path / "encode.ja"))[1] == "x[4] = {0, 0, 1, 0}\n"
    assert cli("run", str(tmp_path / "decode.ja"))[1] == "x[4] = {3, 1, 2, 0}\n"


def test_modular_arithmetic(cli):
    program = HERE / "programs" / "modular.ja"
    code, out, err = cli("run", "--modular", _relative(program))
    assert (code, err) == (0, "")
    _expect(program.with_suffix(".mout"), out)
    assert out != program.with_suffix(".out").read_text()


@pytest.mark.parametrize("program", ERRORS, ids=lambda p: p.stem)
def test_error(cli, program):
    code, out, err = cli("run", _relative(program))
    assert code == 1
    assert "Traceback" not in err and "internal error" not in err
    assert err.startswith(_relative(program))
    _expect(program.with_suffix(".err"), err)


@pytest.mark.parametrize("name", COMPILED)
def test_llvm_agrees_with_the_interpreter(cli, name):
    program = HERE / "programs" / f"{name}.ja"
    flags = ("--modular",) if name == "modular" else ()
    code, out, err = cli("run", "--backend", "llvm", *flags, _relative(program))
    assert (code, err) == (0, "")
    assert out == cli("run", "--backend", "interp", *flags, _relative(program))[1]


@pytest.mark.parametrize("name", ["division-by-zero", "if-bwd", "from-fwd",
                                  "delocal-value", "pop-nonzero", "printf-type",
                                  "user-error", "top-empty", "array-bounds"])
def test_llvm_reports_errors_as_the_interpreter(cli, name):
    program = _relative(HERE / "errors" / f"{name}.ja")
    compiled = cli("run", "--backend", "llvm", program)
    assert compiled[0] == 1
    first_line = compiled[2].splitlines()[0]
    assert first_line == cli("run", program)[2].splitlines()[0]


def test_llvm_reports_an_overflow_where_the_interpreter_is_unbounded(cli):
    program = _relative(HERE / "programs" / "unbounded.ja")
    code, out, err = cli("run", "--backend", "llvm", program)
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"{program}:5:9: error: integer overflow: the result does " \
        "not fit in 64 bits, which compiled code holds a Janus int in (the interpreter's " \
        "are unbounded, as jana's)"


def test_check_reports_janus_errors_in_janas_words(cli):
    good = _relative(HERE / "programs" / "fib.ja")
    assert cli("check", good) == (0, f"{good}: ok\n", "")
    bad = _relative(HERE / "errors" / "alias.ja")
    code, out, err = cli("check", bad)
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"{bad}:7:19: error: Identifiers `x' and `x' are aliases"
    assert err.splitlines()[-1] == f"1 error in {bad}"


def test_a_janus_procedure_runs_from_python():
    import rlang

    module = rlang.load(HERE / "programs" / "fib.ja", backend="interp")
    assert module.fib(0, 0, 4) == (5, 8, 0)
    assert (~module.fib)(5, 8, 0) == (0, 0, 4)
    with pytest.raises(rlang.RlangError, match="Assertion failed: should be true"):
        module.fib(1, 0, 3)
