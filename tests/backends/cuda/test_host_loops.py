"""Host functions that loop, with no `@parallel for` beneath them, compiled for the
CPU by Numba instead of running as Python (Note [Host loops compiled],
rlang/backends/cuda/host_loops.py): they agree with the interpreter forward,
backward and in gradients, in every number system, fail with the interpreter's
errors, and fall back to Python where Numba cannot compile them."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import rlang
from rlang.backends.cuda import host_loops
from rlang.backends.cuda.host_loops import CpuFunction
from rlang.numbers import fixed_array

SOURCE = """
function prefix(y: f64[:], x: f64[:])
    for i = 1:length(x) - 1
        y[i] += y[i - 1] + x[i] * x[i]
    end
end

function both(y: f64[:], x: f64[:], w)
    prefix(y, x)
    @parallel for i = 0:length(x) - 1
        y[i] += w * x[i]
    end
end

function spin(z: complex[:], f: fixed[:], k: i32)
    for i = 0:length(z) - 1
        z[i] += (1.0 + 2.0im) * f64(f[i])
        f[i] += fixed(k)
    end
end

function halve(y: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        t ← x[i] * 0.5
        y[i] += t
        t → 0.5
    end
end

function inline(y: f64[:], x: f64[:], w, s)
    for i = 1:length(x) - 1
        y[i] += y[i - 1] + x[i] * x[i] * w
        s += x[i]
    end
    @parallel for i = 0:length(x) - 1
        y[i] += w * x[i]
    end
    if s > 0.0
        for i = 0:length(x) + 1
            y[i] += x[i]
        end
    end
end

function shout(y: f64[:])
    for i = 0:length(y) - 1
        y[i] += 1.0
    end
    @safe print(y)
end
"""

CUDA, INTERP = (rlang.loads(SOURCE, backend=b) for b in ("cuda", "interp"))


@pytest.fixture(autouse=True)
def compiled_from_the_first_call(monkeypatch):
    """Every call takes the compiled code (small calls run as Python first)."""
    monkeypatch.setattr(host_loops, "COMPILE_FROM_ELEMENTS", 0)


def _program(name: str, derivative: str = ""):
    return next(p for key, p in CUDA.compiled._programs.items()
                if key[0] == name and key[3] == derivative and not key[2])


def test_functions_that_loop_without_kernels_are_compiled():
    x = np.linspace(0.0, 1.0, 50)
    CUDA.both(np.zeros(50), x, 0.5)
    program = _program("both")
    assert program.program.cpu == ["rev_prefix__f64a1u_f64a1u"]
    compiled = program.space["H_rev_prefix__f64a1u_f64a1u"]
    assert isinstance(compiled, CpuFunction) and compiled.failure is None and compiled.used
    assert not isinstance(program.space["H_rev_both__f64a1u_f64a1u_f64"], CpuFunction)
    CUDA.shout(np.zeros(3))     # prints: stays Python, its loop taken out and compiled
    shout = _program("shout")
    assert shout.program.cpu == ["rev_shout__f64a1u__loop0"]
    assert not isinstance(shout.space["H_rev_shout__f64a1u"], CpuFunction)


def test_calls_inverses_and_gradients_agree_with_the_interpreter():
    x = np.linspace(0.0, 1.0, 50)
    for module in (CUDA, INTERP):
        module.both(np.zeros(50), x, 0.5)
    np.testing.assert_allclose(CUDA.both(np.zeros(50), x, 0.5)[0],
                               INTERP.both(np.zeros(50), x, 0.5)[0], rtol=1e-13)
    y = INTERP.both(np.zeros(50), x, 0.5)[0]
    np.testing.assert_allclose((~CUDA.both)(y.copy(), x, 0.5)[0], np.zeros(50), atol=1e-12)
    got = rlang.gradient(CUDA.both, (np.zeros(50), x, 0.5), loss="y[49]")
    expected = rlang.gradient(INTERP.both, (np.zeros(50), x, 0.5), loss="y[49]")
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    assert _program("both", "grad").program.cpu == ["rev_grad_inv_prefix__f64a1u_f64a1u"]


def test_loops_inline_in_functions_that_launch_are_taken_out_and_compiled():
    """`inline`'s first loop becomes a function of its own, compiled; `s`, which it
    writes, comes back; its second loop (in an `if`) fails at the interpreter's place,
    with the interpreter's message and call chain."""
    x = np.linspace(0.0, 1.0, 20)
    got = CUDA.inline(np.zeros(20), x, 0.5, -100.0)
    expected = INTERP.inline(np.zeros(20), x, 0.5, -100.0)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-13)
    assert got[3] == pytest.approx(expected[3], rel=1e-13)
    program = _program("inline")
    assert sorted(program.program.outlined.values()) == program.program.cpu == [
        "rev_inline__f64a1u_f64a1u_f64_f64__loop0", "rev_inline__f64a1u_f64a1u_f64_f64__loop1"]
    assert program.space["H_rev_inline__f64a1u_f64a1u_f64_f64__loop0"].used
    errors = []
    for module in (INTERP, CUDA):
        with pytest.raises(rlang.RlangError) as caught:
            module.inline(np.zeros(20), x, 0.5, 0.0)
        errors.append(caught.value)
    assert str(errors[1]) == str(errors[0])
    assert errors[1].span == errors[0].span
    grads = rlang.gradient(CUDA.inline, (np.zeros(20), x, 0.5, -100.0), loss="y[19]")
    expected = rlang.gradient(INTERP.inline, (np.zeros(20), x, 0.5, -100.0), loss="y[19]")
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_complex_and_fixed_arrays():
    f = fixed_array(np.linspace(-1.0, 1.0, 7))
    got = CUDA.spin(np.zeros(7, dtype=complex), f.copy(), 3)
    expected = INTERP.spin(np.zeros(7, dtype=complex), f.copy(), 3)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(expected[1]))
    assert _program("spin").space[f"H_{_program('spin').program.cpu[0]}"].failure is None


def test_a_failed_check_is_the_interpreters_error():
    x = np.ones(9)
    x[4] = 3.0
    errors = []
    for module in (INTERP, CUDA):
        with pytest.raises(rlang.RlangError) as caught:
            module.halve(np.zeros(9), x)
        errors.append(caught.value)
    assert _program("halve").program.cpu
    assert type(errors[1]) is type(errors[0])
    assert errors[1].message == errors[0].message
    assert errors[1].span == errors[0].span


def test_what_numba_cannot_compile_runs_as_python():
    from numba.core.errors import TypingError

    def refused(*args):
        raise TypingError("no implementation")

    calls = []

    def python(ctx, ctxf, *args):
        calls.append(args)
        return (0,)

    function = CpuFunction(refused, python, [])
    function.spent = host_loops.COMPILE_AFTER_SECONDS
    assert function(None, None, 1.0) == (0,) and function(None, None, 2.0) == (0,)
    assert function.failure == "TypingError: no implementation" and len(calls) == 2

    def broken(*args):
        raise ZeroDivisionError("not Numba's")

    function = CpuFunction(broken, python, [])
    function.spent = host_loops.COMPILE_AFTER_SECONDS
    with pytest.raises(ZeroDivisionError):
        function(None, None)


def test_small_calls_run_as_python_until_they_have_cost_enough(monkeypatch):
    monkeypatch.setattr(host_loops, "COMPILE_FROM_ELEMENTS", 4096)
    module = rlang.loads(SOURCE, backend="cuda")
    x = np.linspace(0.0, 1.0, 10)
    module.prefix(np.zeros(10), x)
    program = next(p for key, p in module.compiled._programs.items() if key[0] == "prefix")
    function = program.space[f"H_{program.program.cpu[0]}"]
    assert not function.used and 0.0 < function.spent < host_loops.COMPILE_AFTER_SECONDS
    function.spent = host_loops.COMPILE_AFTER_SECONDS        # as after many calls
    y = module.prefix(np.zeros(10), x)[0]
    assert function.used
    np.testing.assert_allclose(y, INTERP.prefix(np.zeros(10), x)[0], rtol=1e-13)
    fresh = rlang.loads(SOURCE, backend="cuda")
    fresh.prefix(np.zeros(5000), np.ones(5000))         # a large call: compiled at once
    program = next(p for key, p in fresh.compiled._programs.items() if key[0] == "prefix")
    assert program.space[f"H_{program.program.cpu[0]}"].used


DEEP = """
function helper(y: f64[:])
    for i = 0:length(y) - 1
        y[i] += 1.0
    end
end

function rec(y: f64[:], n: i64)
    if n > 0
        rec(y, n - 1)
    end
    helper(y)
end
"""


def test_functions_on_a_chain_through_recursion_stay_python():
    """`helper` counts the call depth (it is called from a recursive function), so
    it is not compiled: the depth limit is reached at the interpreter's call."""
    errors = []
    for backend in ("interp", "cuda"):
        module = rlang.loads(DEEP, backend=backend)
        module.interpreter.max_depth = 5
        if backend == "cuda":
            module.compiled.interpreter.max_depth = 5
        with pytest.raises(rlang.RlangError) as caught:
            module.rec(np.zeros(3), 4)
        errors.append(caught.value)
    assert errors[1].message == errors[0].message and "depth" in errors[0].message
    program = next(p for key, p in module.compiled._programs.items() if key[0] == "rec")
    assert program.program.cpu == []


def test_without_numba_cuda_host_code_stays_python(tmp_path):
    script = tmp_path / "bare.py"
    script.write_text(
        "import sys\n"
        "sys.modules['numba.cuda'] = None\n"
        "import numpy as np, rlang\n"
        "from rlang.backends.cuda import host_loops\n"
        "host_loops.COMPILE_FROM_ELEMENTS = 0\n"
        f"m = rlang.loads({SOURCE!r}, backend='cuda')\n"
        "y, _ = m.prefix(np.zeros(4), np.array([1.0, 2.0, 3.0, 4.0]))\n"
        "print(y.tolist())\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.0, 4.0, 13.0, 29.0]"
