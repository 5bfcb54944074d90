"""particle's input: the starting control parameter w (GradBench's eval sends 0).

"small" starts next to the optimum, where the descent stops after one gradient: the
PyTorch baseline's nested transforms run eagerly, about a second per trajectory, too
slow for the tests at w = 0 (tests/gradbench/test_gradbench_particle.py compares
rlang with JAX there)."""

SIZES = {"small": {"w": 0.207}, "default": {"w": 0.0}}


def generate(*, seed: int = 0, w: float = 0.0) -> dict:
    """``{"w": w}`` (`seed` is unused: the eval has one input)."""
    return {"w": float(w)}
