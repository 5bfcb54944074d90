"""A big module's first call runs quickly compiled code while its optimised code is
compiled on a thread; later calls run the optimised code (Note [A quick first call],
rlang/backends/llvm/tiers.py).  The two tiers give the same bits.  A first call
still running when the optimised code is ready leaves the quick code for it, its
arrays put back first (Note [Leaving the quick code])."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang import RlangError

pytest.importorskip("llvmlite")

from rlang.backends.llvm import jit, tiers  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "outputs"
#: every fifth program of the golden outputs that has a main
PROGRAMS = sorted(p for p in GOLDEN.glob("*.rev") if "function main(" in p.read_text())[::5]


@pytest.fixture
def quick_always(monkeypatch, tmp_path):
    """Every module takes the quick first tier, even with sums O3 may reassociate;
    an empty disk cache."""
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RLANG_QUICK_FIRST_CALL", raising=False)     # (the default)
    monkeypatch.setattr(tiers, "QUICK_TIER_BYTES", 0)
    monkeypatch.setattr(tiers, "REASSOCIATED", "(never in LLVM IR)")
    return tmp_path


def _natives(module) -> list:
    return list(module.compiled._modules.values())


def _bits(value):
    """`value` with every float as its bytes: equal only where the bits are."""
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_bits(v) for v in value]
    if isinstance(value, complex):
        return _bits(value.real), _bits(value.imag)
    return repr(value)


def _outcome(run):
    try:
        return "ran", _bits(run())
    except RlangError as error:
        return "failed", str(error)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_the_quick_and_the_optimised_code_of_a_program_give_the_same_bits(quick_always,
                                                                        path):
    m = rlang.load(path, backend="llvm")
    first = _outcome(m.run_main)
    natives = _natives(m)
    assert natives and all(n._called or n._optimising is None for n in natives)
    second = _outcome(m.run_main)
    assert second == first
    assert all(n._optimising is None for n in _natives(m))


def test_a_gradient_s_first_call_is_quick_and_its_second_optimised(quick_always,
                                                                  monkeypatch):
    first_done = threading.Event()      # the O3 compile waits for the first call
    optimised = jit.optimised_object

    def held(*args):
        first_done.wait(300)
        return optimised(*args)

    monkeypatch.setattr(jit, "optimised_object", held)
    m = rlang.load(ROOT / "examples" / "petersen.rev", backend="llvm")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((10, 4))
    adj = np.zeros((10, 10), dtype=np.int64)
    for i in range(10):
        adj[i, (i + 1) % 10] = adj[(i + 1) % 10, i] = 1
    grad = rlang.grad(m.petersen_, argnums=1, loss="loss!")
    first = grad(0.0, x.copy(), adj)
    first_done.set()
    called = [n for n in _natives(m) if n._called]
    assert called and all(n._optimising is not None and not n._replaced for n in called)
    second = grad(0.0, x.copy(), adj)
    assert all(n._optimising is None and len(n._replaced) == 1 for n in called)
    assert _bits(first) == _bits(second)
    assert _bits(grad(0.0, x.copy(), adj)) == _bits(first)
    hessian = rlang.hessian(m.petersen_, (0.0, x, adj), "loss!", argnums=1)
    assert np.all(np.isfinite(hessian))


def test_the_optimised_code_goes_to_the_disk_cache_and_a_later_load_takes_it(quick_always):
    source = "function f(y!, x)\n    y! += x * x\nend\n"
    m = rlang.loads(source, backend="llvm")
    assert m.f(1.0, 3.0) == (10.0, 3.0)
    [native] = _natives(m)
    native.settled()
    assert len(list(quick_always.glob("*.rlo"))) == 1
    again = rlang.loads(source, backend="llvm")
    assert again.f(1.0, 3.0) == (10.0, 3.0)
    [loaded] = _natives(again)
    assert loaded._optimising is None and not loaded._replaced


def test_what_outlives_a_call_waits_for_the_optimised_code(quick_always):
    m = rlang.loads("function f(y!, x)\n    y! += x * x\nend\n", backend="llvm")
    m.f(1.0, 3.0)
    [native] = _natives(m)
    assert native.engine is native._code.engine
    assert native._optimising is None and len(native._replaced) == 1


def test_big_modules_without_recursion_take_the_quick_tier_unless_it_is_turned_off(
        monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    big = "x" * (tiers.QUICK_TIER_BYTES + 1)
    monkeypatch.delenv("RLANG_QUICK_FIRST_CALL", raising=False)
    assert tiers.quick_first_call(big, recursive=False)         # the default
    assert not tiers.quick_first_call(big, recursive=True)
    assert not tiers.quick_first_call("x" * tiers.QUICK_TIER_BYTES, recursive=False)
    assert not tiers.quick_first_call(big + "fadd reassoc double", recursive=False)
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "any")
    assert tiers.quick_first_call(big + "fadd reassoc double", recursive=False)
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "0")
    assert not tiers.quick_first_call(big, recursive=False)
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "1")
    assert tiers.quick_first_call(big, recursive=False)
    monkeypatch.setattr(tiers, "QUICK_TIER_BYTES", 0)
    m = rlang.load(ROOT / "examples" / "fibonacci.rev", backend="llvm")
    assert m.rrfib(0, 10) == (89, 10)
    assert all(n._optimising is None and not n._replaced for n in _natives(m))


def test_a_process_that_ends_during_the_optimisation_waits_for_it(tmp_path):
    code = ("import rlang, rlang.backends.llvm.tiers as tiers\n"
            "tiers.QUICK_TIER_BYTES = 0\n"
            "m = rlang.loads('function f(y!, x)\\n    y! += x * x\\nend\\n', backend='llvm')\n"
            "print(m.f(1.0, 3.0))\n")
    env = dict(os.environ, RLANG_CACHE_DIR=str(tmp_path))
    env.pop("RLANG_QUICK_FIRST_CALL", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(10.0, 3.0)" and not done.stderr
    assert len(list(tmp_path.glob("*.rlo"))) == 1     # the wait filled the cache


SPIN = """
function spin!(y: f64[:], x: f64[:], n: i64)
    for k = 0:n - 1
        for i = 0:size(x, 0) - 1
            y[i] += x[i] * 0.5 + 1.0
        end
    end
end
"""


@pytest.fixture
def left_answers(quick_always, monkeypatch):
    """The list of the calls' `QuickCall.left` answers (True: the call left the quick
    code)."""
    left, answers = tiers.QuickCall.left, []

    def spied(call, context):
        answers.append(left(call, context))
        return answers[-1]

    monkeypatch.setattr(tiers.QuickCall, "left", spied)
    return answers


@pytest.fixture
def leaving(left_answers, monkeypatch):
    """A module's optimised code is ready as soon as a call that may leave its quick
    code has started (its compile waits for that), so the call leaves at its first
    poll; gives `left_answers`."""
    optimise_later, arm = jit.NativeModule.optimise_later, jit.NativeModule.arm_preemption

    def held_until_armed(native, work, alone=None):
        native.armed_in_test = threading.Event()
        optimise_later(native, lambda: native.armed_in_test.wait(300) and work())

    def arm_and_fire(native):
        arm(native)
        native._preempt.fire()
        native.armed_in_test.set()

    monkeypatch.setattr(jit.NativeModule, "optimise_later", held_until_armed)
    monkeypatch.setattr(jit.NativeModule, "arm_preemption", arm_and_fire)
    return left_answers


def test_polls_are_in_the_quick_code_s_text_and_read_as_zero_in_the_optimised_one(
        quick_always, monkeypatch):
    texts = []
    quick = jit.quick_object
    monkeypatch.setattr(jit, "quick_object", lambda text: texts.append(text) or quick(text))
    m = rlang.loads(SPIN, backend="llvm")
    m.spin_(np.zeros(3), np.ones(3), 2)
    [text] = texts
    assert text.count(tiers.POLL_READ) == 2         # one per loop
    plain = tiers.without_polls(text)
    assert tiers.POLL_READ not in plain and plain.count(tiers.NO_POLL_READ) == 2
    assert text.count(tiers.POLL_BYTE) == 1 and "rev_preempt" not in plain
    optimised = str(jit.optimise(text, jit.target_machine()))
    assert "load atomic" not in optimised and "rev_preempt" not in optimised


def test_a_first_call_leaves_the_quick_code_when_the_optimised_code_is_ready(leaving):
    m = rlang.loads(SPIN, backend="llvm")
    x = np.arange(5.0)
    y, _, n = m.spin_(np.full(5, 2.0), x, 3)
    assert leaving == [True]            # it left, and ran again on the optimised code
    [native] = _natives(m)
    assert native._called and native._optimising is None and len(native._replaced) == 1
    expected = rlang.loads(SPIN).spin_(np.full(5, 2.0), x, 3)[0]     # the interpreter
    assert _bits(y) == _bits(expected) and n == 3     # y put back before the second run
    again, _, _ = m.spin_(np.full(5, 2.0), x, 3)
    assert _bits(again) == _bits(y) and leaving == [True]


SQUARES = """
function squares!(loss!: f64, x: f64[:])
    for i = 0:size(x, 0) - 1
        loss! += x[i] * x[i] * x[i]
    end
end
"""


def test_gradients_that_leave_the_quick_code_give_the_optimised_code_s_bits(leaving):
    m = rlang.loads(SQUARES, backend="llvm", invcheck=False)    # (the pass alone first)
    x = np.linspace(-1.0, 2.0, 7)
    grad = rlang.grad(m.squares_, argnums=1, loss="loss!")
    value_and_grad = rlang.value_and_grad(m.squares_, argnums=1, loss="loss!")
    first = grad(0.0, x)                # the pass alone, on quick code: it leaves
    assert leaving == [True]
    both = value_and_grad(0.0, x)       # the forward is a new module: the forward
    assert leaving == [True, True]      # and the pass on one buffer (paired.py) leave
    assert _bits(first) == _bits(grad(0.0, x)) == _bits(both[1])     # (optimised code)
    assert _bits(both) == _bits(value_and_grad(0.0, x))
    reference = rlang.value_and_grad(rlang.loads(SQUARES).squares_, argnums=1,
                                     loss="loss!")(0.0, x)
    assert np.isclose(both[0], reference[0], rtol=1e-14)
    assert np.allclose(first, reference[1], rtol=1e-14, atol=0)
    assert leaving == [True, True]


def test_a_first_call_that_printed_does_not_leave_the_quick_code(leaving, capsys):
    talk = SPIN.replace("    for k = 0:n - 1\n", '    @safe print("spinning", n)\n'
                        "    for k = 0:n - 1\n", 1)
    m = rlang.loads(talk, backend="llvm")
    y, _, _ = m.spin_(np.full(4, 2.0), np.arange(4.0), 3)
    assert leaving == [] and capsys.readouterr().out == "spinning 3\n"   # printed once
    [native] = _natives(m)
    assert native._called and native._preempt._byte.value == 0
    assert _bits(y) == _bits(rlang.loads(talk).spin_(np.full(4, 2.0), np.arange(4.0), 3)[0])


@pytest.mark.parametrize("why", ["copies", "threads", "stacks"])
def test_a_first_call_that_could_not_leave_the_quick_code_runs_the_optimised_code(
        left_answers, monkeypatch, why):
    source, args = SPIN, lambda: (np.zeros(3), np.ones(3), 2)
    if why == "copies":     # more to copy than a first call on quick code may write
        monkeypatch.setattr(tiers, "QUICK_COPY_BYTES", 16)
    elif why == "threads":
        source = SPIN.replace("for i = 0:size(x, 0) - 1", "@parallel for i = 0:size(x, 0) - 1")
    else:
        source = SPIN.replace("function spin!(y: f64[:], x: f64[:], n: i64)",
                              "function spin!(y: f64[:], x: f64[:], n: i64, s: stack{i64})")
        args = lambda: (np.zeros(3), np.ones(3), 2, rlang.Stack("i64", [7]))
    arm, armed = jit.NativeModule.arm_preemption, []
    monkeypatch.setattr(jit.NativeModule, "arm_preemption",
                        lambda native: armed.append(native) or arm(native))
    m = rlang.loads(source, backend="llvm")
    result = m.spin_(*args())
    [native] = _natives(m)
    assert native._called and armed == [] and left_answers == []    # no quick run:
    assert native._optimising is None and len(native._replaced) == 1  # waited for O3
    assert _bits(result[0]) == _bits(rlang.loads(source).spin_(*args())[0])


def test_a_gradient_pass_whose_sums_o3_may_reassociate_is_compiled_at_o3_first(
        monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RLANG_QUICK_FIRST_CALL", raising=False)
    monkeypatch.setattr(tiers, "QUICK_TIER_BYTES", 0)
    m = rlang.loads(SQUARES, backend="llvm")
    x = np.linspace(-1.0, 2.0, 9)
    grad = rlang.grad(m.squares_, argnums=1, loss="loss!")
    first = grad(0.0, x)
    natives = {native.entry: native for native in _natives(m)}
    forward, gradient = natives.pop("rev_squares___f64_f64a1u"), natives.popitem()[1]
    assert forward._job is not None         # compiled quickly, and at O3 on a thread
    assert gradient._job is None and not gradient._replaced      # at O3 only
    assert _bits(grad(0.0, x)) == _bits(first)


@pytest.fixture
def one_core(quick_always, monkeypatch):
    """The process runs as if it had one CPU (Note [One core for two tiers])."""
    monkeypatch.setattr(jit, "one_core", lambda: True)


def test_on_one_core_a_short_first_call_runs_alone_and_the_compile_starts_after_it(
        one_core, monkeypatch):
    arm, optimised = jit.NativeModule.arm_preemption, jit.optimised_object
    compiling, held_while_running = threading.Event(), []

    def arm_and_look(native):
        time.sleep(0.05)                # (time enough for a compile not held to start)
        held_while_running.append(not compiling.is_set())
        arm(native)

    monkeypatch.setattr(jit, "optimised_object",
                        lambda *args: compiling.set() or optimised(*args))
    monkeypatch.setattr(jit.NativeModule, "arm_preemption", arm_and_look)
    m = rlang.loads(SPIN, backend="llvm")
    y, _, _ = m.spin_(np.zeros(3), np.ones(3), 2)
    [native] = _natives(m)
    assert held_while_running == [True] and native._job._go.is_set()   # started after
    assert native._alone is not None and native._alone > 0
    native.settled()
    assert native._optimising is None and len(native._replaced) == 1
    assert _bits(y) == _bits(np.full(3, 3.0))


def test_on_one_core_a_long_first_call_leaves_the_quick_code_when_its_time_is_up(
        one_core, left_answers, monkeypatch):
    monkeypatch.setattr(jit, "QUICK_ALONE", 0.0)    # its time is up at once
    m = rlang.loads(SPIN, backend="llvm")
    x = np.linspace(0.0, 1.0, 100)
    y, _, _ = m.spin_(np.zeros(100), x, 1_000_000)
    assert left_answers == [True]       # (else the quick code ran 10^8 passes to the end)
    expected = np.zeros(100)
    for _ in range(1_000_000):      # the same additions, in the same order
        expected += x * 0.5 + 1.0
    assert _bits(y) == _bits(expected)


@pytest.mark.parametrize("asked", ["1", None])
def test_the_command_line_waits_for_the_optimised_code_before_it_leaves(
        quick_always, monkeypatch, tmp_path, capsys, asked):
    from rlang import cli

    if asked:       # (else its one-shot commands compile at O3 first)
        monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", asked)
    monkeypatch.setattr(tiers, "_BY_DEFAULT", ["1"])    # (entry() sets it: put back)
    jobs = []
    later = jit.NativeModule.optimise_later
    monkeypatch.setattr(jit.NativeModule, "optimise_later",
                        lambda native, *args: jobs.append(native) or later(native, *args))

    source = tmp_path / "spin.rev"
    source.write_text(SPIN + "\nfunction main()\n    y ← zeros(f64, 3)\n"
                      "    x ← zeros(f64, 3)\n    spin!(y, x, 2)\nend\n")
    optimised = jit.optimised_object
    monkeypatch.setattr(jit, "optimised_object",       # (a slow compile)
                        lambda *args: time.sleep(0.3) or optimised(*args))
    compiling_at_exit = []

    def leave(status):
        compiling_at_exit.append(len(tiers._OPTIMISING))
        raise SystemExit(status)

    monkeypatch.setattr(cli.os, "_exit", leave)
    monkeypatch.setattr(sys, "argv", ["rlang", "run", str(source), "--backend", "llvm"])
    with pytest.raises(SystemExit) as left:
        cli.entry()
    assert left.value.code == 0 and "y = [2.0, 2.0, 2.0]" in capsys.readouterr().out
    assert compiling_at_exit == [0] and list(quick_always.glob("*.rlo"))
    assert len(jobs) == (1 if asked else 0)


#: a recurrence kept in an ancilla array: `logistic!(out!, r, s0, n)`
WORKLOADS = ROOT / "benchmarks" / "llvm" / "workloads.rev"


def test_a_call_that_leaves_frees_its_ancillas_and_runs_again(leaving):
    m = rlang.load(WORKLOADS, backend="llvm")       # s: 160 kB, a kept block's size
    first = m.logistic_(0.0, 3.7, 0.5, 20_000)
    assert leaving == [True]
    expected = rlang.load(WORKLOADS).logistic_(0.0, 3.7, 0.5, 20_000)
    assert _bits(first) == _bits(expected)
    for _ in range(3):                  # its memory went back: taken and given again
        assert _bits(m.logistic_(0.0, 3.7, 0.5, 20_000)) == _bits(expected)
