"""benchmarks/gpu/run.py stays ready to run on a GPU (issue #6): its `--smoke` mode
runs every workload at toy sizes under Numba's simulator, checking the cuda backend
against the llvm backend and JAX; without JAX it skips that column."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from agreement import KERNELS

REPO = KERNELS.parents[4]
SCRIPT = REPO / "benchmarks" / "gpu" / "run.py"


def smoke(*prelude: str):
    """Run `run.py --smoke` in a child process under the simulator, after `prelude`
    (Python statements, e.g. hiding JAX)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(REPO))
    code = "; ".join(prelude + ("import runpy, sys", f"sys.argv = [{str(SCRIPT)!r}, '--smoke']",
                                f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')"))
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def table(stdout: str) -> list:
    lines = stdout.splitlines()
    head = next(k for k, line in enumerate(lines) if line.startswith("workload"))
    return [line for line in lines[head + 1:] if line.strip()]


def test_smoke_mode_checks_every_workload_against_llvm_and_jax():
    done = smoke()
    assert done.returncode == 0, done.stderr
    assert "checked BA Jacobian, toy (21 obs): cuda = llvm = JAX" in done.stdout
    assert "checked GMM gradient, d=3 K=4 n=13: cuda = llvm = JAX" in done.stdout
    rows = table(done.stdout)
    assert [row.split(",")[0] for row in rows] == ["BA Jacobian", "GMM gradient"]
    for row in rows:                        # four figures and two ratios, none skipped
        figures = row.split()[-5:]
        assert "-" not in figures and all(float(f) >= 0 for f in figures), row
    # rlang.cuda.stats() of one call: what the workloads cost today (NumPy arguments
    # resident through each gradient pass; the BA Jacobian's two rows in one pass
    # with two lanes, Note [Gradient lanes]), so that a change in the launches and
    # copies shows here.  Before the lanes: BA 6 launches, 10 copies up (6,720 bytes)
    # and 20 back (12,800); before the arrays stayed resident: BA 4 launches (one per
    # row and pass), 24 copies up (19,152 bytes) and 28 back (19,184); GMM 2, 15
    # (1,920) and 17 (1,936)
    counts = dict(re.match(r"\s+(.+?)\s{2,}(launches .*)$", line).groups()
                  for line in done.stdout.splitlines()
                  if line.startswith("  ") and "launches " in line)
    assert counts == {"BA Jacobian, toy (21 obs)": "launches 3, htod_copies 6, "
                      "dtoh_copies 14, htod_bytes 3528, dtoh_bytes 9592",
                      "GMM gradient, d=3 K=4 n=13": "launches 3, htod_copies 6, "
                      "dtoh_copies 12, htod_bytes 744, dtoh_bytes 1296"}, counts
    # the timeline of the same calls (rlang.cuda.timeline()): kernels are timed on a GPU
    timelines = re.findall(r"^  (BA Jacobian|GMM gradient).*?\s{2,}wall [0-9.]+ ms: "
                           r"kernels not timed \(the simulator times nothing\); "
                           r"3 launches, 6 copies up, (\d+) back$", done.stdout, re.M)
    assert timelines == [("BA Jacobian", "14"), ("GMM gradient", "12")], done.stdout


def test_smoke_mode_without_jax_skips_its_column():
    done = smoke("import sys", "sys.modules['jax'] = None")
    assert done.returncode == 0, done.stderr
    assert "JAX is not installed" in done.stdout
    assert "checked BA Jacobian, toy (21 obs): cuda = llvm\n" in done.stdout
    for row in table(done.stdout):
        assert row.split()[-1] == "-" and row.split()[-3] == "-", row


def test_a_disagreement_stops_the_benchmark():
    spec = importlib.util.spec_from_file_location("gpu_run", SCRIPT)
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    good = [np.linspace(1.0, 2.0, 6).reshape(2, 3)]
    run.check_agreement("same", good, [good[0].copy()], [good[0] * (1 + 1e-12)])
    bad = [good[0].copy()]
    bad[0][1, 2] += 1e-6
    with pytest.raises(SystemExit, match="llvm disagree"):
        run.check_agreement("llvm off", good, bad, None)
    with pytest.raises(SystemExit, match="JAX disagree"):
        run.check_agreement("JAX off", good, [good[0]], bad)
    with pytest.raises(SystemExit, match="llvm disagree"):      # a wrong shape
        run.check_agreement("shape", good, [good[0][:1]], None)
