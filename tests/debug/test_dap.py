"""`rlang debug --dap` (rlang/debug/dap.py) driven by a scripted DAP client, as VS Code
drives it: the server runs in a thread of this process over OS pipes, and once as
a child process over its stdin and stdout.  Every message is read back through the
framing, and every value the user would see is asserted exactly."""
from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rlang.debug.dap import LAUNCH_ATTRIBUTES, read_message, serve, write_message

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUMS = str(HERE / "programs" / "sums.rev")
LEAK = str(HERE / "programs" / "leak.rev")
TIMEOUT = 20


class Client:
    """A DAP client over two binary streams: `request` sends a request and returns its
    response, keeping the events that came before it for `event`."""

    def __init__(self, to_server, from_server):
        self.to_server = to_server
        self.seq = 0
        self.incoming: queue.Queue = queue.Queue()
        self.events: list[dict] = []
        self.reader = threading.Thread(target=self._read, args=(from_server,), daemon=True)
        self.reader.start()

    def _read(self, stream):
        while True:
            message = read_message(stream)
            self.incoming.put(message)
            if message is None:
                return

    def _next(self):
        message = self.incoming.get(timeout=TIMEOUT)
        assert message is not None, "the server closed its output"
        return message

    def send_raw(self, message) -> None:
        write_message(self.to_server, message)

    def request(self, command: str, **arguments) -> dict:
        self.seq += 1
        self.send_raw({"seq": self.seq, "type": "request", "command": command,
                       "arguments": arguments})
        return self.response_to(self.seq)

    def response_to(self, seq: int) -> dict:
        while True:
            message = self._next()
            if message["type"] == "event":
                self.events.append(message)
            else:
                assert message["type"] == "response" and message["request_seq"] == seq, message
                return message

    def ok(self, command: str, **arguments) -> dict:
        response = self.request(command, **arguments)
        assert response["success"], response
        assert response["command"] == command
        return response.get("body", {})

    def event(self, name: str) -> dict:
        """The body of the first event `name` not taken yet (others are kept)."""
        while True:
            for k, message in enumerate(self.events):
                if message["event"] == name:
                    del self.events[k]
                    return message.get("body", {})
            self.events.append(self._next())

    def output(self) -> str:
        """The text of every output event received so far, the rest kept."""
        self.events.extend(self._drain())
        text = "".join(m["body"]["output"] for m in self.events if m["event"] == "output")
        self.events = [m for m in self.events if m["event"] != "output"]
        return text

    def _drain(self):
        while not self.incoming.empty():
            message = self.incoming.get_nowait()
            if message is not None:
                yield message

    # --- what VS Code asks at each stop
    def stopped(self) -> dict:
        return self.event("stopped")

    def top(self) -> tuple[str, int]:
        frame = self.ok("stackTrace", threadId=1)["stackFrames"][0]
        return frame["name"], frame["line"]

    def variables(self, frame_id: int = 1) -> dict[str, str]:
        [scope] = self.ok("scopes", frameId=frame_id)["scopes"]
        assert scope["name"] == "Locals"
        found = self.ok("variables", variablesReference=scope["variablesReference"])
        return {v["name"]: v["value"] for v in found["variables"]}


@pytest.fixture
def client():
    """A client of a server running in a thread of this process."""
    to_server_r, to_server_w = os.pipe()
    from_server_r, from_server_w = os.pipe()
    reader, writer = os.fdopen(to_server_r, "rb"), os.fdopen(from_server_w, "wb")
    result = {}

    def run():
        result["rc"] = serve(reader, writer)
        writer.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    to_server, from_server = os.fdopen(to_server_w, "wb"), os.fdopen(from_server_r, "rb")
    client = Client(to_server, from_server)
    yield client
    to_server.close()
    thread.join(TIMEOUT)
    client.reader.join(TIMEOUT)
    assert not thread.is_alive() and result["rc"] == 0
    reader.close()
    from_server.close()


def start(client: Client, program: str, **launch) -> dict:
    """initialize and launch `program`: the capabilities."""
    capabilities = client.ok("initialize", adapterID="rlang", linesStartAt1=True,
                             columnsStartAt1=True, pathFormat="path")
    client.ok("launch", program=program, **launch)
    client.event("initialized")
    return capabilities


def test_a_session_forward_and_backward(client):
    capabilities = start(client, SUMS)
    assert capabilities["supportsStepBack"] is True
    assert capabilities["supportsConfigurationDoneRequest"] is True
    [bp] = client.ok("setBreakpoints", source={"path": SUMS},
                     breakpoints=[{"line": 5}])["breakpoints"]
    assert bp["verified"] is True and bp["line"] == 5
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "entry"
    assert client.top() == ("main", 18)

    client.ok("continue", threadId=1)
    stop = client.stopped()
    assert stop["reason"] == "breakpoint" and stop["hitBreakpointIds"] == [bp["id"]]
    assert client.output() == "start [3, 4, 5]\n"
    trace = client.ok("stackTrace", threadId=1)
    assert [(f["name"], f["line"], f["column"]) for f in trace["stackFrames"]] == \
        [("add_all", 5, 9), ("double_sum", 11, 5), ("main", 21, 5)]
    assert trace["stackFrames"][0]["source"]["path"] == SUMS
    assert client.variables() == {"s!": "0", "a": "[3, 4, 5]", "i": "0"}
    assert client.variables(2) == {"t!": "0", "a": "[3, 4, 5]", "s": "0"}
    evaluated = client.ok("evaluate", expression="s! + 10 * a[i + 1]", frameId=1,
                          context="repl")
    assert evaluated["result"] == "40"
    assert client.ok("evaluate", expression="t! - 1", frameId=2)["result"] == "-1"

    client.ok("next", threadId=1)                       # the loop's next pass
    assert client.stopped()["reason"] == "breakpoint"
    assert client.top() == ("add_all", 5)
    assert client.variables() == {"s!": "3", "a": "[3, 4, 5]", "i": "1"}
    client.ok("stepBack", threadId=1)
    assert client.stopped()["reason"] == "breakpoint"
    assert client.top() == ("add_all", 5)
    assert client.variables() == {"s!": "0", "a": "[3, 4, 5]", "i": "0"}
    client.ok("stepBack", threadId=1)                   # before the loop
    assert client.stopped()["reason"] == "step"
    assert client.top() == ("add_all", 4)
    assert client.variables() == {"s!": "0", "a": "[3, 4, 5]"}
    client.ok("stepBack", threadId=1)                   # out of the call
    assert client.stopped()["reason"] == "step"
    assert client.top() == ("double_sum", 11)
    assert client.variables() == {"t!": "0", "a": "[3, 4, 5]", "s": "0"}
    client.ok("stepIn", threadId=1)
    assert client.stopped()["reason"] == "step"
    assert client.top() == ("add_all", 4)
    client.ok("continue", threadId=1)
    assert client.stopped()["reason"] == "breakpoint"
    assert client.variables() == {"s!": "0", "a": "[3, 4, 5]", "i": "0"}

    client.ok("continue", threadId=1)                   # the second pass
    assert client.stopped()["reason"] == "breakpoint"
    assert client.variables() == {"s!": "3", "a": "[3, 4, 5]", "i": "1"}
    client.ok("stepOut", threadId=1)                    # finish add_all ...
    client.stopped()
    # ... which stops at the breakpoint's third pass first
    assert client.variables() == {"s!": "7", "a": "[3, 4, 5]", "i": "2"}
    client.ok("setBreakpoints", source={"path": SUMS}, breakpoints=[])
    client.ok("stepOut", threadId=1)
    assert client.stopped()["reason"] == "step"
    assert client.top() == ("double_sum", 12)
    assert client.variables() == {"t!": "0", "a": "[3, 4, 5]", "s": "12"}

    client.ok("reverseContinue", threadId=1)
    stop = client.stopped()
    assert stop["reason"] == "entry" and stop["description"] == "at the start of the program"
    assert client.top() == ("main", 18)
    assert client.variables() == {}
    assert client.output() == "start [3, 4, 5]\nat the start of the program\n"
    client.ok("disconnect")


def test_the_end_is_a_stop_to_step_back_from(client):
    start(client, SUMS, stopOnEntry=False)
    client.ok("configurationDone")
    stop = client.stopped()
    assert stop["reason"] == "step"
    assert stop["description"] == "finished: `main` ran to its end"
    assert client.output() == "start [3, 4, 5]\nt is 24\nfinished: `main` ran to its end\n"
    assert client.top() == ("main", 23)                 # main's `end`
    assert client.variables() == {"a": "[3, 4, 5]", "t": "24"}
    client.ok("continue", threadId=1)                   # stays at the end
    assert client.stopped()["description"] == "finished: `main` ran to its end"
    client.ok("stepBack", threadId=1)                   # undoes the print: it prints again
    assert client.stopped()["reason"] == "step"
    assert client.top() == ("main", 22)
    client.ok("stepBack", threadId=1)
    client.stopped()
    assert client.top() == ("double_sum", 14)           # entered from its end
    assert client.variables() == {"t!": "24", "a": "[3, 4, 5]", "s": "0"}
    assert client.output() == "finished: `main` ran to its end\nt is 24\n"
    client.ok("terminate")
    client.event("terminated")
    client.ok("disconnect")


def test_function_and_conditional_breakpoints_arrays_and_backward_runs(client):
    start(client, SUMS, function="double_sum", args=["10", "[1, 2, 3]"])
    [bad, good] = client.ok("setBreakpoints", source={"path": SUMS}, breakpoints=[
        {"line": 1}, {"line": 5, "condition": "i == 2"}])["breakpoints"]
    assert bad == {"line": 1, "source": {"path": SUMS}, "verified": False,
                   "message": f"no statement on line 1 of {SUMS}"}
    assert good["verified"] is True
    [missing, add_all] = client.ok("setFunctionBreakpoints", breakpoints=[
        {"name": "nothing"}, {"name": "add_all"}])["breakpoints"]
    assert missing == {"verified": False, "message": "no function `nothing`"}
    elsewhere = client.ok("setBreakpoints", source={"path": LEAK}, breakpoints=[{"line": 6}])
    assert elsewhere["breakpoints"][0]["verified"] is False
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "entry"
    assert client.top() == ("double_sum", 10)
    client.ok("continue", threadId=1)
    assert client.stopped()["hitBreakpointIds"] == [add_all["id"]]
    client.ok("continue", threadId=1)
    assert client.stopped()["hitBreakpointIds"] == [good["id"]]
    assert client.variables()["i"] == "2"
    client.ok("continue", threadId=1)                   # the uncall: add_all backward
    assert client.stopped()["hitBreakpointIds"] == [add_all["id"]]
    frames = client.ok("stackTrace", threadId=1)["stackFrames"]
    assert [f["name"] for f in frames] == ["add_all (backward)", "double_sum"]
    assert client.variables(2) == {"t!": "22", "a": "[1, 2, 3]", "s": "6"}

    [scope] = client.ok("scopes", frameId=2)["scopes"]
    [array] = [v for v in client.ok("variables", variablesReference=scope[
        "variablesReference"])["variables"] if v["name"] == "a"]
    assert array["indexedVariables"] == 3
    elements = client.ok("variables", variablesReference=array["variablesReference"],
                         start=1, count=2)["variables"]
    assert [(v["name"], v["value"]) for v in elements] == [("[1]", "2"), ("[2]", "3")]
    matrix = client.ok("evaluate", expression="[[1, 2], [3, 4]]", frameId=1, context="watch")
    assert matrix["result"] == "[[1, 2], [3, 4]]" and matrix["indexedVariables"] == 2
    rows = client.ok("variables", variablesReference=matrix["variablesReference"])
    assert [(v["name"], v["value"]) for v in rows["variables"]] == [
        ("[0]", "[1, 2]"), ("[1]", "[3, 4]")]
    row = client.ok("variables", variablesReference=rows["variables"][1]["variablesReference"])
    assert [(v["name"], v["value"], v["variablesReference"]) for v in row["variables"]] == [
        ("[1, 0]", "3", 0), ("[1, 1]", "4", 0)]
    client.ok("reverseContinue", threadId=1)            # back over the forward call
    assert client.stopped()["hitBreakpointIds"] == [good["id"]]
    assert client.variables() == {"s!": "3", "a": "[1, 2, 3]", "i": "2"}
    client.ok("disconnect")


def test_without_stop_on_entry_a_breakpoint_on_the_first_statement_stops(client):
    start(client, SUMS, stopOnEntry=False)
    client.ok("setBreakpoints", source={"path": SUMS}, breakpoints=[{"line": 18}])
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "breakpoint"
    assert client.top() == ("main", 18)
    start(client, SUMS, stopOnEntry=False)      # a second launch on the same connection
    client.ok("setBreakpoints", source={"path": SUMS}, breakpoints=[{"line": 19}])
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "breakpoint"
    assert client.top() == ("main", 19)
    client.ok("disconnect")


def test_a_failed_check_stops_as_an_exception_and_steps_back(client):
    start(client, LEAK, stopOnEntry=False)
    client.ok("configurationDone")
    stop = client.stopped()
    assert stop["reason"] == "exception"
    assert stop["description"] == "deallocation check failed: y = 3, expected 1"
    expected = (f"{LEAK}:6:5: error: deallocation check failed: y = 3, expected 1\n"
                "    6 |     y → 1\n"
                "      |     ^^^^^\n"
                f"  in function bump, called at {LEAK}:11:5 (running forward)\n"
                "      with x! = 3, y = 3\n"
                "  in function main (running forward)\n"
                "      with x = 3")
    assert stop["text"] == expected
    assert client.output() == expected + "\n"
    info = client.ok("exceptionInfo", threadId=1)
    assert info["exceptionId"] == "ReversibilityError" and info["description"] == expected
    assert client.top() == ("bump", 6)
    assert client.variables() == {"x!": "3", "y": "3"}
    client.ok("stepBack", threadId=1)
    client.stopped()
    client.ok("stepBack", threadId=1)
    client.stopped()
    assert client.top() == ("bump", 4)
    assert client.variables() == {"x!": "1"}
    assert client.variables(2) == {"x": "1"}
    assert client.request("exceptionInfo", threadId=1)["success"] is False
    client.ok("disconnect")


def test_run_without_debugging(client):
    start(client, LEAK, noDebug=True)
    client.ok("setExceptionBreakpoints", filters=[])
    client.ok("configurationDone")
    assert client.event("exited") == {"exitCode": 1}
    client.event("terminated")
    assert client.output().startswith(f"{LEAK}:6:5: error: deallocation check failed")
    assert not any(m["event"] == "stopped" for m in client.events)
    client.ok("disconnect")


def test_malformed_requests_fail_and_the_server_goes_on(client):
    answer = client.request("launch")
    assert answer["success"] is False and answer["message"] == "the request needs `program`"
    assert client.request("stackTrace", threadId=1)["message"] == \
        "no program is running: send `launch` first"
    assert client.request("frobnicate")["message"] == "unsupported request `frobnicate`"
    client.seq += 1
    client.send_raw({"seq": client.seq, "type": "request"})
    assert client.response_to(client.seq)["success"] is False
    client.to_server.write(b"Content-Length: 5\r\n\r\n{oops")
    client.to_server.flush()
    assert client.response_to(0)["message"].startswith("a message that is not JSON")
    failed = client.request("launch", program=str(HERE / "programs" / "absent.rev"))
    assert failed["success"] is False and "absent.rev" in failed["message"]
    assert "absent.rev" in client.output()
    assert client.request("launch", program=SUMS, args="10")["message"] == \
        '`args` must be a list, not "10"'
    client.send_raw([1, 2])
    assert client.response_to(0)["message"].startswith("not a DAP request")
    start(client, SUMS, stopOnEntry=False)      # after all that, a session works
    [kept, bad_condition] = client.ok("setBreakpoints", source={"path": SUMS}, breakpoints=[
        {"line": 22}, {"line": 19, "condition": "t =="}])["breakpoints"]
    assert bad_condition["verified"] is False
    assert bad_condition["message"].startswith("unexpected end of input")
    refused = client.request("setBreakpoints", source={"path": SUMS},
                             breakpoints=[{"line": 22}, {"line": "x"}])
    assert refused["message"] == "each breakpoint needs a `line` number"
    client.ok("configurationDone")
    assert client.stopped()["hitBreakpointIds"] == [kept["id"]]    # the first one stays
    client.ok("continue", threadId=1)
    assert client.stopped()["reason"] == "step"
    bad = client.request("evaluate", expression="t +", frameId=1)
    assert bad["success"] is False and "unexpected end of input" in bad["message"]
    assert client.request("scopes", frameId=7)["message"] == "no frame 7: frames are 1 to 1"
    assert client.request("variables", variablesReference=999)["success"] is False
    client.ok("disconnect")


def test_the_vscode_manifest_declares_this_adapter(client):
    """editors/vscode/package.json runs `rlang debug --dap` for type "rlang", declares the
    launch arguments the adapter reads, and its first configuration debugs a file."""
    manifest = json.loads((REPO / "editors" / "vscode" / "package.json").read_text("utf-8"))
    [debugger] = manifest["contributes"]["debuggers"]
    assert [debugger["runtime"], *debugger["runtimeArgs"]] == ["rlang", "debug", "--dap"]
    assert 'rlang = "rlang.cli:entry"' in (REPO / "pyproject.toml").read_text("utf-8")
    assert manifest["contributes"]["breakpoints"] == [{"language": "rev"}]
    assert debugger["languages"] == ["rev"]
    launch = debugger["configurationAttributes"]["launch"]
    assert sorted(launch["properties"]) == sorted(LAUNCH_ATTRIBUTES)
    assert launch["required"] == ["program"]
    bodies = debugger["initialConfigurations"] + [
        snippet["body"] for snippet in debugger["configurationSnippets"]]
    for body in bodies:
        assert body["type"] == "rlang" and body["request"] == "launch"
        assert set(body) - {"type", "request", "name"} <= set(LAUNCH_ATTRIBUTES)
    [initial] = debugger["initialConfigurations"]
    assert initial["program"] == "${file}"
    start(client, SUMS, **{k: v for k, v in initial.items() if k != "program"})
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "entry"
    client.ok("disconnect")


def test_framing_round_trip():
    stream = io.BytesIO()
    write_message(stream, {"seq": 1, "text": "y → 1"})
    stream.seek(0)
    assert stream.getvalue().startswith(b"Content-Length: 29\r\n\r\n")
    assert read_message(stream) == {"seq": 1, "text": "y → 1"}
    assert read_message(stream) is None


def test_rlang_debug_dap_in_a_child_process():
    """As VS Code runs it: stdout carries only the protocol, the program's output comes
    as output events."""
    child = subprocess.Popen([sys.executable, "-m", "rlang", "debug", "--dap"], cwd=REPO,
                             stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        client = Client(child.stdin, child.stdout)
        start(client, os.path.relpath(SUMS, REPO))
        [bp] = client.ok("setBreakpoints", source={"path": SUMS},
                         breakpoints=[{"line": 21}])["breakpoints"]
        assert bp["verified"] is True
        client.ok("configurationDone")
        client.stopped()
        assert client.ok("stackTrace", threadId=1)["stackFrames"][0]["source"]["path"] == SUMS
        client.ok("continue", threadId=1)
        assert client.stopped()["reason"] == "breakpoint"
        assert client.output() == "start [3, 4, 5]\n"
        assert client.variables() == {"a": "[3, 4, 5]", "t": "0"}
        client.ok("next", threadId=1)
        client.stopped()
        assert client.variables() == {"a": "[3, 4, 5]", "t": "24"}
        client.ok("disconnect")
        assert child.wait(TIMEOUT) == 0
        assert child.stderr.read() == b""
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()
        child.stdin.close()


def test_pause_stops_a_motion_that_would_run_forever(client):
    start(client, str(HERE / "programs" / "forever.rev"))
    client.ok("configurationDone")
    assert client.stopped()["reason"] == "entry"
    client.ok("continue", threadId=1)
    assert client.ok("threads")["threads"] == [{"id": 1, "name": "rev"}]   # while running
    time.sleep(0.3)                 # let the loop make a few passes
    client.ok("pause", threadId=1)
    assert client.stopped()["reason"] == "pause"
    name, line = client.top()
    assert name == "main" and line in (4, 5)
    n = int(client.variables()["n"])
    assert n > 0
    client.ok("stepBack", threadId=1)
    assert client.stopped()["reason"] == "step"
    assert int(client.variables()["n"]) in (n, n - 1)
    client.ok("continue", threadId=1)
    client.ok("disconnect")          # interrupts the running motion and ends the server
