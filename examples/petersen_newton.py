"""Train the k = 5 embedding of the Petersen graph by Newton's method, with the
gradient and the Hessian of examples/petersen.rev computed by rlang (reverse mode
by running the inverse program; the Hessian forward over reverse).

    python examples/petersen_newton.py [--seed S] [--noise E] [--iterations N]

The start is the exact solution (the projection of the vertices on the eigenvalue-1
eigenspace of the adjacency matrix, scaled so that connected vertices are at
distance 1) plus Gaussian noise of size E.  Each step solves (H + mu I) dx = -g over
the 50 coordinates (Levenberg-Marquardt damping: the loss is invariant under
translations and rotations, so H is singular), accepts it if the loss decreases
(then mu /= 10) or retries with mu *= 10.  It stops when the loss is below 1e-8 and
prints the mean distances of connected and disconnected pairs and their ratio,
which is sqrt(2).
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

import rlang

HERE = Path(__file__).resolve().parent
K = 5


def petersen_adjacency() -> np.ndarray:
    """Outer 5-cycle 0..4, spokes i -- i + 5, inner pentagram 5 + i -- 5 + (i + 2) % 5."""
    adj = np.zeros((10, 10), dtype=np.int64)
    for i in range(5):
        for a, b in ((i, (i + 1) % 5), (i, i + 5), (5 + i, 5 + (i + 2) % 5)):
            adj[a, b] = adj[b, a] = 1
    return adj


def exact_solution(adj: np.ndarray) -> np.ndarray:
    """Rows of an orthonormal basis of the eigenvalue-1 eigenspace of adj (5-dim),
    scaled so that connected vertices are at distance 1."""
    w, v = np.linalg.eigh(adj.astype(float))
    u = v[:, np.isclose(w, 1.0)]
    i, j = np.argwhere(adj)[0]
    return u / np.linalg.norm(u[i] - u[j])


def distance_means(x: np.ndarray, adj: np.ndarray) -> tuple[float, float]:
    i, j = np.triu_indices(len(x), 1)
    d = np.linalg.norm(x[i] - x[j], axis=1)
    connected = adj[i, j] == 1
    return float(d[connected].mean()), float(d[~connected].mean())


def train(x: np.ndarray, adj: np.ndarray, module=None, tol: float = 1e-8,
          max_iterations: int = 20, mu: float = 1e-4, log=print) -> list[float]:
    """Newton (Levenberg-Marquardt) iterations on x in place; returns the loss history
    (the loss at the start and after each accepted step)."""
    m = module or rlang.load(str(HERE / "petersen.rev"))
    f = m.petersen_

    def loss_at(y):
        return f(0.0, y.copy(), adj)[0]

    history = [loss_at(x)]
    log(f"iteration 0: loss = {history[-1]:.3e}")
    for iteration in range(1, max_iterations + 1):
        if history[-1] < tol:
            break
        t0 = time.perf_counter()
        grads = rlang.gradient(f, (0.0, x, adj), "loss!")
        g = grads[1].ravel()
        hess = rlang.hessian(f, (0.0, x, adj), "loss!")[1:, 1:]   # drop the loss! input
        while True:
            step = np.linalg.solve(hess + mu * np.eye(len(g)), -g)
            trial = x + step.reshape(x.shape)
            value = loss_at(trial)
            if value < history[-1]:
                x[...] = trial
                history.append(value)
                mu = max(mu / 10, 1e-12)
                break
            mu *= 10
            if mu > 1e6:
                raise RuntimeError("Newton step failed to decrease the loss")
        log(f"iteration {iteration}: loss = {value:.3e}  |g| = {np.linalg.norm(g):.2e}  "
            f"mu = {mu:.0e}  ({time.perf_counter() - t0:.1f} s)")
    return history


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args(argv)
    adj = petersen_adjacency()
    rng = np.random.default_rng(args.seed)
    x = exact_solution(adj) + args.noise * rng.normal(size=(10, K))
    t0 = time.perf_counter()
    history = train(x, adj, max_iterations=args.iterations)
    l1, l2 = distance_means(x, adj)
    print(f"final loss = {history[-1]:.3e} after {len(history) - 1} Newton steps "
          f"({time.perf_counter() - t0:.1f} s)")
    print(f"l1 (connected) = {l1:.8f}, l2 (disconnected) = {l2:.8f}")
    print(f"l2/l1 = {l2 / l1:.8f}  (sqrt(2) = {math.sqrt(2):.8f})")
    return 0 if history[-1] < 1e-8 else 1


if __name__ == "__main__":
    raise SystemExit(main())
