"""Post-mortem debugging (rlang/debug/resume.py): a session made from an interpreter
failure stands where the program failed, with the store the failure left; stepping
backward from there reaches the start with the store the run began with, and running
forward again fails in the same place with the same store."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import rlang
from rlang.debug.resume import session_at_failure
from rlang.errors import RlangError
from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.interp.interpreter import Interpreter
from rlang.values import format_value

#: (name, program, the failing line, its text) — every program fails in main's run.
FAILURES = [
    ("deallocation in a callee", """
function g(t, n)
    for i = 1:n
        t += i
    end
end
function main()
    n ← 4
    t ← 0
    g(t, n)
    t → 0
end
""", 11, "t → 0"),
    ("if postcondition", """
function main()
    x ← 1
    y ← 0
    if (x == 1, y == 0)
        y += 2
        x += 1
    end
end
""", 5, "if (x == 1, y == 0)"),
    ("from loop re-entry", """
function main()
    i ← 0
    from i == 0 do
        i += 1
    loop
        i -= 1
    until i == 5
end
""", 4, "from i == 0 do"),
    ("while postcondition", """
function main()
    n ← 0
    k ← 0
    while (n < 3, k == 1)
        n += 1
    end
end
""", 5, "while (n < 3, k == 1)"),
    ("index out of bounds in a nested loop", """
function main()
    a ← zeros(i64, 3)
    s ← 0
    for i = 0:2
        for j = 0:i
            a[i + j] += j
            s += 1
        end
    end
end
""", 7, "a[i + j] += j"),
    ("assertion in a routine of an uncalled function", """
function h(x, y)
    @routine begin
        t ← 0
        t += x
        @safe assert(t < 3, "t too large")
    end
    y += t
    ~@routine
end
function main()
    x ← 0
    y ← 0
    for k = 1:5
        x += 1
        ~h(x, y)
    end
end
""", 6, '@safe assert(t < 3, "t too large")'),
    ("a call past the depth limit", """
function down(n)
    n -= 1
    down(n)
end
function main()
    n ← 5
    down(n)
end
""", 4, "down(n)"),
    ("pop from an empty stack", """
function main()
    s ← stack(i64)
    v ← 0
    w ← 0
    PUSH(s, v)
    POP(s, w)
    POP(s, v)
end
""", 8, "POP(s, v)"),
]


@pytest.fixture(autouse=True)
def shallow_calls(monkeypatch):
    """A call depth limit of 200 instead of 10,000: "a call past the depth limit" is
    the same place to stand, and stepping to it one statement at a time took
    minutes at the full limit."""
    monkeypatch.setattr("rlang.interp.interpreter.MAX_DEPTH", 200)


def _store(session):
    return [tuple((k, format_value(v)) for k, v in f.env.items())
            for f in session.machine.frames]


MEAN = """
function mean(m, xs)
    s ← 0
    for i = 0:length(xs) - 1
        s += xs[i]
    end
    m += s // length(xs)
    s → 0
end
"""


@pytest.mark.parametrize("name,source,line,text", FAILURES, ids=[f[0] for f in FAILURES])
def test_a_failure_is_a_place_to_step_back_from(name, source, line, text):
    unit = loads_unit(source, "fail.rev")
    check(unit)
    with contextlib.redirect_stdout(io.StringIO()):
        with pytest.raises(RlangError) as caught:
            Interpreter(unit).run_main()
        session = session_at_failure(caught.value)
        assert session.location() == f"fail.rev:{line}: {text}"
        at_failure = (session.location(), _store(session),
                      [(f, b) for f, b, _ in session.where()])
        stop = session.reverse_cont()
        assert stop.reason == "start"
        assert _store(session) == [()]
        stop = session.cont()
        assert stop.reason == "error"
        assert stop.detail.message == caught.value.message
        assert (session.location(), _store(session),
                [(f, b) for f, b, _ in session.where()]) == at_failure


def test_post_mortem_of_a_call_from_python():
    module = rlang.loads(MEAN, backend="interp")
    xs = np.array([1, 2, 3, 6])
    with pytest.raises(RlangError) as caught:
        module.mean(0, xs)
    session = session_at_failure(caught.value)
    assert session.location().endswith(": s → 0")
    session.reverse_cont()
    assert [(k, format_value(v)) for k, v in session.locals()] == [
        ("m", "0"), ("xs", "[1, 2, 3, 6]")]


def test_errors_from_compiled_code_say_how_to_debug():
    error = RlangError("failed")
    with pytest.raises(RlangError, match="backend=\"interp\""):
        session_at_failure(error)


def test_gradient_and_sandboxed_failures_are_refused_with_a_reason(cli, write_rev, tmp_path):
    module = rlang.loads("function f(x)\n    t ← x\n    t → 0.0\nend\n", backend="interp",
                         sandbox=True)
    with pytest.raises(RlangError) as caught:
        module.f(1.0)
    with pytest.raises(RlangError, match="sandboxed run cannot be debugged"):
        session_at_failure(caught.value)
    from rlang.ad.gradient_interpreter import GradInterpreter
    unit = loads_unit("function f(x)\n    t ← 0.0\n    t += x * x\n    t → 0.0\nend\n", "g.rev")
    check(unit)
    with pytest.raises(RlangError) as caught:
        GradInterpreter(unit).run("f", [2.0], backward=False)
    with pytest.raises(RlangError, match="gradient run cannot be debugged"):
        session_at_failure(caught.value)
    path = write_rev(tmp_path, "p.rev", "function main()\n    x ← 1\n    x → 0\nend\n")
    code, out, err = cli("run", str(path), "--debug", "--sandbox")
    assert code == 1 and "--debug and --sandbox do not go together" in err



def test_rlang_debug_post_mortem_in_an_except_block_and_after(monkeypatch, capsys):
    import rlang.debug
    module = rlang.loads(MEAN, backend="interp", file="mean.rev")
    monkeypatch.setattr("sys.stdin", io.StringIO("p s\nback\nlocals\nq\n"))
    try:
        module.mean(0, np.array([1, 2, 3, 6]))
    except RlangError:
        assert rlang.debug.post_mortem() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "mean.rev:8:5: error: deallocation check failed: s = 12, expected 0"
    assert out[-6:] == ["mean.rev:8: s → 0", "s = 12", "mean.rev:7: m += s // length(xs)",
                        "m = 0", "xs = [1, 2, 3, 6]", "s = 12"]
    # as pdb.post_mortem after the interpreter reported the error: sys.last_value
    with pytest.raises(RlangError) as caught:
        module.mean(0, np.array([1, 2, 3, 6]))
    monkeypatch.setattr("sys.last_value", caught.value, raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO("where\n"))
    assert rlang.debug.post_mortem() == 0
    assert capsys.readouterr().out.splitlines()[-1] == "#0 mean (forward) at mean.rev:8"
    with pytest.raises(ValueError, match="needs an RlangError"):
        monkeypatch.setattr("sys.last_value", KeyError("x"), raising=False)
        rlang.debug.post_mortem()


@pytest.mark.parametrize("name,source,line,text", FAILURES, ids=[f[0] for f in FAILURES])
def test_continue_at_full_speed_fails_where_stepping_fails(name, source, line, text):
    """`continue` runs compound statements whole on the interpreter (Note [Motions at
    the interpreter's speed]); failing inside one, it stands where stepping one
    statement at a time stands at the failure, with the same store."""
    from rlang.debug.session import Session
    unit = loads_unit(source, "fail.rev")
    check(unit)
    with contextlib.redirect_stdout(io.StringIO()):
        fast, slow = Session.start(unit), Session.start(unit)
        assert fast.cont().reason == "error"
        while (stop := slow.step()).reason != "error":
            pass
        assert fast.location() == slow.location() == f"fail.rev:{line}: {text}"
        assert _store(fast) == _store(slow)
        assert fast.where() == slow.where()
        assert fast.error.render() == slow.error.render()
        assert fast.reverse_cont().reason == "start" and _store(fast) == [()]
