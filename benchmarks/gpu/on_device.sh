#!/usr/bin/env bash
# The GPU check of issue #28, as one short run for a machine with an NVIDIA GPU
# (docs/cuda.md, "Tests and benchmarks on a GPU"): the cuda tests on the real GPU,
# then benchmarks/gpu/run.py at all four sizes (timelines included) and once in
# deterministic mode.  Results go to $OUT (default /tmp/rlang-gpu).  Wheels in .whl/
# (NumPy 2.4 for numba-cuda 0.30.4, lark, prompt-toolkit) are installed first when
# the directory is there.
set -u
OUT="${OUT:-/tmp/rlang-gpu}"
mkdir -p "$OUT"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
RLANG_CUDA_REAL=1 timeout "${TESTS_SECONDS:-300}" python3 -m pytest -n 16 -rf --tb=short \
    -p no:cacheprovider tests/backends/cuda > "$OUT/tests.txt" 2>&1
echo "tests: exit $?" >> "$OUT/summary.txt"
timeout "${BENCH_SECONDS:-240}" python3 benchmarks/gpu/run.py --check --repeat 3 \
    > "$OUT/bench.txt" 2>&1
echo "bench: exit $?" >> "$OUT/summary.txt"
RLANG_CUDA_DETERMINISTIC=1 timeout 120 python3 benchmarks/gpu/run.py --quick --repeat 3 \
    > "$OUT/bench-deterministic.txt" 2>&1
echo "deterministic bench: exit $?" >> "$OUT/summary.txt"
tail -n 3 "$OUT/tests.txt" "$OUT/bench.txt" "$OUT/bench-deterministic.txt"
