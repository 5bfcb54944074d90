"""The cuda backend's tests run kernels in Numba's CUDA simulator.

NUMBA_ENABLE_CUDASIM is read when numba.cuda is first imported, so it is set here,
before any test imports it (no other test of the suite imports numba.cuda).  On a
machine with a GPU, `RLANG_CUDA_REAL=1` runs the same tests on the GPU instead.
PTX is emitted in a child process (tests/backends/cuda/test_ptx.py): the simulator and the
real compiler cannot share one process.
"""
import os
import sys

if os.environ.get("RLANG_CUDA_REAL", "0") in ("", "0"):
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("numba.cuda was imported before tests/backends/cuda set up the simulator")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
