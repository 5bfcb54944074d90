"""The REPL on a real (pseudo-)terminal: `python -m rlang` started on a pty, so that
it takes the interactive path, Ctrl-C is a SIGINT from the terminal while a
statement runs, and Ctrl-D ends the session."""
from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class Terminal:
    def __init__(self, tmp_path: Path):
        env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm",
               "RLANG_HISTORY": str(tmp_path / "history")}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:   # the child: the REPL, with SIGINT as a terminal's (a test
            os.chdir(REPO)  # run started in the background has it ignored)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execvpe(sys.executable, [sys.executable, "-m", "rlang"], env)
        self.seen = ""
        self.mark = 0       # what wait_for has looked at, in shown()

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def shown(self) -> str:
        """What the terminal shows so far, without its control sequences."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.seen)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Read until `text` is shown after what the last wait found."""
        end = time.time() + timeout
        while text not in self.shown()[self.mark:]:
            assert time.time() < end, f"{text!r} never appeared in {self.shown()[-300:]!r}"
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:     # the child has gone
                    break
        self.mark += self.shown()[self.mark:].find(text) + len(text)

    def exit_status(self, timeout: float = 60) -> int:
        end = time.time() + timeout
        while time.time() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = None     # reaped: nothing left to end
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError("the REPL did not exit")

    def close(self) -> None:
        """Make sure our child is gone, and close the terminal."""
        if self.pid is not None:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def terminal(tmp_path):
    terminal = Terminal(tmp_path)
    yield terminal
    terminal.close()


def test_ctrl_c_on_a_terminal_interrupts_a_loop_and_ctrl_d_leaves(terminal, tmp_path):
    terminal.wait_for("rev>")
    terminal.type("x ← 0\r")
    terminal.wait_for("rev>")
    terminal.type('begin\r@safe print("looping")\rwhile (x >= 0, x > 0)\rx += 1\rend\rend\r')
    terminal.wait_for("looping\r\n")
    time.sleep(0.3)
    terminal.type("\x03")
    terminal.wait_for("interrupted; the session is as it was before the input")
    terminal.wait_for("rev>")
    terminal.type("x + 42\r")
    terminal.wait_for("\n42\r\n")
    terminal.wait_for("rev>")
    terminal.type("\x04")
    assert terminal.exit_status() == 0
    assert "Traceback" not in terminal.seen
    history = (tmp_path / "history").read_text(encoding="utf-8")
    assert "+x + 42" in history and "+    while (x >= 0, x > 0)" in history
