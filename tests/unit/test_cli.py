"""The command line (rlang/cli.py; LANGUAGE.md §1, §6, §8, §9).

The transcripts of the specification and a few failures run in a real subprocess
(`run_cli`); the rest call `rlang.cli.main` in-process (`cli`), which is what the
console script runs before it exits (`rlang.cli.entry`).  Exit status: 0 success, 1 an error in the program or its
arguments, 2 a bad command line.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlang.frontend.parser import parse
from rlang.frontend.printer import format_program

REPO = Path(__file__).resolve().parents[2]
MULTIPLIER = "examples/multiplier.rev"


@pytest.fixture(autouse=True)
def in_the_repository(monkeypatch):
    """Paths such as examples/multiplier.rev are relative to the repository root."""
    monkeypatch.chdir(REPO)


def no_traceback(err: str) -> bool:
    return "Traceback" not in err and "internal error" not in err


# ------------------------------------------------------ the spec's transcripts

def test_spec_transcript_forward(run_cli):
    code, out, err = run_cli("run", MULTIPLIER, "multiplier", "2", "3", "5")
    assert (code, out, err) == (0, "y! = 17\na = 3\nb = 5\n", "")


def test_spec_transcript_inverse(run_cli):
    code, out, err = run_cli("run", MULTIPLIER, "multiplier", "17", "3", "5", "--inverse")
    assert (code, out, err) == (0, "y! = 2\na = 3\nb = 5\n", "")


def test_run_without_a_function_runs_main_and_prints_its_store(cli):
    assert cli("run", MULTIPLIER) == (0, "y = 17\na = 3\nb = 5\nz = 85\n", "")


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_run_of_main_named_prints_its_store_too(cli, backend):
    # `rlang run FILE main` printed nothing: main has no parameters to show
    assert cli("run", MULTIPLIER, "main", "--backend", backend) == \
        (0, "y = 17\na = 3\nb = 5\nz = 85\n", "")


def test_options_may_stand_anywhere(cli):
    expected = (0, "y! = 2\na = 3\nb = 5\n", "")
    assert cli("run", "--inverse", MULTIPLIER, "multiplier", "17", "3", "5") == expected
    assert cli("run", MULTIPLIER, "multiplier", "--inverse", "17", "3", "5") == expected


# ---------------------------------------------------------------- arguments

def test_negative_arguments_are_numbers_not_options(cli):
    code, out, err = cli("run", MULTIPLIER, "multiplier", "-1.5", "-3", "5")
    assert (code, err) == (0, "")
    assert out == "y! = -16.5\na = -3\nb = 5\n"


@pytest.mark.parametrize("text, printed", [
    ("1.0+2.0im", "y! = 16.0 + 2.0im"), ("1.0 - 2.0im", "y! = 16.0 - 2.0im"),
    ("0x10", "y! = 31"), ("1_000", "y! = 1015"), ("1e2", "y! = 115.0"), ("inf", "y! = inf"),
])
def test_literal_arguments(cli, text, printed):
    code, out, err = cli("run", MULTIPLIER, "multiplier", text, "3", "5")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == printed


@pytest.fixture
def arrays(tmp_path, write_rev):
    return write_rev(tmp_path, "arrays.rev", """
        function axpy!(y!: f64[:], a: f64, x: f64[:])
            for i = 0:length(x) - 1
                y![i] += a * x[i]
            end
        end
        function flip(b!)
            FLIP(b!)
        end
        function grid(m!: i64[:,:], z!: complex)
            m![0, 1] += 5
            z! += 1.0im
        end
        function leak(x!)
            n ← 1.0
            x! += n
            n → 0.0
        end
        function main()
            s ← stack(i64)
            x ← 4
            PUSH(s, x)
            c ← 1.5 - 2.0im
            @safe print("hello from main")
            w ← [[1.0, 2.0], [3.0, 4.0]]
            t ← true
        end
    """)


def test_array_arguments(cli, arrays):
    code, out, err = cli("run", arrays, "axpy!", "[1.0, 2.0]", "2", "[10.0, 20.0]")
    assert (code, err) == (0, "")
    assert out == "y! = [21.0, 42.0]\na = 2.0\nx = [10.0, 20.0]\n"
    code, out, err = cli("run", arrays, "axpy!", "[21.0, 42.0]", "2", "[10.0, 20.0]",
                         "--inverse")
    assert out == "y! = [1.0, 2.0]\na = 2.0\nx = [10.0, 20.0]\n"


def test_bool_and_nested_array_arguments(cli, arrays):
    assert cli("run", arrays, "flip", "true") == (0, "b! = false\n", "")
    code, out, err = cli("run", arrays, "grid", "[[1, 2], [3, 4]]", "1.0+2.0im")
    assert (code, err) == (0, "")
    assert out == "m! = [[1, 7], [3, 4]]\nz! = 1.0 + 3.0im\n"


@pytest.mark.parametrize("args, words", [
    (["x", "3", "5"], ["argument 1", "not a literal"]),
    (["2", "3", "sin(1.0)"], ["argument 3", "not a literal"]),
    (["2", "3", "1 +"], ["argument 3", "not a rev literal"]),
    (["2", "(3", "5"], ["argument 2"]),
    (["2", "3"], ["takes 3 argument", "got 2"]),
    (["2", "3", "5", "7"], ["takes 3 argument", "got 4"]),
])
def test_bad_arguments_exit_1_with_a_clear_message(cli, args, words):
    code, out, err = cli("run", MULTIPLIER, "multiplier", *args)
    assert code == 1 and out == ""
    assert err.startswith("error: ")
    for word in words:
        assert word in err
    assert no_traceback(err)


@pytest.mark.parametrize("text", ["99999999999999999999", "9223372036854775808"])
def test_an_integer_argument_outside_i64_exits_1(cli, text):
    code, out, err = cli("run", MULTIPLIER, "multiplier", text, "1", "1")
    assert code == 1 and out == "" and no_traceback(err)
    assert "argument 1" in err and "i64" in err


def test_unknown_function_exits_1_and_lists_the_functions(cli):
    code, out, err = cli("run", MULTIPLIER, "nope", "1")
    assert code == 1 and out == ""
    assert "no function `nope`" in err and "multiplier" in err
    assert no_traceback(err)


def test_an_argument_of_the_wrong_type_exits_1(cli, arrays):
    code, out, err = cli("run", arrays, "axpy!", "1.0", "2", "[1.0]")
    assert code == 1 and out == ""
    assert "f64[:]" in err and no_traceback(err)


def test_bad_arguments_in_a_real_process_show_no_traceback(run_cli):
    code, out, err = run_cli("run", MULTIPLIER, "multiplier", "x", "[1,", "5")
    assert code == 1 and out == ""
    assert "not a" in err and no_traceback(err)


# --------------------------------------------------------------------- --json

def test_json_prints_one_object_on_the_last_line(cli, arrays):
    code, out, err = cli("run", arrays, "--json")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:-1] == ["hello from main"]
    data = json.loads(lines[-1])
    assert list(data) == ["s", "x", "c", "w", "t"]
    assert data == {"s": [4], "x": 0, "c": [1.5, -2.0], "w": [[1.0, 2.0], [3.0, 4.0]],
                    "t": True}


def test_json_of_a_function_run(cli, arrays):
    code, out, err = cli("run", arrays, "grid", "[[1, 2], [3, 4]]", "1.0+2.0im", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out.splitlines()[-1]) == {"m!": [[1, 7], [3, 4]], "z!": [1.0, 3.0]}
    code, out, err = cli("run", MULTIPLIER, "multiplier", "2.0", "3.5", "5", "--json")
    data = json.loads(out.splitlines()[-1])
    assert data == {"y!": 19.5, "a": 3.5, "b": 5}
    assert isinstance(data["b"], int) and isinstance(data["y!"], float)


@pytest.mark.parametrize("text, shown", [("inf", "inf"), ("-inf", "-inf"), ("nan", "nan")])
def test_json_output_is_strict_json_even_for_infinities(cli, text, shown):
    """JSON has no Infinity or NaN: non-finite floats are given as the strings of their
    rev literals (see values.to_json)."""
    code, out, err = cli("run", MULTIPLIER, "multiplier", text, "3.0", "5.0", "--json")
    assert (code, err) == (0, "")

    def refuse(word):
        raise ValueError(f"not JSON: {word}")

    data = json.loads(out.splitlines()[-1], parse_constant=refuse)
    assert data == {"y!": shown, "a": 3.0, "b": 5.0}


ULOGS = """
function main()
    x ← ulog(1e-300)
    x *= ulog(1e-300)
    y ← ulog(1e300)
    y *= ulog(1e300)
    a ← [ulog(1e-300), ulog(2.0), ulog(0.0)]
    a[0] *= ulog(1e-300)
end

function twice(x: ulog, a: ulog[:])
    x *= ulog(2.0)
    a[0] *= ulog(2.0)
end
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_ulog_beyond_f64_prints_so_that_it_reads_back(cli, write_rev, tmp_path, backend):
    """Note [Printing ulogs f64 cannot hold] (rlang/values.py): not `0.0` and `inf`."""
    path = write_rev(tmp_path, "ulogs.rev", ULOGS)
    tiny = "ulog(log = -1381.5510557964274)"
    code, out, err = cli("run", path, "--backend", backend)
    assert (code, err) == (0, "")
    assert out == (f"x = {tiny}\ny = ulog(log = 1381.5510557964274)\n"
                   f"a = [{tiny}, 2.0, 0.0]\n")
    code, out, err = cli("run", path, "--backend", backend, "--json")
    assert json.loads(out) == {"x": tiny, "y": "ulog(log = 1381.5510557964274)",
                               "a": [tiny, 2.0, 0.0]}
    code, out, err = cli("run", path, "twice", tiny, f"[{tiny}, 2.0]", "--backend", backend)
    assert (code, err) == (0, "")
    assert out == ("x = ulog(log = -1380.8579086158675)\n"
                   "a = [ulog(log = -1380.8579086158675), 2.0]\n")


@pytest.mark.parametrize("text, words", [
    ("ulog(log = nan)", "a real number, not nan"),
    ("ulog(log = 1.0+2.0im)", "a real number"),
    ("-ulog(log = 1.0)", "not a literal"),
    ("ulog(log = [1.0])", "not a literal"),
    ("ulog(log = x)", "not a literal"),
])
def test_a_bad_ulog_by_its_logarithm_is_a_clear_error(cli, write_rev, tmp_path, text, words):
    code, out, err = cli("run", write_rev(tmp_path, "ulogs.rev", ULOGS), "twice", text, "[1.0]")
    assert code == 1 and out == "" and words in err and "argument 1" in err
    assert no_traceback(err)


# --------------------------------------------------------------- invcheck

def test_no_invcheck_lets_a_leaky_function_run(cli, arrays):
    code, out, err = cli("run", arrays, "leak", "1.0")
    assert code == 1 and out == ""
    assert "deallocation check failed" in err
    assert cli("run", arrays, "leak", "1.0", "--no-invcheck") == (0, "x! = 2.0\n", "")


# ----------------------------------------------------------------- errors

def test_a_runtime_error_is_rendered_with_its_location_and_call_chain(cli, arrays):
    code, out, err = cli("run", arrays, "leak", "1.0", "--inverse")
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"{arrays}:14:5: error: deallocation check failed: n = 0.0, expected 1.0"
    assert lines[1] == "   14 |     n ← 1.0"
    assert lines[2] == "      |     ^^^^^^^"
    assert "  in function leak (running backward)" in lines


def test_a_missing_file_exits_1_with_a_message(cli, tmp_path):
    missing = tmp_path / "nothere.rev"
    for command in (["run", missing], ["check", missing], ["invert", missing]):
        code, out, err = cli(*command)
        assert code == 1 and out == ""
        assert "file not found" in err and str(missing) in err


def test_a_missing_file_in_a_real_process(run_cli, tmp_path):
    code, out, err = run_cli("run", tmp_path / "nothere.rev")
    assert code == 1 and out == "" and "file not found" in err and no_traceback(err)


def test_running_a_program_without_main_needs_a_function(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "nomain.rev", "function f(x!)\n    INC(x!)\nend\n")
    code, out, err = cli("run", path)
    assert code == 1 and "main" in err and no_traceback(err)
    code, out, err = cli("run", MULTIPLIER, "--inverse")
    assert code == 1 and "--inverse" in err


def test_the_cuda_backend_runs_host_code_without_a_gpu(cli):
    """A program without `@parallel for` has no kernel: its host code runs anywhere."""
    code, out, err = cli("run", MULTIPLIER, "multiplier", "2", "3", "5", "--backend", "cuda")
    assert code == 0 and out.startswith("y! = 17") and no_traceback(err)


def test_the_llvm_backend_runs_like_the_interpreter(cli):
    for args in ([], ["multiplier", "2.0", "3.0", "5.0"],
                 ["multiplier", "17.0", "3.0", "5.0", "--inverse"]):
        code, out, err = cli("run", MULTIPLIER, *args, "--backend", "llvm")
        assert code == 0, err
        assert (code, out) == cli("run", MULTIPLIER, *args)[:2]


@pytest.mark.parametrize("argv", [
    ["frobnicate", MULTIPLIER], ["run", MULTIPLIER, "--frob"], ["run"], ["check"],
    ["run", MULTIPLIER, "--backend", "gpu"], ["--nope"],
])
def test_bad_command_lines_exit_2(cli, argv):
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert "usage:" in err and no_traceback(err)


def test_no_arguments_start_the_repl(repo):
    """`rlang` alone is the REPL (LANGUAGE.md §12); tests/repl/ tests it in depth."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, "-m", "rlang.cli"], input="x ← 1.5\nx * 2\n",
                          capture_output=True, text=True, timeout=120, cwd=repo, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "3.0\n", "")


def test_help_lists_the_commands(cli):
    code, out, err = cli("--help")
    assert code == 0 and all(word in out for word in ("run", "check", "invert", "repl"))


def test_unknown_command_in_a_real_process_exits_2(run_cli):
    code, out, err = run_cli("frobnicate")
    assert code == 2 and "invalid choice" in err and no_traceback(err)


# ------------------------------------------------------------------- check

def test_check_a_good_program(cli):
    assert cli("check", MULTIPLIER) == (0, f"{MULTIPLIER}: ok\n", "")


def test_check_reports_every_static_error_and_exits_1(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "bad.rev", """
        function f(x!)
            x! += x! * 2
            y → 1
        end
    """)
    code, out, err = cli("check", path)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"{path}:2:11: error: `x!` is read on the right-hand side of its own update"
    assert lines[1] == "    2 |     x! += x! * 2"
    assert lines[2] == "      |           ^^"
    assert any(line.startswith(f"{path}:3:5: error: ") for line in lines)
    assert lines[-1] == f"2 errors in {path}"


def test_check_reports_a_parse_error(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "syntax.rev", "function f(x!)\n    x! += )\nend\n")
    code, out, err = cli("check", path)
    assert code == 1 and err.startswith(f"{path}:2:") and "error:" in err
    assert no_traceback(err)


def test_run_refuses_a_program_with_static_errors(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "bad.rev", "function main()\n    x ← 1\n    x += x\nend\n")
    code, out, err = cli("run", path)
    assert code == 1 and out == "" and f"{path}:3:" in err


# ------------------------------------------------------------------ invert

def test_invert_prints_a_program_that_parses_and_runs_the_inverses(cli, tmp_path):
    code, out, err = cli("invert", MULTIPLIER)
    assert (code, err) == (0, "")
    inverted = parse(out)
    assert [f.name for f in inverted.items] == ["multiplier", "main"]
    assert "y! -= a * b" in out
    path = tmp_path / "inverted.rev"
    path.write_text(out, encoding="utf-8")
    # main is left as it is: its calls now run the inverses
    assert cli("run", path) == (0, "y = -13\na = 3\nb = 5\nz = 115\n", "")


def test_inverting_twice_gives_back_the_program(cli, tmp_path, repo):
    source = (repo / "examples" / "fibonacci.rev").read_text(encoding="utf-8")
    code, once, err = cli("invert", repo / "examples" / "fibonacci.rev")
    assert code == 0
    path = tmp_path / "once.rev"
    path.write_text(once, encoding="utf-8")
    code, twice, err = cli("invert", path)
    assert code == 0
    assert format_program(parse(twice)) == format_program(parse(source))
    assert once != twice


@pytest.mark.parametrize("example", sorted(p.name for p in (REPO / "examples").glob("*.rev")))
def test_every_example_inverted_twice_is_itself(cli, tmp_path, example):
    original = REPO / "examples" / example
    code, once, err = cli("invert", original)
    assert (code, err) == (0, "")
    # written into a copy of examples/ so that relative includes still resolve
    copy = tmp_path / "examples"
    shutil.copytree(REPO / "examples", copy)
    once_path = copy / example
    once_path.write_text(once, encoding="utf-8")
    code, twice, err = cli("invert", once_path)
    assert (code, err) == (0, "")
    assert format_program(parse(twice)) == format_program(parse(original.read_text("utf-8")))


def test_invert_one_function(cli):
    code, out, err = cli("invert", MULTIPLIER, "multiplier")
    assert (code, err) == (0, "")
    assert out == "function multiplier(y!, a, b)\n    y! -= a * b\nend\n"


def test_inverting_a_program_with_includes_inverts_main_s_calls_of_them(cli, tmp_path,
                                                                       write_rev):
    # main's call of an included function ran it forward in the inverted program,
    # and `invert FILE FUNCTION` did not find included functions
    write_rev(tmp_path, "lib.rev", "function inc1(x)\n    x += 1\nend\n")
    prog = write_rev(tmp_path, "prog.rev", """
        include "lib.rev"

        function twice(x)
            inc1(x)
            inc1(x)
        end

        function main()
            x ← 10
            inc1(x)
            twice(x)
        end
        """)
    assert cli("run", str(prog)) == (0, "x = 13\n", "")
    code, out, err = cli("invert", str(prog))
    assert (code, err) == (0, "")
    inverted = write_rev(tmp_path, "inverted.rev", out)
    assert cli("run", str(inverted)) == (0, "x = 7\n", "")
    assert cli("invert", str(inverted))[1] == prog.read_text()
    assert cli("invert", str(prog), "inc1") == (0, "function inc1(x)\n    x -= 1\nend\n", "")


def test_invert_an_unknown_function_exits_1(cli):
    code, out, err = cli("invert", MULTIPLIER, "nope")
    assert code == 1 and "nope" in err and no_traceback(err)


def test_invert_refuses_a_program_with_static_errors(cli, tmp_path, write_rev):
    path = write_rev(tmp_path, "bad.rev", "function f(x!)\n    x! += x!\nend\n")
    code, out, err = cli("invert", path)
    assert code == 1 and out == "" and "right-hand side" in err


def test_printed_floats_are_exact(cli):
    code, out, err = cli("run", MULTIPLIER, "multiplier", "0.1", "0.2", "1")
    assert out.splitlines()[0] == "y! = 0.30000000000000004"
    assert float(out.splitlines()[0].split(" = ")[1]) == 0.1 + 0.2


# ------------------------------------------------------ leaving the process

LOUD = """
function main()
    s ← 0.0
    for k = 1:3000
        @safe print("line", k)
        s += 1.0
    end
end
"""


@pytest.mark.parametrize("module", ["rlang", "rlang.cli"])
def test_the_command_line_leaves_with_its_output_and_status(module, tmp_path):
    """Note [Leaving without teardown] (rlang/cli.py): the process leaves without
    Python's shutdown, after its output is flushed, with the command's status."""
    import os
    import subprocess
    import sys

    program = tmp_path / "loud.rev"
    program.write_text(LOUD)
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def run(*args):
        return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                              text=True, env=env, timeout=120)

    done = run("run", str(program))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3000] == [f"line {k}" for k in range(1, 3001)] and lines[-1] == "s = 3000.0"
    out = tmp_path / "loud.o"
    done = run("compile", str(program), "--emit", "obj", "-o", str(out))
    assert done.returncode == 0 and out.read_bytes()[:4] == b"\x7fELF"
    done = run("run", str(tmp_path / "missing.rev"))
    assert done.returncode == 1 and "file not found" in done.stderr
    done = run("run", "--bogus")
    assert done.returncode == 2


def test_a_missing_file_is_named_where_the_error_begins(run_cli, tmp_path):
    # #23: the error had no span; now it names the file, as every error names its place
    code, out, err = run_cli("run", "nonexistent.rev")
    assert (code, out) == (1, "")
    assert err.startswith("nonexistent.rev: error: file not found: nonexistent.rev\n"
                          "  note: a relative path is taken from the current directory, ")
