"""Calls' builtins kept in the disk cache (Note [Builtins kept on disk],
rlang/backends/llvm/call_builtins.py): a warm process makes a function's and a
gradient's builtins without LLVM and gets the cold process's bits; builtins with
the same code share it and keep their own tables; MCJIT's object code serves where
modules are not linked."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rlang

pytest.importorskip("llvmlite")

from rlang.backends.llvm import call_builtins, shared_code  # noqa: E402

SOURCE = """
function dot!(s!: f64, x: f64[:], w: f64[:])
    for i = 0:length(x) - 1
        s! += x[i] * w[i]
    end
end

function wdot!(s!: f64, x: f64[:], w: f64[:])
    for i = 0:length(x) - 1
        s! += 2.0 * x[i] * w[i] + 1.0
    end
end
"""

#: three calls of dot! and of its gradient in a fresh process; prints their results
#: (as bytes, hex), which of llvmlite's modules were imported, and the kinds of the
#: builtins' loaded code
CALLS = f"""
import json, sys
import numpy as np
import rlang
from rlang.backends.llvm import call_builtins
m = rlang.loads({SOURCE!r}, backend="llvm", invcheck=False)
x, w = np.arange(5.0) - 1.5, np.linspace(-1.0, 2.0, 5)
grad = rlang.grad(m["dot!"], "s!", argnums=(1, 2))
results = []
for _ in range(3):
    results.append(np.float64(m["dot!"](0.0, x, w)[0]).tobytes().hex())
    results.append([g.tobytes().hex() for g in grad(0.0, x, w)])
print(json.dumps({{"results": results,
                   "binding": "llvmlite.binding" in sys.modules,
                   "ir": "llvmlite.ir" in sys.modules,
                   "builtins": len(m.compiled.call_builtins),
                   "kinds": sorted(type(code).__name__
                                   for code in call_builtins._LOADED.values())}}))
"""


def _calls(cache, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", CALLS], capture_output=True, text=True,
                          env=dict(os.environ, RLANG_CACHE_DIR=str(cache), **env),
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(shared_code.linker() is None,
                    reason="modules are linked only where `ld` is (Linux)")
def test_a_warm_process_makes_its_builtins_without_llvm(tmp_path):
    cold = _calls(tmp_path)
    assert cold["binding"] and cold["builtins"] == 1
    assert cold["kinds"] == ["SharedCode", "SharedCode"]      # the call's, the gradient's
    warm = _calls(tmp_path)
    assert not warm["binding"] and not warm["ir"]
    assert warm["builtins"] == 1 and warm["kinds"] == cold["kinds"]
    assert warm["results"] == cold["results"]
    x, w = np.arange(5.0) - 1.5, np.linspace(-1.0, 2.0, 5)
    assert warm["results"][-1] == [w.tobytes().hex(), x.tobytes().hex()]


def test_builtins_compiled_for_mcjit_are_kept_too(tmp_path):
    cold = _calls(tmp_path, RLANG_SHARED_CODE="0")
    warm = _calls(tmp_path, RLANG_SHARED_CODE="0")
    assert cold["kinds"] == warm["kinds"] == ["ExecutionEngine", "ExecutionEngine"]
    assert warm["results"] == cold["results"] and warm["builtins"] == 1


def test_builtins_of_one_code_keep_their_own_tables(tmp_path, monkeypatch):
    """dot! and wdot! take the same kinds of arguments: their builtins are one code,
    each running its own entry point."""
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(call_builtins, "_LOADED", {})
    m = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    x, w = np.arange(5.0) - 1.5, np.linspace(-1.0, 2.0, 5)
    for _ in range(3):
        assert m["dot!"](0.0, x, w)[0] == sum(a * b for a, b in zip(x, w))
        assert m["wdot!"](0.0, x, w)[0] == sum(2.0 * a * b + 1.0 for a, b in zip(x, w))
    assert set(m.compiled.call_builtins) == {("dot!", False), ("wdot!", False)}
    assert len(call_builtins._LOADED) == 1
    one, two = (m.compiled.call_builtins[(name, False)][0] for name in ("dot!", "wdot!"))
    assert one.__self__[1] is two.__self__[1]              # the code
    assert not np.array_equal(one.__self__[0], two.__self__[0])   # the tables
