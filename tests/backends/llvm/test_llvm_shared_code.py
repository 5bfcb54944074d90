"""Compiled modules as shared libraries (Note [Code without LLVM],
rlang/backends/llvm/shared_code.py): a call whose code all comes from the disk cache
loads no LLVM; the library and MCJIT give the same bits; each loaded module has its
own hooks, a library opened twice included; a missing or damaged library is made
again; without a linker, modules load through MCJIT as before."""
from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rlang

pytest.importorskip("llvmlite")

from rlang.backends.llvm import jit, shared_code  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
GMM = ROOT / "benchmarks" / "gradbench" / "evals" / "gmm.rev"
needs_linker = pytest.mark.skipif(shared_code.linker() is None,
                                  reason="modules are linked only where `ld` is (Linux)")

PRINTS = """function f(y!, x)
    y! += x * x
    @safe print("y is", y!)
end
"""

#: GMM's first gradient in a fresh process; prints the gradients (as bytes, hex),
#: whether llvmlite's binding was imported, and the loaded code's kinds
WARM_CALL = f"""
import json, sys
import numpy as np
import rlang
rng = np.random.default_rng(0)
d, k, n = 3, 4, 20
args = (0.0, rng.standard_normal(k), rng.random((k, d)), rng.standard_normal((k, d)),
        rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), 1.0, 0)
m = rlang.load({str(GMM)!r}, backend="llvm", invcheck=False)
grads = rlang.grad(m["gmm_objective!"], "err!", argnums=(1, 2, 3, 4))(*args)
kinds = sorted(type(native.settled().engine).__name__
               for native in m.compiled._modules.values())
print(json.dumps({{"grads": [g.tobytes().hex() for g in grads],
                   "llvm": "llvmlite.binding" in sys.modules, "kinds": kinds}}))
"""


def _warm_call(cache: Path, **env) -> dict:
    done = subprocess.run([sys.executable, "-c", WARM_CALL], capture_output=True, text=True,
                          env=dict(os.environ, RLANG_CACHE_DIR=str(cache), **env),
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty disk cache."""
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    return tmp_path


def _natives(module) -> list:
    return list(module.compiled._modules.values())


def _bits(values) -> list:
    return [struct.pack("<d", v) if isinstance(v, float) else
            v.tobytes() if isinstance(v, np.ndarray) else v for v in values]


@needs_linker
def test_a_call_from_the_disk_cache_loads_no_llvm_and_gives_the_compiled_bits(tmp_path):
    cold = _warm_call(tmp_path)
    assert cold["llvm"] and cold["kinds"] == ["SharedCode"]
    assert sorted(p.suffix for p in tmp_path.glob("*.so")) == [".so", ".so"]  # (and the
    warm = _warm_call(tmp_path)                                              # kept blocks')
    assert not warm["llvm"] and warm["kinds"] == ["SharedCode"]
    assert warm["grads"] == cold["grads"]


@needs_linker
def test_the_library_and_mcjit_give_the_same_bits(tmp_path):
    linked = _warm_call(tmp_path / "linked")
    jitted = _warm_call(tmp_path / "jitted", RLANG_SHARED_CODE="0")
    assert jitted["kinds"] == ["ExecutionEngine"] and jitted["llvm"]
    assert not list((tmp_path / "jitted").glob("*.so"))
    assert jitted["grads"] == linked["grads"]
    again = _warm_call(tmp_path / "jitted", RLANG_SHARED_CODE="0")     # MCJIT from the cache
    assert again["kinds"] == ["ExecutionEngine"] and again["grads"] == linked["grads"]


@needs_linker
def test_a_library_opened_twice_gives_each_module_hooks_of_its_own(cache):
    first, second = rlang.loads(PRINTS, backend="llvm"), rlang.loads(PRINTS, backend="llvm")
    assert first.f(1.0, 2.0) == (5.0, 2.0)
    assert second.f(2.0, 1.0) == (3.0, 1.0)        # from the disk cache: the same library
    [one], [two] = _natives(first), _natives(second)
    assert one._code.engine.path == two._code.engine.path      # one library, opened twice
    assert one._code.engine.library._handle != two._code.engine.library._handle
    one.out, two.out = io.StringIO(), io.StringIO()
    first.f(0.0, 3.0)
    second.f(0.0, 4.0)
    first.f(1.0, 1.0)
    assert one.out.getvalue() == "y is 9.0\ny is 2.0\n"
    assert two.out.getvalue() == "y is 16.0\n"


@needs_linker
def test_a_missing_library_is_linked_again_and_a_damaged_one_rebuilt(cache):
    assert rlang.loads(PRINTS, backend="llvm").f(1.0, 2.0) == (5.0, 2.0)
    [library] = [p for p in cache.glob("*.so")
                 if p.with_suffix(".rlo").exists()]
    library.unlink()
    assert rlang.loads(PRINTS, backend="llvm").f(1.0, 3.0) == (10.0, 3.0)
    assert library.exists()
    library.write_bytes(b"not a library")
    again = rlang.loads(PRINTS, backend="llvm")
    assert again.f(1.0, 3.0) == (10.0, 3.0)
    [native] = _natives(again)
    assert type(native._code.engine).__name__ == "SharedCode"
    assert library.read_bytes()[:4] == b"\x7fELF"


def test_without_a_linker_modules_are_relocated_by_mcjit(cache, monkeypatch):
    monkeypatch.setattr(shared_code, "_LINKER", [None])
    m = rlang.loads(PRINTS, backend="llvm")
    assert m.f(1.0, 2.0) == (5.0, 2.0)
    [native] = _natives(m)
    assert type(native._code.engine).__name__ == "ExecutionEngine"
    assert not list(cache.glob("*.so"))
    again = rlang.loads(PRINTS, backend="llvm")     # the MCJIT object from the cache
    assert again.f(1.0, 2.0) == (5.0, 2.0)


def test_a_library_that_fails_to_link_leaves_the_module_to_mcjit(cache, monkeypatch):
    monkeypatch.setattr(shared_code, "_LINKER", ["/bin/false"] if Path("/bin/false").exists()
                        else [str(cache / "no-such-linker")])
    m = rlang.loads(PRINTS, backend="llvm")
    assert m.f(1.0, 2.0) == (5.0, 2.0)
    [native] = _natives(m)
    assert type(native._code.engine).__name__ == "ExecutionEngine"
    assert not list(cache.glob("*.so")) and not list(cache.glob(".link-*"))


@needs_linker
def test_kept_blocks_work_where_their_routines_are_relocated_by_mcjit(tmp_path):
    program = f"""
import numpy as np, rlang
from rlang.backends.llvm import kept_blocks
m = rlang.load({str(ROOT / "benchmarks" / "llvm" / "workloads.rev")!r}, backend="llvm",
               invcheck=False)
out = m["logistic!"](0.0, 3.7, 0.3, 1 << 18)
print(type(kept_blocks._LOADED[0]).__name__, kept_blocks.kept_bytes() > 0, repr(out[0]))
"""
    outputs = []
    for linked in ("1", "0"):
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                              env=dict(os.environ, RLANG_CACHE_DIR=str(tmp_path / linked),
                                       RLANG_SHARED_CODE=linked), timeout=600)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert outputs[0][:2] == ["SharedCode", "True"]
    assert outputs[1][:2] == ["ExecutionEngine", "True"]
    assert outputs[0][2] == outputs[1][2]


def test_the_host_s_cache_key_needs_no_llvm_on_linux():
    key = jit.host_cpu()
    assert key == jit.host_cpu()
    if sys.platform.startswith("linux") and jit._cpuinfo() is not None:
        assert key.startswith("cpuinfo:")
