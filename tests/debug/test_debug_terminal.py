"""`rlang debug` and `rlang run … --debug` as a user drives them with commands on
standard input (not a terminal: no prompt, no colour, one value per line), compared
with the whole expected transcript."""
from __future__ import annotations

import io
import re
import textwrap

import pytest

BUG = """
function accumulate(total, xs)
    for i = 0:length(xs) - 1
        total += xs[i]
    end
end

function mean(m, xs)
    s ← 0
    accumulate(s, xs)
    m += s // length(xs)
    s → 0
end

function main()
    xs ← [1, 2, 3, 6]
    m ← 0
    mean(m, xs)
end
"""


@pytest.fixture
def debug(cli, write_rev, tmp_path, monkeypatch):
    """Run `rlang ARGS…` on a program with `commands` as standard input."""
    def run(source: str, commands: str, *args: str):
        path = write_rev(tmp_path, "prog.rev", source)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr("sys.stdin", io.StringIO(textwrap.dedent(commands)))
        return cli(*[path.name if a == "FILE" else a for a in args])
    return run


def test_stepping_forward_and_backward_prints_each_stop(debug):
    code, out, err = debug(BUG, """\
        step
        step
        p xs
        p xs[3] * 2
        back
        locals
        next
        step
        step
        where
        locals
        back
        back
        locals
        reverse-next
        where
        q
        """, "debug", "FILE")
    assert (code, err) == (0, "")
    assert out == textwrap.dedent("""\
        prog.rev:15: xs ← [1, 2, 3, 6]
        prog.rev:16: m ← 0
        prog.rev:17: mean(m, xs)
        xs = [1, 2, 3, 6]
        xs[3] * 2 = 12
        prog.rev:16: m ← 0
        xs = [1, 2, 3, 6]
        prog.rev:17: mean(m, xs)
        prog.rev:8: s ← 0
        prog.rev:9: accumulate(s, xs)
        #0 mean (forward) at prog.rev:9
        #1 main (forward) at prog.rev:17
        m = 0
        xs = [1, 2, 3, 6]
        s = 0
        prog.rev:8: s ← 0
        prog.rev:17: mean(m, xs)
        xs = [1, 2, 3, 6]
        m = 0
        prog.rev:16: m ← 0
        #0 main (forward) at prog.rev:16
        """)


def test_breakpoints_watches_finish_and_reverse_continue(debug):
    code, out, err = debug(BUG, """\
        break 3 if i == 2
        break accumulate
        c
        where
        c
        p total
        delete 2
        watch total
        c
        rc
        rc
        delete
        finish
        locals
        rc
        c
        """, "debug", "FILE")
    assert (code, err) == (0, "")
    assert out == textwrap.dedent("""\
        prog.rev:15: xs ← [1, 2, 3, 6]
        Breakpoint 1 at prog.rev:3 if i == 2
        Breakpoint 2 at function accumulate
        Breakpoint 2
        prog.rev:2: for i = 0:length(xs) - 1
        #0 accumulate (forward) at prog.rev:2
        #1 mean (forward) at prog.rev:9
        #2 main (forward) at prog.rev:17
        Breakpoint 1
        prog.rev:3: total += xs[i]
        total = 3
        deleted 2
        Watchpoint 3: total = 3
        Watchpoint 3: total
        old: total = 3
        new: total = 6
        prog.rev:3: total += xs[i]
        Watchpoint 3: total
        old: total = 6
        new: total = 3
        prog.rev:3: total += xs[i]
        Watchpoint 3: total
        old: total = 3
        new: total = 1
        prog.rev:3: total += xs[i]
        deleted 1, 3
        prog.rev:10: m += s // length(xs)
        m = 0
        xs = [1, 2, 3, 6]
        s = 12
        at the start of the program
        prog.rev:15: xs ← [1, 2, 3, 6]
        prog.rev:11:5: error: deallocation check failed: s = 12, expected 0
           11 |     s → 0
              |     ^^^^^
          in function mean, called at prog.rev:17:5 (running forward)
              with m = 3, xs = [1, 2, 3, 6], s = 12
          in function main (running forward)
              with xs = [1, 2, 3, 6], m = 3
        prog.rev:11: s → 0
        """)


def test_post_mortem_stops_at_the_failure_and_steps_back_to_the_bug(debug):
    code, out, err = debug(BUG, """\
        where
        p s
        back
        back
        where
        p total
        rc
        locals
        """, "run", "FILE", "--debug")
    assert code == 1 and err == ""
    assert out == textwrap.dedent("""\
        prog.rev:11:5: error: deallocation check failed: s = 12, expected 0
           11 |     s → 0
              |     ^^^^^
          in function mean, called at prog.rev:17:5 (running forward)
              with m = 3, xs = [1, 2, 3, 6], s = 12
          in function main (running forward)
              with xs = [1, 2, 3, 6], m = 0
        prog.rev:11: s → 0
        #0 mean (forward) at prog.rev:11
        #1 main (forward) at prog.rev:17
        s = 12
        prog.rev:10: m += s // length(xs)
        prog.rev:3: total += xs[i]
        #0 accumulate (forward) at prog.rev:3
        #1 mean (forward) at prog.rev:9
        #2 main (forward) at prog.rev:17
        total = 6
        at the start of the program
        prog.rev:15: xs ← [1, 2, 3, 6]
        """)


def test_a_run_that_succeeds_under_debug_just_prints_its_results(debug):
    code, out, err = debug("function f(x)\n    x += 1\nend\n", "", "run", "FILE", "f", "41",
                           "--debug")
    assert (code, out, err) == (0, "x = 42\n", "")


def test_debugging_a_function_and_its_inverse_on_arguments(debug):
    source = "function f(a, b)\n    a += b * 2\n    b += 1\nend\n"
    commands = "c\nlocals\nrc\nlocals\n"
    code, out, _ = debug(source, commands, "debug", "FILE", "f", "1", "2")
    assert code == 0
    assert out.splitlines()[1:] == ["finished: `f` ran to its end", "prog.rev:4: end",
                                    "a = 5", "b = 3", "at the start of the program",
                                    "prog.rev:2: a += b * 2", "a = 1", "b = 2"]
    code, out, _ = debug(source, commands, "debug", "FILE", "f", "1", "2", "--inverse")
    assert out.splitlines()[:5] == ["prog.rev:3: b += 1", "finished: `f` ran to its end",
                                    "prog.rev:4: end", "a = -1", "b = 1"]


def test_bad_commands_are_reported_and_the_session_goes_on(debug):
    code, out, err = debug(BUG, """\
        frobnicate
        break 99
        break nowhere
        p undefined_name
        p 1 +
        delete 7
        watch 1 + 2
        print
        s
        """, "debug", "FILE")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[1] == "error: unknown command `frobnicate` (type `help` for the commands)"
    assert lines[2] == "error: no statement on line 99 of prog.rev"
    assert lines[3] == "error: no function `nowhere` and no line `nowhere` to break at"
    assert lines[4] == "<print>:1:1: error: `undefined_name` is not defined here"
    assert "error: no breakpoint or watch number 7" in lines
    assert "error: `1 + 2` is not a view (a variable, an element or a field)" in lines
    assert "error: print needs an expression" in lines
    assert lines[-1] == "prog.rev:16: m ← 0"
    assert lines[0] == "prog.rev:15: xs ← [1, 2, 3, 6]"


def test_on_a_terminal_the_prompt_repeats_motions_and_shows_highlighted_source(write_rev,
                                                                              tmp_path):
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rlang.debug.session import launch
    from rlang.debug.terminal import prompted_lines, run_commands

    path = write_rev(tmp_path, "prog.rev", BUG)
    session = launch(str(path))
    shown = []
    with create_pipe_input() as pipe:
        pipe.send_text("step\r\r\rp m\rback\r\rquit\r")
        code = run_commands(session, prompted_lines(pipe, DummyOutput()), shown.append,
                            terminal=True)
    assert code == 0
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in shown]
    stops = [line for line in plain if line.startswith(str(path))]
    assert [s.rsplit(":", 1)[0].rsplit(":", 1)[-1] for s in stops] == \
        ["15", "16", "17", "8", "17", "16"]
    assert "m = 0" in plain
    # each stop is preceded by the source around it, the current line marked
    first = plain.index(stops[1])
    assert plain[first - 5:first] == ["    14 function main()", "    15     xs ← [1, 2, 3, 6]",
                                      "→   16     m ← 0", "    17     mean(m, xs)",
                                      "    18 end"]
    assert any("\x1b[" in line for line in shown)      # highlighted
