"""The interactive REPL (rlang/repl/terminal.py) driven through prompt-toolkit's pipe
input and a dummy output: keys in, the session's output out."""
from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import DummyOutput

from rlang.highlight import RevLexer
from rlang.repl.session import Session
from rlang.repl.terminal import (ReplCompleter, completions, history_path, prompt_session,
                                 run_terminal)

REPO = Path(__file__).resolve().parents[2]
BANNER = "rlang 0.1.0: the rev REPL.  :help lists the commands; Ctrl-D leaves.\n"
CTRL_C, CTRL_D, UP, TAB = "\x03", "\x04", "\x1b[A", "\t"


def interact(keys: str, history=None, session=None, later: str = "",
             when=lambda text: True) -> tuple:
    """Type `keys` into a REPL, then `later` once the input line satisfies `when`
    (what the keys start, a completion, runs in the background; waiting for its
    result rather than for a fixed time keeps this right on a loaded machine);
    return (exit status, stdout, stderr, the prompt session).  Ctrl-D is typed at
    the end unless the keys quit first."""
    out, err = io.StringIO(), io.StringIO()
    session = session or Session(out=out, err=err)
    session.out, session.err = out, err
    with create_pipe_input() as pipe:
        pipe.send_text(keys + ("" if later else CTRL_D))
        prompter = prompt_session(session, input=pipe, output=DummyOutput(),
                                  history=history if history is not None else InMemoryHistory())
        if later:
            def type_later():
                deadline = time.monotonic() + 30.0
                while time.monotonic() < deadline:
                    app = getattr(prompter, "app", None)
                    if app is not None and app.is_running and \
                            when(app.current_buffer.text):
                        break
                    time.sleep(0.01)
                pipe.send_text(later + CTRL_D)

            threading.Thread(target=type_later, daemon=True).start()
        code = run_terminal(session, prompter)
    return code, out.getvalue(), err.getvalue(), prompter


@pytest.fixture(autouse=True)
def in_the_repository(monkeypatch):
    monkeypatch.chdir(REPO)


def test_statements_and_values(tmp_path):
    code, out, err, _ = interact("x ← 2.0\rx += 3.5\rx\r")
    assert (code, out, err) == (0, BANNER + "5.5\n", "")


def test_a_function_typed_line_by_line_is_indented_and_kept_whole():
    keys = "function mul(y!, a, b)\ry! += a * b\rend\ry ← 1\rmul(y, 2, 3)\ry\r"
    code, out, err, prompter = interact(keys)
    assert (code, out, err) == (0, BANNER + "7\n", "")
    assert list(prompter.history.get_strings())[0] == \
        "function mul(y!, a, b)\n    y! += a * b\nend"


def test_an_if_else_is_indented_and_dedented():
    keys = "n ← 1\rif (n > 0, ~)\rn += 1\relse\rn -= 1\rend\rn\r"
    code, out, err, prompter = interact(keys)
    assert out == BANNER + "2\n" and err == ""
    assert list(prompter.history.get_strings())[1] == \
        "if (n > 0, ~)\n    n += 1\nelse\n    n -= 1\nend"


def test_an_open_bracket_or_trailing_operator_continues():
    code, out, err, _ = interact("a ← [1.0,\r2.0]\ra[1] +\r1.0\r")
    assert (out, err) == (BANNER + "3.0\n", "")


PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"     # a terminal's bracketed paste


@pytest.mark.parametrize("pasted", ["end\n", "end\r", "end\r\n"])
def test_an_end_pasted_on_an_indented_line_closes_the_function(pasted):
    # #23: the pasted `end` stayed indented and its newline was a new line, not Enter:
    # the function never closed, and the next input was taken as more of it
    keys = "function f(y!)\ry! += 1\r" + PASTE_START + pasted + PASTE_END + "y ← 1\rf(y)\ry\r"
    code, out, err, prompter = interact(keys)
    assert (code, out, err) == (0, BANNER + "2\n", "")
    assert list(prompter.history.get_strings())[:2] == \
        ["function f(y!)\n    y! += 1\nend", "y ← 1"]


def test_a_pasted_program_runs_input_by_input_as_if_typed():
    pasted = ("function f(y!)\n    if (y! > 0, ~)\n        y! += 1\n    end\nend\n"
              "y ← 1\nf(y)\n")
    code, out, err, prompter = interact(PASTE_START + pasted + PASTE_END + "y\r")
    assert (code, out, err) == (0, BANNER + "2\n", "")
    assert list(prompter.history.get_strings())[:3] == [
        "function f(y!)\n    if (y! > 0, ~)\n        y! += 1\n    end\nend", "y ← 1", "f(y)"]


def test_a_paste_without_a_newline_is_inserted_as_it_is():
    code, out, err, _ = interact("x ← 2\r" + PASTE_START + "x +   1" + PASTE_END + "\r")
    assert (out, err) == (BANNER + "3\n", "")


def test_a_syntax_error_is_reported_at_once_and_the_session_goes_on():
    code, out, err, _ = interact("x ← 1\r1 +* 2\rx\r")
    assert out == BANNER + "1\n"
    assert "<repl 2>:1:4: error: unexpected '*'" in err


def test_ctrl_c_at_the_prompt_drops_the_input():
    code, out, err, prompter = interact("x ← 1\rfunction f(a!)\r" + CTRL_C + "x\r")
    assert (code, out, err) == (0, BANNER + "1\n", "")


def test_quit_and_ctrl_d_leave_with_status_0():
    assert interact(":quit\rx ← 1\r")[:3] == (0, BANNER, "")
    assert interact("")[:3] == (0, BANNER, "")


def test_escape_enter_starts_a_new_line_in_a_complete_input():
    code, out, err, prompter = interact("x ← 1\x1b\rx += 1\rx\r")
    assert out == BANNER + "2\n" and list(prompter.history.get_strings())[0] == "x ← 1\nx += 1"


def test_history_is_kept_across_sessions_in_a_file(tmp_path):
    path = tmp_path / "history"
    interact("x ← 40\rx += 2\r", history=FileHistory(str(path)))
    assert "x += 2" in path.read_text(encoding="utf-8")
    session = Session()
    session.execute("x ← 0")
    code, out, err, _ = interact(UP + "\rx\r", history=FileHistory(str(path)), session=session)
    assert out == BANNER + "2\n"


def test_tab_completes_a_session_variable():
    code, out, err, _ = interact("velocity ← 2.5\rvel" + TAB, later="\r",
                                 when=lambda text: text == "velocity")
    assert (out, err) == (BANNER + "2.5\n", "")


def test_input_is_highlighted_with_the_rev_lexer():
    *_, prompter = interact("")
    assert isinstance(prompter.lexer, PygmentsLexer)
    assert prompter.lexer.pygments_lexer_cls is RevLexer


# ------------------------------------------------------------------ completion

@pytest.fixture
def session():
    session = Session(out=io.StringIO(), err=io.StringIO())
    for text in ("velocity ← 1.0", "function move!(p!, v)\n    p! += v\nend", "const LIMIT = 3"):
        session.execute(text)
    return session


@pytest.mark.parametrize("before, expected", [
    ("whi", ["while"]), ("x += si", ["sign", "sin", "sinh", "size"]), ("SW", ["SWAP"]),
    ("vel", ["velocity"]), ("mo", ["move!"]), ("LI", ["LIMIT"]), ("@r", ["@routine"]),
    ("@i", ["@inbounds", "@inline", "@invcheckoff"]), ("x ← f6", ["f64"]),
    (":u", [":undo"]), (":", [":help", ":load", ":vars", ":functions", ":inverse", ":grad",
                              ":llvm", ":undo", ":quit"]),
    ("x += 1 ", []), ("function f(x)\n    x += velo", ["velocity"]), ("pi", []),
])
def test_completion_candidates(session, before, expected):
    assert completions(session, before) == expected


def test_the_completer_replaces_the_typed_word(session):
    found = list(ReplCompleter(session).get_completions(Document("y += velo"), CompleteEvent()))
    assert [(c.text, c.start_position) for c in found] == [("velocity", -4)]
    found = list(ReplCompleter(session).get_completions(Document(":inv"), CompleteEvent()))
    assert [(c.text, c.start_position) for c in found] == [(":inverse", -4)]


def test_load_completes_file_names(session):
    found = list(ReplCompleter(session).get_completions(Document(":load examples/multip"),
                                                        CompleteEvent()))
    assert [c.text for c in found] == ["lier.rev"]


# --------------------------------------------------------------------- history

def test_history_path(monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_HISTORY", str(tmp_path / "h"))
    assert history_path() == tmp_path / "h"
    monkeypatch.delenv("RLANG_HISTORY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert history_path() == tmp_path / "data" / "rlang" / "history"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert history_path() == tmp_path / "home" / ".local" / "share" / "rlang" / "history"


def test_the_default_history_file_is_created(monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_HISTORY", str(tmp_path / "deep" / "history"))
    with create_pipe_input() as pipe:
        prompter = prompt_session(Session(), input=pipe, output=DummyOutput())
    assert isinstance(prompter.history, FileHistory)
    assert (tmp_path / "deep" / "history").exists()
