"""With RLANG_QUICK_FIRST_CALL=1, a big module's first call runs quickly compiled
code while its optimised code is compiled on a thread; later calls run the optimised
code (Note [A quick first call], rlang/backends/llvm/jit.py).  The two tiers give
the same bits."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang import RlangError

pytest.importorskip("llvmlite")

from rlang.backends.llvm import jit  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden" / "outputs"
#: every fifth program of the golden outputs that has a main
PROGRAMS = sorted(p for p in GOLDEN.glob("*.rev") if "function main(" in p.read_text())[::5]


@pytest.fixture
def quick_always(monkeypatch, tmp_path):
    """Every module takes the quick first tier; an empty disk cache."""
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "1")
    monkeypatch.setattr(jit, "QUICK_TIER_BYTES", 0)
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


def test_only_asked_for_and_only_big_modules_without_recursion_take_the_quick_tier(
        monkeypatch, tmp_path):
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    big = "x" * (jit.QUICK_TIER_BYTES + 1)
    monkeypatch.delenv("RLANG_QUICK_FIRST_CALL", raising=False)
    assert not jit.quick_first_call(big, recursive=False)       # not the default
    monkeypatch.setenv("RLANG_QUICK_FIRST_CALL", "1")
    assert jit.quick_first_call(big, recursive=False)
    assert not jit.quick_first_call(big, recursive=True)
    assert not jit.quick_first_call("x" * jit.QUICK_TIER_BYTES, recursive=False)
    monkeypatch.setattr(jit, "QUICK_TIER_BYTES", 0)
    m = rlang.load(ROOT / "examples" / "fibonacci.rev", backend="llvm")
    assert m.rrfib(0, 10) == (89, 10)
    assert all(n._optimising is None and not n._replaced for n in _natives(m))


def test_a_process_that_ends_during_the_optimisation_waits_for_it(tmp_path):
    code = ("import rlang, rlang.backends.llvm.jit as jit\n"
            "jit.QUICK_TIER_BYTES = 0\n"
            "m = rlang.loads('function f(y!, x)\\n    y! += x * x\\nend\\n', backend='llvm')\n"
            "print(m.f(1.0, 3.0))\n")
    env = dict(os.environ, RLANG_CACHE_DIR=str(tmp_path), RLANG_QUICK_FIRST_CALL="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(10.0, 3.0)" and not done.stderr
    assert len(list(tmp_path.glob("*.rlo"))) == 1     # the wait filled the cache
