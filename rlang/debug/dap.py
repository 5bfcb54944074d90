"""The Debug Adapter Protocol server of `rlang debug --dap` (LANGUAGE.md §15): what
VS Code (or any DAP client) talks to, over a `Session`.

In: DAP requests on `reader`, a binary stream of `Content-Length: N\\r\\n\\r\\n` framed
JSON messages.  Out: responses and events on `writer`, framed the same way.
`serve(reader, writer)` answers requests until `disconnect` or the end of `reader`
(exit status 0), or until the framing itself is broken (1).  Every request gets a
response; one that is malformed, unknown or fails gets `success: false` and a
message (Note [A request never stops the server]).

The session: `initialize` → `launch` (loads and checks `program`, sends the
`initialized` event) → `setBreakpoints` / `setFunctionBreakpoints` →
`configurationDone` (then a `stopped` event: "entry", or wherever `continue` from
the entry stops with `stopOnEntry: false`).  Each motion request answers, then sends
the program's output and the stop's messages as `output` events, then one `stopped`
event.  A motion runs on a thread of its own while requests keep being read
(Note [Pausing a running motion]).  There is one thread (id 1); frame ids are 1 for the innermost
frame, 2 for its caller, ….  Program output (`@safe print`) never reaches stdout,
which is the protocol channel: the interpreter writes it to an `_Output` here, and
anything else printed while serving goes to stderr.

# Note [Stepping back in VS Code]
DAP has two backward requests: `stepBack` runs `Session.back` (one statement
backward, entering a call from its end: the exact mirror of `stepIn`, so Step In and
Step Back undo each other stop for stop), and `reverseContinue` runs
`Session.reverse_cont` (backward to a breakpoint, an error or the start).  Going back
to the start stops with reason "entry" ("at the start of the program"); going back
again there stays.  `reverse-next` has no DAP request.

# Note [The end is a stop]
A program that runs to its end does not terminate the debug session: stepping back
from the end is what this debugger is for.  The end is reported as a `stopped` event
with reason "step" and the description "finished: `main` ran to its end"; Continue
or Step there reports the same stop again.  `terminated` is sent only for a
`terminate` request, and the server returns on `disconnect`.

# Note [Pausing a running motion]
`continue` on a program that loops for a long time (or forever, with invcheck off)
must not leave the user without a Pause button.  Requests are read on a thread of
their own into a queue; a motion runs on a worker thread.  While it runs, `pause`
asks the session to stop at the next statement (`Session.interrupt`, a stop with
reason "pause"), `disconnect` and `terminate` interrupt it and wait for it, and
`setBreakpoints`/`setFunctionBreakpoints` take effect at once; every other request
waits, in order, until the motion has stopped, so a client that sends `stackTrace`
right after `next` gets the stack at the new stop.

# Note [A request never stops the server]
A user's program cannot crash the adapter, and neither can a client: a request that
is not JSON, names no command, lacks an argument, or whose handler raises (an
`RlangError`, or a bug here) is answered with `success: false` and the error's text,
and the server reads the next request.  Only a frame without a `Content-Length`
ends it, since nothing after it can be found.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from collections import deque

import numpy as np

from ..errors import RlangError
from ..values import format_value
from .session import END, START, launch

#: The one thread a rev program has.
THREAD = 1

CAPABILITIES = {
    "supportsConfigurationDoneRequest": True,
    "supportsStepBack": True,
    "supportsConditionalBreakpoints": True,
    "supportsFunctionBreakpoints": True,
    "supportsEvaluateForHovers": True,
    "supportsTerminateRequest": True,
    "supportsExceptionInfoRequest": True,
}


#: The `launch` arguments: what editors/vscode/package.json declares for the debugger.
LAUNCH_ATTRIBUTES = ("program", "cwd", "function", "args", "inverse", "noInvcheck",
                     "modular", "stopOnEntry")


class FramingError(Exception):
    """The stream is not DAP framing: nothing after it can be read."""


class BadRequest(Exception):
    """A request the server answers with `success: false` and this message."""


# ------------------------------------------------------------------- framing
def read_message(reader):
    """The next message of `reader` (any JSON value), None at the end of the stream.
    Raises FramingError on a frame without a Content-Length, BadRequest on a body that
    is not JSON (the frame is consumed: the next one can be read)."""
    length = None
    while True:
        line = reader.readline()
        if not line:
            if length is None:
                return None
            raise FramingError("the stream ended inside a header")
        line = line.strip()
        if not line:
            if length is None:
                continue                        # blank lines between messages
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError(f"a Content-Length that is not a number: {value.strip()!r}")
    body = _read_exactly(reader, length)
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"a message that is not JSON: {error}") from None


def _read_exactly(reader, length: int) -> bytes:
    parts, left = [], length
    while left > 0:
        part = reader.read(left)
        if not part:
            raise FramingError(f"the stream ended {left} bytes before the message's end")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def write_message(writer, message: dict) -> None:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    writer.flush()


class _Output:
    """The program's output stream (`Interpreter.out`): kept until the adapter sends
    it as `output` events."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def take(self) -> str:
        text, self.parts = "".join(self.parts), []
        return text


# ------------------------------------------------------------------- the server
def serve(reader, writer) -> int:
    """Answer DAP requests from `reader` on `writer` until `disconnect` (0), the end
    of `reader` (0), or broken framing (1)."""
    adapter = Adapter(writer)
    incoming: queue.Queue = queue.Queue()
    threading.Thread(target=_read_into, args=(reader, incoming), daemon=True).start()
    waiting: deque = deque()            # requests held while a motion runs
    with contextlib.redirect_stdout(sys.stderr):     # stdout may be the channel
        while True:
            if waiting and not adapter.busy:
                kind, item = waiting.popleft()
            else:
                try:
                    kind, item = incoming.get(timeout=0.02 if adapter.busy else None)
                except queue.Empty:
                    continue
                if adapter.busy and not (kind == "message" and _at_once(item)):
                    waiting.append((kind, item))
                    continue
            if kind == "bad":
                adapter.reject({}, item)
            elif kind == "framing":
                adapter.stop_motion()
                print(f"rlang debug --dap: {item}", file=sys.stderr)
                return 1
            elif kind == "end" or not adapter.handle(item):
                adapter.stop_motion()
                return 0


#: Requests answered while a motion runs (Note [Pausing a running motion]).
AT_ONCE = ("pause", "disconnect", "terminate", "setBreakpoints", "setFunctionBreakpoints",
           "threads")


def _at_once(message) -> bool:
    return isinstance(message, dict) and message.get("command") in AT_ONCE


def _read_into(reader, incoming: queue.Queue) -> None:
    """Read messages into `incoming` as ("message", m), ("bad", why), then one
    ("framing", why) or ("end", None)."""
    while True:
        try:
            message = read_message(reader)
        except BadRequest as error:
            incoming.put(("bad", str(error)))
            continue
        except (FramingError, OSError, ValueError) as error:    # ValueError: closed
            incoming.put(("framing", str(error)))
            return
        if message is None:
            incoming.put(("end", None))
            return
        incoming.put(("message", message))


MOTIONS = {"continue": "cont", "next": "next", "stepIn": "step", "stepOut": "finish",
           "stepBack": "back", "reverseContinue": "reverse_cont"}


class Adapter:
    """The state of one DAP connection: the session once launched, the breakpoints
    by source, and the variable references of the current stop."""

    def __init__(self, writer):
        self.writer = writer
        self.seq = 0
        self.session = None
        self.output = _Output()
        self.lines_at_1 = self.columns_at_1 = True
        self.stop_on_entry = True
        self.no_debug = False
        self.source_breakpoints: dict[str, list[int]] = {}     # real path -> numbers
        self.function_breakpoints: list[int] = []
        self.references: dict[int, tuple] = {}
        self.next_reference = 1
        self.lock = threading.Lock()        # one message at a time on `writer`
        self.motion_thread: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        """Whether a motion is running (Note [Pausing a running motion])."""
        return self.motion_thread is not None and self.motion_thread.is_alive()

    def stop_motion(self) -> None:
        """Interrupt a running motion and wait until it has stopped."""
        if self.busy:
            self.session.interrupt()
            self.motion_thread.join()

    # ------------------------------------------------------------ messages
    def send(self, message: dict) -> None:
        with self.lock:
            self.seq += 1
            write_message(self.writer, {"seq": self.seq, **message})

    def event(self, name: str, body: dict | None = None) -> None:
        self.send({"type": "event", "event": name,
                   **({"body": body} if body is not None else {})})

    def respond(self, request: dict, body: dict | None = None) -> None:
        self.send({"type": "response", "request_seq": request.get("seq", 0),
                   "command": request.get("command", ""), "success": True,
                   **({"body": body} if body is not None else {})})

    def reject(self, request, message: str) -> None:
        request = request if isinstance(request, dict) else {}
        seq = request.get("seq", 0)
        command = request.get("command", "")
        self.send({"type": "response", "request_seq": seq if isinstance(seq, int) else 0,
                   "command": command if isinstance(command, str) else "", "success": False,
                   "message": message, "body": {"error": {"id": 1, "format": message}}})

    def handle(self, request) -> bool:
        """Answer one request; False when the server should stop."""
        if not isinstance(request, dict) or request.get("type") != "request" \
                or not isinstance(request.get("command"), str):
            self.reject(request, "not a DAP request: a request is an object with "
                                 "\"type\": \"request\" and a \"command\" string")
            return True
        command = request["command"]
        handler = getattr(self, "on_" + command, None)
        if command in MOTIONS:
            handler = self.motion
        if handler is None:
            self.reject(request, f"unsupported request `{command}`")
            return True
        args = request.get("arguments", {})
        try:
            if not isinstance(args, dict):
                raise BadRequest(f"the arguments of `{command}` must be an object")
            return handler(request, args) is not False
        except BadRequest as error:
            self.reject(request, str(error))
        except RlangError as error:
            self.reject(request, error.render())
        except Exception as error:      # Note [A request never stops the server]
            self.reject(request, f"internal error in the rlang debug adapter: "
                                 f"{type(error).__name__}: {error}")
        return True

    # ------------------------------------------------------------ set-up
    def on_initialize(self, request, args):
        self.lines_at_1 = _get(args, "linesStartAt1", bool, True)
        self.columns_at_1 = _get(args, "columnsStartAt1", bool, True)
        self.respond(request, dict(CAPABILITIES))

    def on_launch(self, request, args):
        program = _get(args, "program", str)
        cwd = _get(args, "cwd", str, None)
        if cwd is not None:
            program = os.path.join(cwd, program)
        arg_texts = _get(args, "args", list, [])
        if not all(isinstance(text, str) for text in arg_texts):
            raise BadRequest("`args` must be a list of strings (rev literals, as on the "
                             "command line)")
        self.stop_on_entry = _get(args, "stopOnEntry", bool, True)
        self.no_debug = _get(args, "noDebug", bool, False)
        self.session = None
        self.source_breakpoints, self.function_breakpoints = {}, []
        self.references.clear()
        try:
            self.session = launch(program, _get(args, "function", str, None), arg_texts,
                                  inverse=_get(args, "inverse", bool, False),
                                  invcheck=not _get(args, "noInvcheck", bool, False),
                                  out=self.output, modular=_get(args, "modular", bool, False))
        except RlangError as error:
            self.event("output", {"category": "stderr", "output": error.render() + "\n"})
            raise
        self.respond(request)
        self.event("initialized")

    def on_configurationDone(self, request, args):
        session = self._session()
        self.respond(request)
        if self.no_debug:
            self._run_without_debugging(session)
            return
        if self.stop_on_entry:
            self._stopped("entry", "at the start of the program")
            return
        hit = session.breakpoint_here()    # a breakpoint on the first statement
        if hit is not None:
            self._stopped("breakpoint", hit_ids=[hit.number])
        else:
            self._report(session.cont())

    def _run_without_debugging(self, session) -> None:
        """Run Without Debugging: run to the end or an error, print, and terminate."""
        session.delete()
        stop = session.cont()
        self._flush()
        if stop.reason == "error":
            self.event("output", {"category": "stderr", "output": stop.detail.render() + "\n"})
        self.event("exited", {"exitCode": 1 if stop.reason == "error" else 0})
        self.event("terminated")

    def on_setExceptionBreakpoints(self, request, args):
        self.respond(request, {"breakpoints": []})      # an error always stops

    def on_setBreakpoints(self, request, args):
        session = self._session()
        source = _get(args, "source", dict)
        path = _get(source, "path", str)
        wanted = _get(args, "breakpoints", list, None)
        if wanted is None:      # the deprecated form: lines alone
            wanted = [{"line": line} for line in _get(args, "lines", list, [])]
        if not all(isinstance(item, dict) and isinstance(item.get("line"), int)
                   for item in wanted):
            raise BadRequest("each breakpoint needs a `line` number")
        conditions = [_condition(item) for item in wanted]
        key = os.path.realpath(path)
        for number in self.source_breakpoints.pop(key, []):
            session.delete(number)
        file = self._program_file(key)
        results, numbers = [], []
        for item, condition in zip(wanted, conditions):
            line = item["line"] + (0 if self.lines_at_1 else 1)
            result = {"line": item["line"], "source": source}
            if file is None:
                results.append({**result, "verified": False,
                                "message": f"{path} is not a file of this program"})
                continue
            results.append({**result, **self._add(f"{file}:{line}{condition}", numbers)})
        self.source_breakpoints[key] = numbers
        self.respond(request, {"breakpoints": results})

    def on_setFunctionBreakpoints(self, request, args):
        session = self._session()
        wanted = _get(args, "breakpoints", list)
        if not all(isinstance(item, dict) and isinstance(item.get("name"), str)
                   for item in wanted):
            raise BadRequest("each function breakpoint needs a `name`")
        conditions = [_condition(item) for item in wanted]
        for number in self.function_breakpoints:
            session.delete(number)
        self.function_breakpoints = []
        results = []
        for item, condition in zip(wanted, conditions):
            name = item["name"].strip()
            if name not in session.interp.functions:
                results.append({"verified": False, "message": f"no function `{name}`"})
                continue
            results.append(self._add(name + condition, self.function_breakpoints))
        self.respond(request, {"breakpoints": results})

    def _add(self, spec: str, numbers: list) -> dict:
        """Add the breakpoint `spec` to the session: its DAP description."""
        try:
            bp = self.session.add_breakpoint(spec)
        except RlangError as error:
            return {"verified": False, "message": error.message}
        numbers.append(bp.number)
        return {"id": bp.number, "verified": True}

    def _program_file(self, real_path: str) -> str | None:
        """The file name the program's spans use for the file at `real_path`."""
        for file, _ in self.session.interp.unit.sources:
            if os.path.realpath(file) == real_path:
                return file
        return None

    # ------------------------------------------------------------ motions
    def motion(self, request, args):
        move = getattr(self._session(), MOTIONS[request["command"]])
        self.respond(request, {"allThreadsContinued": True}
                     if request["command"] == "continue" else None)
        self.motion_thread = threading.Thread(target=self._move, args=(move,), daemon=True)
        self.motion_thread.start()

    def _move(self, move) -> None:
        try:
            stop = move()
        except Exception as error:      # a bug here: said, and the session stays usable
            self.event("output", {"category": "stderr", "output": "internal error in the "
                                  f"rlang debug adapter: {type(error).__name__}: {error}\n"})
            self._stopped("exception", str(error))
            return
        self._report(stop)

    def on_pause(self, request, args):
        self._session()
        self.respond(request)
        if self.busy:
            self.session.interrupt()    # the motion stops with reason "pause"

    def _report(self, stop) -> None:
        """Send the program's output, the stop's messages and the `stopped` event."""
        if stop.reason == "error":
            error = stop.detail
            self._flush()
            self.event("output", {"category": "stderr", "output": error.render() + "\n"})
            self._stopped("exception", error.message, error.render())
            return
        self._flush()
        if stop.reason in (END, START, "watch"):
            self.event("output", {"category": "console",
                                  "output": "\n".join(stop.messages) + "\n"})
        if stop.reason == "breakpoint":
            self._stopped("breakpoint", hit_ids=[stop.detail.number])
        elif stop.reason == START:
            self._stopped("entry", stop.messages[0])
        elif stop.reason == END:
            self._stopped("step", stop.messages[0])
        elif stop.reason == "watch":
            self._stopped("data breakpoint", stop.messages[0])
        elif stop.reason == "interrupted":
            self._stopped("pause")
        else:
            self._stopped(stop.reason)

    def _flush(self) -> None:
        text = self.output.take()
        if text:
            self.event("output", {"category": "stdout", "output": text})

    def _stopped(self, reason: str, description: str | None = None, text: str | None = None,
                 hit_ids=None) -> None:
        self.references.clear()
        body = {"reason": reason, "threadId": THREAD, "allThreadsStopped": True}
        if description is not None:
            body["description"] = description
        if text is not None:
            body["text"] = text
        if hit_ids:
            body["hitBreakpointIds"] = hit_ids
        self.event("stopped", body)

    # ------------------------------------------------------------ looking
    def on_threads(self, request, args):
        self.respond(request, {"threads": [{"id": THREAD, "name": "rev"}]})

    def on_stackTrace(self, request, args):
        session = self._session()
        chain = session.where()
        start = _get(args, "startFrame", int, 0)
        levels = _get(args, "levels", int, 0) or len(chain)
        frames = []
        for k, (function, backward, span) in enumerate(chain):
            line, col = span.line, span.col
            if k == 0:
                line, col = _top_position(session, span)
            frames.append({"id": k + 1, "name": function + (" (backward)" if backward else ""),
                           "source": {"name": os.path.basename(span.file),
                                      "path": os.path.abspath(span.file)},
                           "line": line - (0 if self.lines_at_1 else 1),
                           "column": col - (0 if self.columns_at_1 else 1)})
        self.respond(request, {"stackFrames": frames[start:start + levels],
                               "totalFrames": len(frames)})

    def on_scopes(self, request, args):
        frame = self._frame(args)
        reference = self._reference(("frame", frame))
        self.respond(request, {"scopes": [{"name": "Locals", "presentationHint": "locals",
                                           "variablesReference": reference,
                                           "expensive": False}]})

    def on_variables(self, request, args):
        entry = self.references.get(_get(args, "variablesReference", int))
        if entry is None:
            raise BadRequest("no such variablesReference (the program has moved since)")
        if entry[0] == "frame":
            shown = [(name, value, None) for name, value in self._session().locals(entry[1])]
        else:
            shown = _elements(entry[1], entry[2])
        start = _get(args, "start", int, 0)
        shown = shown[start:start + (_get(args, "count", int, 0) or len(shown))]
        self.respond(request, {"variables": [self._variable(name, value, part)
                                             for name, value, part in shown]})

    def on_evaluate(self, request, args):
        session = self._session()
        frame = self._frame(args) if "frameId" in args else 0
        value = session.evaluate(_get(args, "expression", str), frame)
        shown = self._variable("", value)
        self.respond(request, {"result": shown["value"],
                               **{k: v for k, v in shown.items() if k not in ("name", "value")}})

    def on_exceptionInfo(self, request, args):
        error = self._session().error
        if error is None:
            raise BadRequest("the program is not stopped at an error")
        self.respond(request, {"exceptionId": type(error).__name__,
                               "description": error.render(), "breakMode": "always",
                               "details": {"message": error.message,
                                           "typeName": type(error).__name__}})

    def _variable(self, name: str, value, part=None) -> dict:
        """A DAP variable: an array unfolds into its elements (rows of a matrix into
        theirs); `part` is ("array", whole, index) when `value` is `whole[index]`."""
        shown = {"name": name, "value": format_value(value), "variablesReference": 0}
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.size > 0:
            shown["variablesReference"] = self._reference(part or ("array", value, ()))
            shown["indexedVariables"] = value.shape[0]
        return shown

    def _reference(self, entry: tuple) -> int:
        reference, self.next_reference = self.next_reference, self.next_reference + 1
        self.references[reference] = entry
        return reference

    def _frame(self, args) -> int:
        frame = _get(args, "frameId", int) - 1
        depth = len(self._session().machine.frames)
        if not 0 <= frame < depth:
            raise BadRequest(f"no frame {frame + 1}: frames are 1 to {depth}")
        return frame

    # ------------------------------------------------------------ the end
    def on_terminate(self, request, args):
        self.stop_motion()
        self.respond(request)
        self.event("terminated")

    def on_disconnect(self, request, args):
        self.stop_motion()
        self.respond(request)
        return False

    def _session(self):
        if self.session is None:
            raise BadRequest("no program is running: send `launch` first")
        return self.session


def _elements(array: np.ndarray, index: tuple) -> list[tuple[str, object, tuple]]:
    """The elements (or rows) of `array[index]`, named as rev views (`[2]`, `[2, 0]`),
    each with the reference entry of its own elements."""
    part = array[index] if index else array
    return [("[" + ", ".join(map(str, index + (i,))) + "]", part[i],
             ("array", array, index + (i,))) for i in range(part.shape[0])]


def _top_position(session, span) -> tuple[int, int]:
    """The line and column of the innermost frame, as `Session.location` shows it: at
    the end of a function body, its `end` line."""
    _, line = session.line()
    if line != span.line:
        return line, max(span.end_col - len("end"), 1)
    return span.line, span.col


def _condition(item: dict) -> str:
    condition = item.get("condition")
    if condition is not None and not isinstance(condition, str):
        raise BadRequest("a breakpoint's `condition` must be a string")
    return f" if {condition.strip()}" if condition and condition.strip() else ""


_REQUIRED = object()


def _get(args: dict, name: str, kind, default=_REQUIRED):
    """The argument `name` of type `kind` (None and absent give `default`)."""
    value = args.get(name)
    if value is None:
        if default is _REQUIRED:
            raise BadRequest(f"the request needs `{name}`")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadRequest(f"`{name}` must be a {_KINDS[kind]}, not {json.dumps(value)}")
    return value


_KINDS = {str: "string", bool: "boolean", int: "number", list: "list", dict: "object"}
