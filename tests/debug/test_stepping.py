"""The stepping machine (rlang/debug/machine.py) against the interpreter: stepping
forward to the end gives the interpreter's store; stepping backward from there passes
through the same positions and stores in reverse order (exactly, on programs whose
numbers are integers, booleans or fixed point) and ends in the starting store; `step`
then `back` from any position comes back to it."""
from __future__ import annotations

import contextlib
import io
import threading
from pathlib import Path

import pytest

from rlang.debug.machine import Machine
from rlang.frontend import ast
from rlang.frontend.check import check
from rlang.frontend.loader import load_unit, loads_unit
from rlang.interp.interpreter import Interpreter
from rlang.values import format_value
from tests.debug.recording import RecordingInterpreter, stop_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Examples stepped here (the others take 10^4–10^6 steps), and whether their
#: numbers are exact (integers, fixed point), so that backward stores equal forward
#: ones to the last bit.
STEPPED = {"affine": False, "bessel": False, "factor": True, "fibonacci": True,
           "logplus": False, "multiplier": True, "perm_to_code": True, "petersen": False,
           "qr": False, "rle": True, "sparse_dot": True, "sqrt": True, "unitary": False}

#: Programs for the compound statements the examples do not all reach.
CONSTRUCTS = """
function inner(a, b)
    @routine begin
        t ← 0
        t += a * 2
    end
    b += t
    ~@routine
end

function main()
    x ← 3
    y ← 0
    n ← 0
    k ← 0
    if (x > 2, y > 0)
        inner(x, y)
    else
        y += 100
    end
    while (n < 3, n > 0)
        n += 1
        ~inner(n, y)
    end
    from k == 0 do
        k += 1
    loop
        y += k
    until k == 4
    for i = 1:2:7
        begin
            y ^= i
        end
        ~begin
            y += i
        end
    end
    @invcheckoff if y > 1000
        y -= 1000
    end
    s ← stack(i64)
    PUSH(s, k)
    z ← 0
    POP(s, z)
end
"""


def _state(machine: Machine):
    """Where the machine stands and every frame's store, as text."""
    where = tuple((len(f.seqs), tuple((len(s.body), s.index, s.owner.kind) for s in f.seqs))
                  for f in machine.frames)
    store = tuple(tuple((k, format_value(v)) for k, v in f.env.items())
                  for f in machine.frames)
    return where, store


def _walk(unit):
    """(the interpreter's store of main, the machine's stops forward, the machine)."""
    with contextlib.redirect_stdout(io.StringIO()):
        expected = Interpreter(unit).run_main()
        interp = Interpreter(unit)
        machine = Machine(interp, unit.functions["main"], {})
        stops = [_state(machine)]
        while not machine.finished:
            machine.step()
            stops.append(_state(machine))
    return expected, stops, machine


def _check_round_trip(unit, exact: bool):
    expected, stops, machine = _walk(unit)
    final = [(k, format_value(v)) for k, v in machine.frames[0].env.items()]
    assert final == [(k, format_value(v)) for k, v in expected]
    with contextlib.redirect_stdout(io.StringIO()):
        backward = [_state(machine)]
        while machine.back():
            backward.append(_state(machine))
    backward.reverse()
    assert len(backward) == len(stops)
    assert [where for where, _ in backward] == [where for where, _ in stops]
    if exact:
        assert backward == stops
    assert backward[0] == stops[0] == ((((1, ((len(unit.functions["main"].body), 0,
                                                "function"),)),), ((),)))


@pytest.mark.parametrize("name", sorted(STEPPED))
def test_examples_step_to_the_end_and_back(name):
    unit = load_unit(str(EXAMPLES / f"{name}.rev"))
    check(unit)
    _check_round_trip(unit, STEPPED[name])


def test_every_construct_steps_both_ways():
    unit = loads_unit(CONSTRUCTS, "constructs.rev")
    check(unit)
    _check_round_trip(unit, exact=True)


def test_step_then_back_returns_from_every_position():
    unit = loads_unit(CONSTRUCTS, "constructs.rev")
    check(unit)
    _, stops, _ = _walk(unit)
    interp = Interpreter(unit)
    machine = Machine(interp, unit.functions["main"], {})
    for k in range(len(stops) - 1):
        machine.step()
        assert _state(machine) == stops[k + 1]
        machine.back()
        assert _state(machine) == stops[k]
        machine.step()


def test_a_function_and_its_inverse_step_on_arguments():
    unit = loads_unit("function f(a, b)\n    a += b * 2\n    b += 1\nend\n", "f.rev")
    check(unit)
    for backward, result in ((False, {"a": 5, "b": 3}), (True, {"a": -1, "b": 1})):
        machine = Machine(Interpreter(unit), unit.functions["f"], {"a": 1, "b": 2}, backward)
        while not machine.finished:
            machine.step()
        assert machine.frames[0].env == result
        while machine.back():
            pass
        assert machine.frames[0].env == {"a": 1, "b": 2}


@pytest.mark.parametrize("name", sorted(n for n, exact in STEPPED.items() if exact))
def test_stops_before_simple_statements_are_the_interpreters_states(name):
    unit = load_unit(str(EXAMPLES / f"{name}.rev"))
    check(unit)
    _check_against_interpreter(unit)


def test_stops_of_every_construct_are_the_interpreters_states():
    unit = loads_unit(CONSTRUCTS, "constructs.rev")
    check(unit)
    _check_against_interpreter(unit)


def _check_against_interpreter(unit):
    """Forward, the machine stands before each simple statement with the store the
    interpreter ran it on; backward it passes the same states in reverse order."""
    with contextlib.redirect_stdout(io.StringIO()):
        reference = RecordingInterpreter(unit)
        reference.run_main()
        machine = Machine(Interpreter(unit), unit.functions["main"], {})
        forward = []
        while not machine.finished:
            forward += stop_of(machine)
            machine.step()
        backward = []
        while machine.back():
            backward += stop_of(machine)
    assert forward == reference.seen
    assert backward[::-1] == reference.seen


def test_reverse_continue_puts_the_store_back_when_a_whole_undo_fails(monkeypatch):
    """`reverse-continue` undoes a compound statement whole; when that fails part way
    (here: made to fail after it has undone everything), the frame's store is put
    back from its one copy and the statement is undone step by step instead."""
    from rlang.debug.session import Session
    from rlang.errors import RlangRuntimeError
    unit = loads_unit(CONSTRUCTS, "constructs.rev")
    check(unit)
    with contextlib.redirect_stdout(io.StringIO()):
        session = Session.start(unit)
        start = _state(session.machine)
        assert session.cont().reason == "end"
        end = _state(session.machine)
        real, failed = Interpreter.execute, []

        def failing(interp, stmt, env, *flags):
            real(interp, stmt, env, *flags)
            if isinstance(stmt, ast.For) and not failed:
                failed.append(stmt)
                raise RlangRuntimeError("made to fail", stmt.span)
        monkeypatch.setattr(Interpreter, "execute", failing)
        assert session.reverse_cont().reason == "start"
        assert failed and _state(session.machine) == start
        monkeypatch.setattr(Interpreter, "execute", real)
        assert session.cont().reason == "end" and _state(session.machine) == end


def test_an_interrupted_whole_undo_stops_before_the_statement():
    """Ctrl-C (or DAP's pause) during `reverse-continue` over a long loop undone whole:
    the loop's store is put back and the session stops after the loop, nothing lost."""
    from rlang.debug.session import Session
    unit = loads_unit("function main()\n    n ← 0\n    for i = 1:1000000\n        n += i\n"
                      "    end\nend\n", "long.rev")
    check(unit)
    session = Session.start(unit)
    assert session.cont().reason == "end"
    end = _state(session.machine)
    timer = threading.Timer(0.05, session.interrupt)    # the undo takes about a second
    timer.start()
    stop = session.reverse_cont()
    timer.join()
    assert stop.reason == "interrupted"
    assert _state(session.machine) == end
    assert session.reverse_cont().reason == "start"
    assert session.machine.frames[0].env == {}
