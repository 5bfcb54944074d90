"""Sandbox mode for programs one did not write (docs/sandbox.md; issue #23, item 10).

Includes confined to the program's directory tree and std/; `@safe` writes only the
output stream; limits on run time, memory and call depth end the run with a
LimitExceeded (an RlangRuntimeError naming the limit, with the span of the running
statement); compiled backends are refused.  Without a sandbox nothing changes.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import rlang
from rlang.errors import LimitExceeded, ParseError, RlangRuntimeError

SECRET = "TOP-SECRET-CONTENT"

SPIN = """
function spin(i)
    from i == 0 loop i += 1 until false
end
"""


# ------------------------------------------------------------------ includes
@pytest.fixture
def tree(tmp_path, write_rev):
    """tmp/prog/{main.rev, sub/lib.rev} and tmp/outside.rev (holding SECRET)."""
    write_rev(tmp_path, "outside.rev", f"function leak(x)\n    x += 1\nend\n# {SECRET}\n")
    write_rev(tmp_path, "prog/sub/lib.rev", "function twice(y!, x)\n    y! += 2 * x\nend\n")
    return tmp_path


def _program(tree, write_rev, include: str):
    return write_rev(tree, "prog/main.rev",
                     f'include "{include}"\nfunction f(x)\n    x += 1\nend\n')


def _refused(path, **kwargs) -> ParseError:
    with pytest.raises(ParseError) as caught:
        rlang.load(path, sandbox=True, **kwargs)
    error = caught.value
    assert "refused in sandbox mode" in error.message
    assert error.span is not None and error.span.line == 1 and error.span.file == str(path)
    assert SECRET not in error.render() and "root:" not in error.render()
    return error


def test_an_include_inside_the_tree_is_allowed(tree, write_rev):
    m = rlang.load(_program(tree, write_rev, "sub/lib.rev"), sandbox=True)
    assert m.twice(0, 3) == (6, 3)


@pytest.mark.parametrize("include", ["../outside.rev", "sub/../../outside.rev",
                                     "std/../../../../../../etc/passwd"])
def test_a_relative_include_out_of_the_tree_is_refused(tree, write_rev, include):
    _refused(_program(tree, write_rev, include))


def test_an_absolute_include_outside_is_refused_without_quoting_it(tree, write_rev):
    _refused(_program(tree, write_rev, str(tree / "outside.rev")))
    if os.path.exists("/etc/passwd"):
        _refused(_program(tree, write_rev, "/etc/passwd"))


def test_a_missing_file_outside_is_refused_like_an_existing_one(tree, write_rev):
    there = _refused(_program(tree, write_rev, "../outside.rev")).message
    missing = _refused(_program(tree, write_rev, "../nothing-here.rev")).message
    assert there.replace("outside", "X") == missing.replace("nothing-here", "X")


def test_a_symlink_out_of_the_tree_is_refused(tree, write_rev):
    (tree / "prog" / "link.rev").symlink_to(tree / "outside.rev")
    _refused(_program(tree, write_rev, "link.rev"))


def test_a_symlink_within_the_tree_is_allowed(tree, write_rev):
    (tree / "prog" / "link.rev").symlink_to(tree / "prog" / "sub" / "lib.rev")
    assert rlang.load(_program(tree, write_rev, "link.rev"), sandbox=True).twice(0, 2) == (4, 2)


def test_an_included_file_cannot_reach_out_either(tree, write_rev):
    write_rev(tree, "prog/sub/lib.rev", 'include "../../outside.rev"\n')
    with pytest.raises(ParseError, match="refused in sandbox mode") as caught:
        rlang.load(_program(tree, write_rev, "sub/lib.rev"), sandbox=True)
    assert caught.value.span.file.endswith("lib.rev") and SECRET not in caught.value.render()


def test_std_is_allowed_from_a_file_and_from_text(tree, write_rev):
    assert "i_exp" in rlang.load(_program(tree, write_rev, "std/math.rev"),
                                 sandbox=True).functions
    assert "i_exp" in rlang.loads('include "std/math.rev"\n', sandbox=True).functions


def test_text_without_a_file_may_include_only_std(tree, monkeypatch):
    monkeypatch.chdir(tree / "prog" / "sub")
    with pytest.raises(ParseError, match="only files in the standard library") as caught:
        rlang.loads('include "lib.rev"\n', sandbox=True)
    assert caught.value.span.line == 1
    assert rlang.loads('include "lib.rev"\n').twice(0, 1) == (2, 1)   # unchanged without


def test_text_with_a_file_name_may_include_from_its_directory(tree):
    source = 'include "sub/lib.rev"\ninclude "../outside.rev"\n'
    with pytest.raises(ParseError) as caught:
        rlang.loads(source, file=str(tree / "prog" / "x.rev"), sandbox=True)
    assert caught.value.span.line == 2          # the first include was allowed


def test_without_a_sandbox_includes_reach_out_and_errors_say_where(tree, write_rev):
    assert rlang.load(_program(tree, write_rev, "../outside.rev")).leak(1) == (2,)
    write_rev(tree, "outside.rev", "not rev at all\n")
    with pytest.raises(ParseError) as caught:
        rlang.load(_program(tree, write_rev, "../outside.rev"))
    assert caught.value.span.file.endswith("outside.rev")
    assert any("../outside.rev is included at" in note and "main.rev:1:1" in note
               for note in caught.value.notes)


# ---------------------------------------------------------------- run time
def test_the_time_limit_ends_an_endless_janus_loop():
    m = rlang.loads(SPIN, sandbox=rlang.Sandbox(time=0.5))
    start = time.monotonic()
    with pytest.raises(LimitExceeded) as caught:
        m.spin(0)
    elapsed = time.monotonic() - start
    assert 0.5 <= elapsed < 2.5
    error = caught.value
    assert isinstance(error, RlangRuntimeError) and error.limit == "time"
    assert "time limit of 0.5 s" in error.message and error.span.line == 3
    assert m.spin.params == ["i"]                 # the module is still usable:
    with pytest.raises(LimitExceeded):          # each run gets the whole limit again
        m.spin(0)


def test_the_time_limit_ends_a_long_for_loop_and_a_call_tree():
    m = rlang.loads("""
        function count(s)
            for i = 0:9000000000000000000
                s += 1
            end
        end
        function tree(n, s)
            if n > 0
                tree(n - 1, s)
                tree(n - 1, s)
            else
                s += 1
            end
        end
    """.replace("\n        ", "\n"), sandbox=rlang.Sandbox(time=0.3))
    for run in (lambda: m.count(0), lambda: m.tree(60, 0)):
        start = time.monotonic()
        with pytest.raises(LimitExceeded, match="time limit"):
            run()
        assert time.monotonic() - start < 2.0


# ------------------------------------------------------------------ memory
ARRAYS = """
function two(n, s)
    a ← zeros(f64, n)
    b ← zeros(f64, n)
    s += length(a) + length(b)
    b → zeros(f64, n)
    a → zeros(f64, n)
end
function again(n, k, s)
    for i = 1:k
        a ← zeros(f64, n)
        s += length(a)
        a → zeros(f64, n)
    end
end
function pile(s)
    x ← 0
    st ← stack(i64)
    from s == 0 loop
        s += 1
        PUSH(st, x)
    until false
    st → stack(i64)
    x → 0
end
function show(n)
    a ← zeros(f64, n)
    @safe print(a)
    a → zeros(f64, n)
end
"""


def _line_of(text: str, source: str) -> int:
    return source.splitlines().index(next(l for l in source.splitlines() if text in l)) + 1


def test_a_huge_array_is_a_clean_error_before_it_is_allocated():
    m = rlang.loads(ARRAYS, sandbox=True)
    with pytest.raises(LimitExceeded) as caught:
        m.two(10 ** 12, 0)
    error = caught.value
    assert error.limit == "memory" and error.span.line == 3
    assert "memory limit of 1 GiB" in error.message and "7.28 TiB" in error.message


def test_the_memory_limit_counts_live_arrays_and_gives_back_freed_ones():
    m = rlang.loads(ARRAYS, sandbox=rlang.Sandbox(memory=1 << 20))
    assert m.two(60_000, 0) == (60_000, 120_000)           # 2 × 480 kB fit in 1 MiB
    with pytest.raises(LimitExceeded, match="needs 547 KiB") as caught:
        m.two(70_000, 0)                                    # 2 × 560 kB do not
    assert caught.value.span.line == 4                      # the second allocation
    assert m.again(100_000, 50, 0) == (100_000, 50, 5_000_000)   # freed each time


def test_the_memory_limit_counts_stack_elements():
    m = rlang.loads(ARRAYS, sandbox=rlang.Sandbox(memory=1 << 16, time=30))
    with pytest.raises(LimitExceeded, match="memory limit of 64 KiB") as caught:
        m.pile(0)
    assert caught.value.span.line == _line_of("PUSH(st, x)", ARRAYS)


def test_printing_an_array_counts_its_text(capsys):
    m = rlang.loads(ARRAYS, sandbox=rlang.Sandbox(memory=1 << 20))
    m.show(3)
    assert capsys.readouterr().out == "[0.0, 0.0, 0.0]\n"       # @safe writes stdout
    with pytest.raises(LimitExceeded, match="the text of the output"):
        m.show(30_000)
    assert capsys.readouterr().out == ""


def test_array_literals_and_array_arguments_count():
    m = rlang.loads("""
function deeper(a, d)
    if d > 0
        deeper([a, a], d - 1)
    end
end
""", sandbox=rlang.Sandbox(memory=1 << 22))
    with pytest.raises(LimitExceeded) as caught:
        m.deeper(np.zeros(1000), 30)
    assert caught.value.limit == "memory" and caught.value.span.line == 4


# ------------------------------------------------------------------- depth
RECURSE = """
function down(n)
    n += 1
    down(n)
end
"""


def test_the_depth_limit_ends_unbounded_recursion():
    with pytest.raises(LimitExceeded) as caught:
        rlang.loads(RECURSE, sandbox=True).down(0)
    assert caught.value.limit == "depth" and caught.value.span.line == 4
    assert "depth limit of 1000" in caught.value.message
    with pytest.raises(LimitExceeded, match="depth limit of 25"):
        rlang.loads(RECURSE, sandbox=rlang.Sandbox(depth=25)).down(0)


# --------------------------------------------------------------------- API
@pytest.mark.parametrize("bad", [dict(time=0), dict(time=float("nan")), dict(memory=-1),
                                 dict(memory=1.5), dict(depth=0), dict(depth=20_000),
                                 dict(time="10")])
def test_bad_limits_are_refused(bad):
    with pytest.raises(rlang.RlangError, match="Sandbox"):
        rlang.Sandbox(**bad)


def test_limits_can_be_lifted():
    sandbox = rlang.Sandbox(time=None, memory=None, depth=None)
    assert rlang.loads(ARRAYS, sandbox=sandbox).two(10, 0) == (10, 20)
    assert sandbox.max_depth == 10_000


def test_a_sandbox_runs_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("RLANG_BACKEND", "llvm")
    for backend in (None, "auto", "interp"):
        m = rlang.loads(SPIN, backend=backend, sandbox=True)
        assert m.backend == "interp" and m.compiled is None
    for backend in ("llvm", "cuda"):
        with pytest.raises(rlang.RlangError, match="cannot run in a sandbox"):
            rlang.loads(SPIN, backend=backend, sandbox=True)
    with pytest.raises(rlang.RlangError, match="sandbox= takes"):
        rlang.loads(SPIN, sandbox="yes")


def test_gradients_run_in_the_sandbox():
    m = rlang.loads("function sq(y!, x)\n    y! += x * x\nend\n" + SPIN, sandbox=True)
    assert rlang.gradient(m.sq, [0.0, 3.0], loss="y!") == (1.0, 6.0)
    assert rlang.gradient(m.sq, [0.0, 3.0], loss="y!") == \
        rlang.gradient(rlang.loads("function sq(y!, x)\n    y! += x * x\nend\n").sq,
                       [0.0, 3.0], loss="y!")


def test_without_a_sandbox_nothing_is_limited():
    m = rlang.loads(ARRAYS + RECURSE)
    assert m.sandbox is None and m.interpreter.budget is None
    assert m.two(200_000, 0) == (200_000, 400_000)
    with pytest.raises(RlangRuntimeError, match="call depth exceeded the limit of 10000") \
            as caught:
        m.down(0)
    assert type(caught.value) is RlangRuntimeError          # as before: no LimitExceeded


# --------------------------------------------------------------------- CLI
def test_the_cli_sandbox_and_its_limits(cli, tmp_path, write_rev):
    spin = write_rev(tmp_path, "spin.rev", "function main()\n    n ← 0\n"
                     "    from n == 0 loop n += 1 until false\n    n → 0\nend\n")
    code, out, err = cli("run", spin, "--sandbox", "--time-limit", "0.3")
    assert code == 1 and "spin.rev:3:5: error: the run took longer than the sandbox's " \
        "time limit of 0.3 s" in err
    arrays = write_rev(tmp_path, "arrays.rev", ARRAYS)
    code, out, err = cli("run", arrays, "two", "200000", "0", "--sandbox", "--memory-limit=1M")
    assert code == 1 and "memory limit of 1 MiB" in err
    assert cli("run", arrays, "two", "200000", "0", "--sandbox")[0] == 0
    deep = write_rev(tmp_path, "deep.rev", RECURSE)
    code, out, err = cli("grad", deep, "down", "0.0", "--loss", "n", "--sandbox",
                         "--depth-limit", "30")
    assert code == 1 and "depth limit of 30" in err


def test_the_cli_refuses_includes_in_every_command(cli, tree, write_rev):
    path = _program(tree, write_rev, "../outside.rev")
    for command in ("run", "check", "invert", "grad"):
        args = [command, path] + (["f", "1.0", "--loss", "x"] if command == "grad" else [])
        code, out, err = cli(*args, "--sandbox")
        assert code == 1 and "refused in sandbox mode" in err and SECRET not in err + out
    assert cli("check", path)[0] == 0                        # allowed without --sandbox


def test_the_cli_usage_errors(cli, tmp_path, write_rev):
    spin = write_rev(tmp_path, "spin.rev", SPIN)
    code, out, err = cli("run", spin, "spin", "0", "--time-limit", "1")
    assert code == 2 and "add --sandbox" in err
    for option, value in (("--time-limit", "soon"), ("--memory-limit", "12X"),
                          ("--depth-limit", "99999"), ("--time-limit", "-1")):
        assert cli("run", spin, "spin", "0", "--sandbox", option, value)[0] == 2
    code, out, err = cli("run", spin, "spin", "0", "--sandbox", "--backend", "llvm")
    assert code == 1 and "cannot run in a sandbox" in err


def test_without_a_sandbox_running_out_of_memory_is_an_rlang_error():
    from rlang.frontend import ast

    m = rlang.loads("function copy(a, s)\n    b ← a\n    s += length(b)\n    b → a\nend\n")
    assert m.copy(np.zeros(3), 0)[1] == 3

    def no_memory(stmt, env):           # as a copy NumPy cannot make
        raise MemoryError
    m.interpreter._stmt[ast.Alloc] = no_memory
    with pytest.raises(RlangRuntimeError, match="out of memory while running `copy`") as caught:
        m.copy(np.zeros(3), 0)
    assert caught.value.span.line == 1 and caught.value.frames[0].function == "copy"
