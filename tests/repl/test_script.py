"""Script mode: `rlang` / `rlang repl` with standard input not a terminal, in a real
subprocess (rlang/repl/__init__.py; docs/repl.md).  Inputs are read line by line and
continued while unfinished; results are printed without prompts; an error is
reported and the script goes on; the exit status is 1 if any input failed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """\
x ← 2.0
x += 3.5
x
function mul(y!, a, b)
    y! += a * b
end
y ← 1.0
mul(y, x,
    2.0)
y
:undo
y
"""


def test_a_script_runs_without_prompts(run_repl):
    assert run_repl(SCRIPT) == (0, "5.5\n12.0\nundone: mul(y, x, 2.0)\n1.0\n", "")


def test_rlang_repl_is_the_same(run_repl):
    assert run_repl(SCRIPT, "repl") == run_repl(SCRIPT)


def test_errors_are_reported_and_the_script_goes_on_with_status_1(run_repl):
    code, out, err = run_repl("x ← 1.0\nx *= 2.0\nx += 1.0\nx\n1 +* 2\nx\n")
    assert code == 1 and out == "2.0\n2.0\n"
    assert err.count("error:") == 2 and "<repl 2>:1:1: error:" in err and "<repl 5>:1:4:" in err
    assert "Traceback" not in err


def test_an_input_cut_off_at_the_end_is_an_error(run_repl):
    code, out, err = run_repl("x ← 1\nfunction f(a!)\n    a! += 1\n")
    assert code == 1 and "unexpected end of input" in err and "expected" in err


def test_quit_stops_reading(run_repl):
    assert run_repl("x ← 1\nx\n:quit\nx += 1\nx\n") == (0, "1\n", "")


def test_an_empty_script(run_repl):
    assert run_repl("") == (0, "", "")
    assert run_repl("\n# nothing\n\n") == (0, "", "")


def test_no_invcheck_turns_the_runtime_checks_off(run_repl):
    code, out, err = run_repl("x ← 2.0\nx → 3.0\n:vars\n", "repl", "--no-invcheck")
    assert (code, out, err) == (0, "no session variables; allocate one with `x ← 2.0`\n", "")
    code, out, err = run_repl("x ← 2.0\nx → 3.0\n")
    assert code == 1 and "deallocation check failed" in err


def test_safe_output_and_results_keep_their_order(run_repl):
    code, out, err = run_repl('x ← 1\n@safe print("x is", x)\nx\n@safe show(x)\n')
    assert (code, out, err) == (0, "x is 1\n1\nx = 1\n", "")


def _sigint_as_a_terminals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_interrupts_the_running_statement_and_the_script_goes_on():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # SIGINT as a terminal's: a test run in the background, or by pytest-xdist's
    # workers, has it ignored, and the child would inherit that
    process = subprocess.Popen([sys.executable, "-m", "rlang"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO, env=env, preexec_fn=_sigint_as_a_terminals)
    try:
        process.stdin.write('x ← 0\nbegin\n    @safe print("looping")\n'
                            "    while (x >= 0, x > 0)\n        x += 1\n    end\nend\n")
        process.stdin.flush()
        assert process.stdout.readline() == "looping\n"
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        process.stdin.write("x\n")
        process.stdin.close()
        code = process.wait(timeout=60)
        out, err = process.stdout.read(), process.stderr.read()
    finally:
        process.kill()
    assert code == 1 and out == "0\n"
    assert "interrupted; the session is as it was before the input" in err
    assert "Traceback" not in err
