"""saddle's input: the start point of every descent (GradBench's eval sends (1, 1)).

"small" starts where every descent stops after its first gradient (a step of
1e-5·2|s| is then at most 1e-5): the PyTorch baseline's nested transforms run
eagerly, far too slow for the tests at (1, 1) (tests/gradbench/test_gradbench_saddle.py
compares rlang with JAX there)."""

SIZES = {"small": {"start": (0.3, 0.3)}, "default": {"start": (1.0, 1.0)}}


def generate(*, seed: int = 0, start=(1.0, 1.0)) -> dict:
    """``{"start": [s₀, s₁]}`` (`seed` is unused: the eval has one input)."""
    return {"start": [float(v) for v in start]}
