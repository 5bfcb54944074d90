"""The debugger's stepping machine (rlang/debug/machine.py) on generated programs
(tests/property/generators.py): stepping the top function forward stops before each
simple statement with exactly the store the interpreter runs it on, and ends with
exactly the interpreter's results; stepping back from there passes through the same
positions and stores in reverse order and ends on the inputs; and at random points
`step` followed by `back` (or `back` by `step`) returns to the same position and
store.  The programs are over i64, bool and their arrays, so every store is exact."""
from __future__ import annotations

import contextlib
import io

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlang.debug.machine import Machine
from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.interp.interpreter import Interpreter
from rlang.values import format_value
from tests.debug.recording import RecordingInterpreter, stop_of

from generators import cases
from test_reversibility import SCALE, copied


def _state(machine):
    where = tuple(tuple((len(s.body), s.index, s.owner.kind) for s in f.seqs)
                  for f in machine.frames)
    store = tuple(tuple((k, format_value(v)) for k, v in f.env.items()) for f in machine.frames)
    return where, store


def _machine(unit, gp, args):
    interp = Interpreter(unit)
    fn = unit.functions[gp.top]
    values = interp.bind_arguments(gp.top, list(copied(args)))
    return Machine(interp, fn, dict(zip((p.name for p in fn.params), values)))


@settings(max_examples=max(1, int(60 * SCALE)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.randoms(use_true_random=False))
def test_stepping_matches_the_interpreter_both_ways(case, random):
    gp, args = case
    unit = loads_unit(gp.source, "generated.rev")
    check(unit)
    with contextlib.redirect_stdout(io.StringIO()):
        reference = RecordingInterpreter(unit)
        expected = reference.call(gp.top, list(copied(args)))
        machine = _machine(unit, gp, args)
        start = _state(machine)
        stops = [start]
        simple = []
        while not machine.finished:
            simple += stop_of(machine)
            machine.step()
            stops.append(_state(machine))
        assert simple == reference.seen, gp.source
        params = [p.name for p in unit.functions[gp.top].params]
        assert [format_value(machine.frames[0].env[p]) for p in params] == \
            [format_value(v) for v in expected], gp.source
        backward = [_state(machine)]
        while machine.back():
            backward.append(_state(machine))
        assert backward[::-1] == stops, gp.source
        assert [format_value(machine.frames[0].env[p]) for p in params] == \
            [format_value(np.asarray(a) if isinstance(a, list) else a) for a in args]
        # step and back at random from random positions
        for _ in range(min(20, len(stops))):
            k = random.randrange(len(stops))
            while _state(machine) != stops[k]:
                machine.step() if stops.index(_state(machine)) < k else machine.back()
            if k + 1 < len(stops):
                machine.step()
                assert _state(machine) == stops[k + 1]
                machine.back()
                assert _state(machine) == stops[k]
