"""One tool's side of GradBench's JSON-lines protocol.

Each line the eval sends is a JSON object with an ``id`` and a ``kind``; the tool
answers every message, one line each, with the same ``id``:

- ``start``: ``{id, tool}``;
- ``define {module}``: ``{id, success}`` (and ``error`` when the module is unknown);
- ``evaluate {module, function, input}``: ``{id, success: true, output, timings}`` with
  a ``prepare`` timing and one ``evaluate`` timing per run (Note [What a timing
  covers] in ``common.py``), or ``{id, success: false, error}``;
- anything else (``analysis``, ``end``, kinds added later): ``{id}``.

An evaluation that fails (a bad input, an error in rlang) is a ``success: false``
response naming the error; the session goes on.  Every input is checked against
its eval's shapes first (``shapes.py``), so no tool's compiled code sees one that
disagrees with them.  A line that is not a JSON object
is answered with ``{id: null, success: false, error}``.  Analyses are kept
(`Session.analyses`) so that a caller can report validity.
"""

from __future__ import annotations

import json
import time
from typing import Any, IO

from . import EVALS, tool_module
from .common import UnknownFunction, measure
from .shapes import check


def _error_text(error: BaseException) -> str:
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name


class Session:
    """The state of one protocol session for `tool` ("rlang", "jax" or "pytorch")."""

    def __init__(self, tool: str = "rlang"):
        self.tool = tool
        self.analyses: dict[int, dict] = {}
        self.ended = False

    def respond(self, message: Any) -> dict:
        """The response to one decoded message."""
        if not isinstance(message, dict):
            return {"id": None, "success": False,
                    "error": "a message must be a JSON object with an id and a kind"}
        response: dict = {"id": message.get("id")}
        kind = message.get("kind")
        if kind == "start":
            response["tool"] = self.tool
        elif kind == "define":
            response.update(self.define(message.get("module")))
        elif kind == "evaluate":
            response.update(self.evaluate(message))
        elif kind == "analysis":
            self.analyses[message.get("of")] = {
                "valid": message.get("valid"), "error": message.get("error")}
        elif kind == "end":
            self.ended = True
        return response

    def define(self, module: Any) -> dict:
        start = time.perf_counter_ns()
        try:
            found = isinstance(module, str) and tool_module(self.tool, module) is not None
        except Exception as error:  # an import that fails is this tool's failure
            return {"success": False, "error": _error_text(error)}
        timings = [{"name": "define", "nanoseconds": time.perf_counter_ns() - start}]
        if found:
            return {"success": True, "timings": timings}
        known = ", ".join(name for name in EVALS if tool_module(self.tool, name))
        return {"success": False,
                "error": f"{self.tool} has no module {module!r} (it has: {known})"}

    def evaluate(self, message: dict) -> dict:
        module, function = message.get("module"), message.get("function")
        data = message.get("input")
        try:
            implementation = tool_module(self.tool, module) if isinstance(module, str) else None
            if implementation is None:
                raise UnknownFunction(str(module), str(function))
            check(module, data)     # Note [Inputs are checked before compiled code]
            runs = data.get("min_runs", 1) if isinstance(data, dict) else 1
            seconds = data.get("min_seconds", 0) if isinstance(data, dict) else 0
            start = time.perf_counter_ns()
            prepared = implementation.prepare(function, data)
            prepare_ns = time.perf_counter_ns() - start
            output, runs_ns = measure(prepared, runs, seconds)
            json.dumps(output, allow_nan=True)  # an output JSON cannot hold fails here
        except Exception as error:
            return {"success": False, "error": _error_text(error)}
        timings = [{"name": "prepare", "nanoseconds": prepare_ns}]
        timings += [{"name": "evaluate", "nanoseconds": ns} for ns in runs_ns]
        return {"success": True, "output": output, "timings": timings}


def serve(lines: IO[str], out: IO[str], tool: str = "rlang") -> Session:
    """Answer every line of `lines` on `out` until ``end`` or end of input."""
    session = Session(tool)
    for line in lines:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as error:
            response = {"id": None, "success": False, "error": f"not JSON: {error}"}
        else:
            response = session.respond(message)
        try:
            out.write(json.dumps(response) + "\n")
            out.flush()
        except BrokenPipeError:
            break
        if session.ended:
            break
    return session
