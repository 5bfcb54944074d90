"""The debugger on Janus programs (docs/janus.md): the classics step forward through
the interpreter's states and back to the start (their integers unbounded, as jana's),
and a failure stops in jana's words with the store as it was."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from rlang.debug.session import launch
from rlang.values import UNBOUNDED_INTEGERS
from tests.debug.recording import RecordingInterpreter, stop_of

JANUS = Path(__file__).resolve().parents[1] / "unit" / "frontend" / "janus"
CLASSICS = sorted(p.name for p in (JANUS / "programs").glob("*.ja"))


@pytest.mark.parametrize("name", CLASSICS)
def test_janus_programs_step_through_the_interpreters_states_and_back(name):
    path = str(JANUS / "programs" / name)
    with contextlib.redirect_stdout(io.StringIO()):
        session = launch(path)
        unit = session.interp.unit
        reference = RecordingInterpreter(unit)
        reference.run_main()
        machine = session.machine
        forward, backward = [], []
        token = UNBOUNDED_INTEGERS.set(unit.integers == "unbounded")
        try:
            while not machine.finished:
                forward += stop_of(machine)
                machine.step()
            final = dict(machine.frames[0].env)
            while machine.back():
                backward += stop_of(machine)
        finally:
            UNBOUNDED_INTEGERS.reset(token)
    assert forward == reference.seen
    assert backward[::-1] == reference.seen
    assert machine.frames[0].env == {} and final


def test_a_janus_failure_stops_in_janas_words(cli, monkeypatch):
    path = JANUS / "errors" / "delocal-value.ja"
    monkeypatch.setattr("sys.stdin", io.StringIO("locals\nback\nlocals\nrc\n"))
    code, out, err = cli("run", str(path), "--debug")
    assert code == 1 and err == ""
    assert out.splitlines() == [
        f"{path}:4:17: error: Expected value to be `2' for local variable `a' but actual "
        "value is `3'",
        "    4 |     delocal int a = 2",
        "      |                 ^",
        "  in function main (running forward)",
        "      with a = 3",
        f"{path}:4: delocal int a = 2", "a = 3",
        f"{path}:3: a += 1", "a = 2",
        "at the start of the program", f"{path}:2: local int a = 2"]
