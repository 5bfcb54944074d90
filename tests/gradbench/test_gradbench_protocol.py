"""The GradBench adapter (benchmarks/gradbench/tool.py) answers a scripted session
as GradBench's protocol asks: every message answered with its id; define, evaluate
(with min_runs / min_seconds, one evaluate timing per run) and a bad input that
gets a clear `success: false` while the session goes on."""

import io
import json
import os
import subprocess
import sys

from tests.gradbench import suite_path
from suite import EVALS, tool_module  # noqa: E402
from suite.common import Prepared, measure  # noqa: E402
from suite.protocol import Session, serve  # noqa: E402

TOOL = os.path.join(suite_path.GRADBENCH_DIR, "tool.py")


def _session(lines, tool="rlang"):
    out = io.StringIO()
    serve(io.StringIO("".join(json.dumps(line) + "\n" if not isinstance(line, str)
                              else line + "\n" for line in lines)), out, tool)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _evaluations(responses):
    return [t for t in responses.get("timings", []) if t["name"] == "evaluate"]


def test_a_scripted_session_is_answered_message_by_message():
    responses = _session([
        {"id": 0, "kind": "start", "eval": "hello"},
        {"id": 1, "kind": "define", "module": "hello"},
        {"id": 2, "kind": "evaluate", "module": "hello", "function": "square",
         "input": 3.0, "description": "x=3"},
        {"id": 3, "kind": "analysis", "of": 2, "valid": True},
        {"id": 4, "kind": "evaluate", "module": "hello", "function": "double", "input": 3.0},
        {"id": 5, "kind": "evaluate", "module": "hello", "function": "double",
         "input": "three"},
        {"id": 6, "kind": "evaluate", "module": "hello", "function": "cube", "input": 3.0},
        {"id": 7, "kind": "define", "module": "no-such-eval"},
        {"id": 8, "kind": "something-new"},
        {"id": 9, "kind": "evaluate", "module": "hello", "function": "square", "input": 4.0},
        {"id": 10, "kind": "end"},
    ])
    assert [r["id"] for r in responses] == list(range(11))
    assert responses[0] == {"id": 0, "tool": "rlang"}
    assert responses[1]["success"] is True
    assert responses[2]["success"] is True and responses[2]["output"] == 9.0
    assert "error" not in responses[2]
    assert len(_evaluations(responses[2])) == 1
    assert responses[3] == {"id": 3}
    assert responses[4]["output"] == 6.0
    bad = responses[5]
    assert bad["success"] is False and "must be a finite number" in bad["error"]
    assert "Traceback" not in bad["error"]
    assert responses[6]["success"] is False and "cube" in responses[6]["error"]
    assert responses[7]["success"] is False and "no-such-eval" in responses[7]["error"]
    assert responses[8] == {"id": 8}
    assert responses[9]["output"] == 16.0  # the session went on after the failures
    assert responses[10] == {"id": 10}


def test_lines_that_are_not_messages_get_an_error_and_the_session_goes_on():
    responses = _session(["not json", "[1, 2]",
                          {"id": 1, "kind": "start"}])
    assert responses[0]["success"] is False and "not JSON" in responses[0]["error"]
    assert responses[1]["success"] is False and "JSON object" in responses[1]["error"]
    assert responses[2] == {"id": 1, "tool": "rlang"}


def test_min_runs_and_min_seconds_set_the_number_of_evaluate_timings():
    plain = Session().respond({"id": 0, "kind": "evaluate", "module": "hello",
                               "function": "square", "input": 2.0})
    assert len(_evaluations(plain)) == 1  # hello's input has no min_runs: one run
    calls = []
    prepared = Prepared(lambda: calls.append(1) or len(calls), float)
    output, runs = measure(prepared, 5, 0)
    assert output == 5.0 and len(runs) == 5
    calls.clear()
    output, runs = measure(prepared, 1, 0.02)
    assert sum(runs) >= 0.02e9 and len(runs) == len(calls) >= 1


def test_an_eval_input_with_min_runs_is_run_that_many_times():
    from suite import inputs_module
    generator = inputs_module("gmm") if tool_module("rlang", "gmm") else None
    if generator is None:  # the protocol itself does not need gmm
        return
    data = generator.generate(seed=1, **generator.SIZES["small"])
    response = Session().respond({"id": 0, "kind": "evaluate", "module": "gmm",
                                  "function": "objective",
                                  "input": data | {"min_runs": 4, "min_seconds": 0}})
    assert response["success"] is True
    assert len(_evaluations(response)) == 4
    assert [t["name"] for t in response["timings"]][0] == "prepare"


def test_every_eval_is_defined_by_the_rlang_tool():
    session = Session()
    for name in EVALS:
        assert session.define(name)["success"] is True, name


def test_the_tool_script_writes_only_protocol_lines_on_standard_output():
    script = "\n".join(json.dumps(m) for m in [
        {"id": 0, "kind": "start", "eval": "hello"},
        {"id": 1, "kind": "define", "module": "hello"},
        {"id": 2, "kind": "evaluate", "module": "hello", "function": "double",
         "input": 1.5},
        {"id": 3, "kind": "evaluate", "module": "hello", "function": "double",
         "input": None},
        {"id": 4, "kind": "end"}]) + "\n"
    done = subprocess.run([sys.executable, TOOL], input=script, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in responses] == [0, 1, 2, 3, 4]
    assert responses[2]["output"] == 3.0
    assert responses[3]["success"] is False and "InvalidInput" in responses[3]["error"]


def _shortened(data):
    """`data` with its first array field one entry short (None if it has none)."""
    for key, value in data.items():
        if isinstance(value, list) and len(value) > 1:
            return data | {key: value[:-1]}, key
    return None, None


def test_inputs_that_disagree_with_their_evals_shapes_are_refused_before_any_tool():
    # Note [Inputs are checked before compiled code]: a shortened array would make
    # @inbounds code read and write outside it
    from suite import inputs_module

    session = Session()
    refused = set()
    for name in EVALS:
        generator = inputs_module(name)
        data = generator.generate(seed=1, **generator.SIZES["small"])
        if not isinstance(data, dict):
            continue
        bad, key = _shortened(data)
        if bad is None:
            continue
        response = session.respond({"id": 0, "kind": "evaluate", "module": name,
                                    "function": EVALS[name][-1], "input": bad})
        if response["success"]:     # its sizes are its arrays' (ode's x, lse's x)
            continue
        assert response["error"].startswith("InvalidInput:") and repr(key) in response["error"]
        refused.add(name)
    assert {"gmm", "ba", "ht", "lstm", "det", "saddle"} <= refused
    missing = session.respond({"id": 1, "kind": "evaluate", "module": "gmm",
                               "function": "objective", "input": {"d": 2}})
    assert missing["error"] == "InvalidInput: the input has no field 'k'"


def test_a_particle_path_that_never_lands_is_an_error_not_a_hang():
    response = Session().respond({"id": 0, "kind": "evaluate", "module": "particle",
                                  "function": "ff", "input": {"w": -1.0}})
    assert response["success"] is False
    assert "did not reach the x axis" in response["error"]
