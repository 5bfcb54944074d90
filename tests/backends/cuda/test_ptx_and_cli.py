"""`rlang compile --emit ptx` and `rlang run/grad --backend cuda` (issue #6).

PTX is emitted by Numba's real CUDA compiler, which cannot share a process with
the simulator these tests use, so every command runs in a child process; the PTX
ones without NUMBA_ENABLE_CUDASIM (no GPU is needed: `--cc` names the target).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from agreement import KERNELS

REPO = KERNELS.parents[4]


def _command(args, simulator: bool, prelude: str = "") -> tuple:
    """(argv, environment) of `rlang ARGS…` in a child process."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(REPO)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    command = ["-m", "rlang.cli", *args] if not prelude else \
        ["-c", f"{prelude}\nimport sys\nfrom rlang.cli import main\nsys.exit(main({list(args)!r}))"]
    return [sys.executable, *command], env


def rlang_cli(*args, simulator: bool, prelude: str = ""):
    """`rlang ARGS…` in a child process (after the Python statements `prelude`)."""
    command, env = _command(args, simulator, prelude)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


class _Started:
    """`rlang ARGS…` started in a child process now; `result()` waits for it."""

    def __init__(self, *args, simulator: bool):
        command, env = _command(args, simulator)
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def result(self) -> subprocess.CompletedProcess:
        out, err = self.proc.communicate(timeout=600)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)


@pytest.fixture(scope="module")
def ptx_builds(tmp_path_factory):
    """The module's three PTX compiles, started together: each keeps one core busy in
    NVVM for 15-50 s, so on CI's two cores they overlap (about 55 s saved)."""
    where = tmp_path_factory.mktemp("ptx")
    (where / "mul_add.rev").write_text(UNFUSED)
    builds = {
        "kernels": _Started("compile", str(KERNELS), "--emit", "ptx", simulator=False),
        "systems": _Started("compile", str(KERNELS.parent / "systems_ptx.rev"), "--emit",
                            "ptx", "--cc", "8.0", "-o", str(where / "systems.ptx"),
                            simulator=False),
        "mul_add": _Started("compile", str(where / "mul_add.rev"), "--emit", "ptx", "--cc",
                            "9.0", "-o", str(where / "mul_add.ptx"), simulator=False),
    }
    yield where, builds
    for build in builds.values():
        build.proc.kill()
        build.proc.communicate()


def test_ptx_has_every_kernel_and_goes_to_stdout_for_7_5(ptx_builds):
    """Without --cc and -o: every kernel for 7.5 (the oldest target of both CUDA 12's
    and CUDA 13's NVVM) on standard output.  (--cc and -o: the tests below.)"""
    done = ptx_builds[1]["kernels"].result()
    assert done.returncode == 0, done.stderr
    text = done.stdout
    sections = text.count("// ---- ")
    assert sections > 28 and text.count(".target sm_75") == sections
    assert "Traceback" not in done.stderr
    headers = [line for line in text.splitlines() if line.startswith("// ---- kernel")]
    kernels = [line for line in headers if line.split()[3].rstrip(":").isalnum()]
    # forward, inverse and both gradient passes of each of the 7 parallel loops
    assert len(kernels) == 7 * 4
    # Note [Privatised gradients on the GPU]: the gradient passes whose loops only add
    # to shared sums have a shared-memory variant, a rows variant and its sums kernel
    variants = {suffix: sum(line.split()[3] .endswith(f"_{suffix}:") for line in headers)
                for suffix in ("shared", "rows", "sums")}
    assert variants["shared"] == variants["rows"] == variants["sums"] >= 2, variants
    assert len(headers) == len(kernels) + 3 * variants["shared"]
    assert text.count(".visible .entry") == len(headers)
    assert "atom.global.add.f64" in text           # the gradients' atomic adds
    assert "atom.shared.add.f64" in text and ".extern .shared" in text
    assert "shfl.sync.down" in text                # warp sums of scalar gradients
    assert "// ---- device function rev_axpy_one__f64_f64_f64" in text


def test_ptx_of_fixed_ulog_and_complex_kernels(ptx_builds):
    """fixed `*` and `/` (64-bit integer code), ulog arithmetic and complex pairs
    compile for the GPU, forward, inverse and gradient."""
    out = ptx_builds[0] / "systems.ptx"
    done = ptx_builds[1]["systems"].result()
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert ".target sm_80" in text and "left out" not in text
    # 4 kernels, and the privatised variants of the gradient of `c`'s loop (Note
    # [Privatised gradients on the GPU]): shared, rows and sums
    assert text.count(".visible .entry") == 4 + 3 * text.count("_shared: @parallel for")
    assert text.count("_shared: @parallel for") == 2
    assert "div.u64" in text                       # the long division of fixed `/`
    assert "atom.global.add.f64" in text           # the gradients of `c`, part by part


UNFUSED = """
function mul_add(y: f64[:], t: f64[:], a: f64[:], x: f64[:], s)
    @parallel for i = 0:length(y) - 1
        t[i] += a[i] * x[i]
        y[i] += t[i] * s + a[i] * 2.5
        t[i] -= a[i] * x[i]
        HADAMARD(y[i], t[i])
    end
end
"""


def test_ptx_products_are_never_fused_into_fma(ptx_builds):
    """Note [No fused multiply-add] (rlang/backends/cuda/device.py): NVVM would fuse
    `t += a * x` into an fma, and `t -= a * x` would then leave the product's rounding
    error in t.  Every product is `mul.rn.f64`, forward, inverse and gradient (this
    program calls no libdevice function, whose own code may use fma)."""
    out = ptx_builds[0] / "mul_add.ptx"
    done = ptx_builds[1]["mul_add"].result()
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    # 4 kernels, and the privatised variants of the gradient of `c`'s loop (Note
    # [Privatised gradients on the GPU]): shared, rows and sums
    assert text.count(".visible .entry") == 4 + 3 * text.count("_shared: @parallel for")
    assert text.count("_shared: @parallel for") == 2
    assert text.count("mul.rn.f64") >= 4 and "fma.rn.f64" not in text


def test_ptx_needs_a_valid_cc():
    done = rlang_cli("compile", str(KERNELS), "--emit", "ptx", "--cc", "seven",
                     simulator=False)
    assert done.returncode == 1 and "MAJOR.MINOR" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("cc", ["1.0", "99.0"])
def test_ptx_for_a_target_nvvm_does_not_compile_for_is_refused(cc):
    """NVVM refuses 1.0; Numba would quietly compile 99.0 for the newest target it
    knows: both are a clear error naming --cc."""
    done = rlang_cli("compile", str(KERNELS), "--emit", "ptx", "--cc", cc, simulator=False)
    assert done.returncode == 1 and done.stderr.startswith(f"error: --cc {cc}:"), done.stderr
    assert "Traceback" not in done.stderr and not done.stdout


@pytest.mark.parametrize("prelude,message", [
    ("import sys\nsys.modules['numba.cuda'] = None", "needs numba-cuda"),
    # NVVM not found: numba-cuda raises NvvmSupportError when its NVVM binding is
    # made (how it looks for the library differs between versions)
    ("import numba.cuda.cudadrv.nvvm as nvvm\n"
     "from numba.cuda.cudadrv.error import NvvmSupportError\n"
     "def missing(cls, *args, **kwargs):\n    raise NvvmSupportError('libNVVM cannot be found')\n"
     "nvvm.NVVM.__new__ = missing", "needs the CUDA toolkit's NVVM"),
])
def test_ptx_without_the_toolkit_is_a_clear_error(prelude, message):
    done = rlang_cli("compile", str(KERNELS), "--emit", "ptx", simulator=False,
                     prelude=prelude)
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert "rlang[cuda]" in done.stderr and "Traceback" not in done.stderr


def test_run_and_grad_on_the_cuda_backend():
    args = ["saxpy", "[0.0, 1.0, 2.0]", "[0.5, 1.0, 1.5]", "2.0"]
    interp = rlang_cli("run", str(KERNELS), *args, "--json", simulator=True)
    cuda = rlang_cli("run", str(KERNELS), *args, "--json", "--backend", "cuda",
                     simulator=True)
    assert cuda.returncode == 0, cuda.stderr
    assert json.loads(cuda.stdout) == json.loads(interp.stdout)
    grad = ["grad", str(KERNELS), "loss", "0.0", "[0.0, 1.0, 2.0]", "[0.5, 1.0, 1.5]",
            "2.0", "--loss", "l", "--json"]
    expected = json.loads(rlang_cli(*grad, simulator=True).stdout)
    got = rlang_cli(*grad, "--backend", "cuda", simulator=True)
    assert got.returncode == 0, got.stderr
    got = json.loads(got.stdout)
    assert got.keys() == expected.keys()
    for name in got:
        assert abs(sum(got[name]) - sum(expected[name])) < 1e-12 if \
            isinstance(got[name], list) else abs(got[name] - expected[name]) < 1e-12


def test_grad_with_the_hessian_on_the_cuda_backend():
    grad = ["grad", str(KERNELS), "loss", "0.0", "[0.0, 1.0, 2.0]", "[0.5, 1.0, 1.5]",
            "2.0", "--loss", "l", "--hessian", "--json"]
    expected = json.loads(rlang_cli(*grad, simulator=True).stdout)
    got = rlang_cli(*grad, "--backend", "cuda", simulator=True)
    assert got.returncode == 0, got.stderr
    got = json.loads(got.stdout)
    assert got.keys() == expected.keys() and "hessian" in got
    for name in got:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, atol=1e-12)


def test_run_with_complex_arguments_on_the_cuda_backend():
    args = ["run", str(KERNELS.parent / "systems.rev"), "complex_instructions",
            "[[1.0+2.0im, 0.5im], [3.0, -1.0-1.0im]]", "0.5+0.25im", "--json"]
    cuda = rlang_cli(*args, "--backend", "cuda", simulator=True)
    assert cuda.returncode == 0, cuda.stderr
    assert json.loads(cuda.stdout) == json.loads(rlang_cli(*args, simulator=True).stdout)


@pytest.mark.skipif(os.environ.get("RLANG_CUDA_REAL", "0") not in ("", "0"),
                    reason="on a GPU (RLANG_CUDA_REAL=1) the kernels run")
def test_kernels_without_a_gpu_or_simulator_are_a_clear_error():
    done = rlang_cli("run", str(KERNELS), "saxpy", "[0.0]", "[1.0]", "2.0",
                     "--backend", "cuda", simulator=False)
    assert done.returncode == 1 and "NUMBA_ENABLE_CUDASIM" in done.stderr
    assert "Traceback" not in done.stderr
