"""det's inputs: an ℓ × ℓ matrix A with entries uniform in [0, 1), flattened in
row-major order, and its edge ℓ, as GradBench's eval draws them."""

from __future__ import annotations

import numpy as np

#: "default" is GradBench's ℓ = 9 (it runs ℓ = 5 … 11)
SIZES = {"small": {"ell": 4}, "default": {"ell": 9}}


def generate(*, seed: int = 0, ell: int) -> dict:
    """``{"A": ℓ² floats in [0, 1), "ell": ℓ}``; ℓ ≥ 1."""
    if ell < 1:
        raise ValueError(f"det needs ell >= 1, not {ell}")
    rng = np.random.default_rng(seed)
    return {"A": rng.random(ell * ell).tolist(), "ell": int(ell)}


def expansion_plan(ell: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The tree of the expansion by minors along the first row, level by level, for
    the baselines to vectorise: entry k (row k of A) is ``(take, sign)``, two arrays
    of shape (ℓ!/(ℓ−k)!, ℓ−k): row b lists, for each child j of node b of level k
    (a minor of the last ℓ−k rows), the column of A that child removes, and
    ``(-1)^j``.  Node b·(ℓ−k) + j of level k + 1 is that child.

    Note [Expansion by minors, vectorised]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    det M = Σ_j (-1)^j M[0, j] det S_j, recursively, is a tree whose leaves are the
    ℓ! signed products of the permutation expansion.  Carrying the product of the
    factors chosen so far down the tree (coef of a child = coef of its parent ·
    (-1)^j A[k, take]) forms each level with one gather and one multiplication over
    the whole level, and det A is the sum of the last level: the same products as the
    recursion (and as evals/det.rev, which carries the same coefficient down its
    calls), without a Python call per minor.  The levels hold about e·ℓ! indices
    and products in all (ℓ = 9: 1 M; ℓ = 10: 10 M), so the baselines are meant for
    ℓ ≤ 10; rlang's recursion needs no memory beyond ℓ indices."""
    plan = []
    columns = np.arange(ell, dtype=np.int64)[None, :]     # the columns of each node
    for k in range(ell):
        m = ell - k
        sign = np.tile((-1.0) ** np.arange(m), (columns.shape[0], 1))
        plan.append((columns, sign))
        if m == 1:
            break
        keep = np.array([[c for c in range(m) if c != j] for j in range(m)],
                        dtype=np.int64).reshape(m, m - 1)
        columns = columns[:, keep].reshape(-1, m - 1)
    return plan
