"""Inputs, NumPy references, Numba and C baselines of benchmarks/llvm/workloads.rev.

The Numba (`@njit`, default options: no fastmath, no bounds checks) and C
(c/workloads.c) versions compute the same algorithms as the rev functions, written
the ordinary irreversible way; the NumPy references are independent formulations
(vectorised where that is natural) used to check all of them.

    make_sumsq(n), make_recurrence(n), make_sparse(m, n, density), make_gmm(d, K, n)
        -> dict of inputs (seeded, reproducible)
    ref_*          NumPy references
    nb_*           Numba kernels
    CLib(...)      the C kernels through ctypes (compiled on first use)
"""
from __future__ import annotations

import ctypes
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
C_SOURCE = HERE / "c" / "workloads.c"
DEFAULT_CFLAGS = ["-O3", "-march=native", "-ffp-contract=off"]


# ------------------------------------------------------------------ inputs

def make_sumsq(n: int, seed: int = 0) -> dict:
    return {"x": np.random.default_rng(seed).random(n)}


def make_recurrence(n: int) -> dict:
    return {"x": 0.3, "y": 0.0, "n": int(n)}


def make_sparse(m: int, n: int, density: float, seed: int = 0) -> dict:
    """An m x n matrix in CSC form (int64 colptr/rowval, sorted rows), and x."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n, m)) < density            # mask[j, i]: column j, row i
    cols, rows = np.nonzero(mask)                    # column-major order, rows sorted
    colptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=n), out=colptr[1:])
    return {"m": m, "colptr": colptr, "rowval": rows.astype(np.int64),
            "nzval": rng.standard_normal(len(rows)), "x": rng.standard_normal(n)}


def make_gmm(d: int, k: int, n: int = 1000, seed: int = 0) -> dict:
    """ADBench-shaped GMM inputs: alphas[K], means[K, d], icf[K, d(d+1)/2], x[n, d],
    Wishart gamma = 1, m = 0 (as in ADBench's data files)."""
    rng = np.random.default_rng(seed)
    return {"alphas": rng.standard_normal(k), "means": rng.random((k, d)),
            "icf": rng.random((k, d * (d + 1) // 2)), "x": rng.random((n, d)),
            "gamma": 1.0, "m": 0}


# ------------------------------------------------------------------ NumPy references

def ref_sumsq(s: float, x: np.ndarray) -> float:
    return s + float(np.dot(x, x))


def ref_recurrence(x: float, y: float, n: int) -> tuple[float, float]:
    for _ in range(n):
        y += math.sin(x) * 0.5
        x += y * 0.01
    return x, y


def ref_csc_matvec(y, colptr, rowval, nzval, x):
    a = np.zeros((len(y), len(x)))
    for j in range(len(x)):
        a[rowval[colptr[j]:colptr[j + 1]], j] = nzval[colptr[j]:colptr[j + 1]]
    return y + a @ x


def _lse(v, axis=None):
    mx = np.max(v, axis=axis, keepdims=True)
    return np.squeeze(np.log(np.sum(np.exp(v - mx), axis=axis, keepdims=True)) + mx, axis=axis)


def multigammaln(a: float, d: int) -> float:
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(a - 0.5 * (j - 1)) for j in range(1, d + 1))


def ref_gmm(alphas, means, icf, x, gamma, m) -> float:
    """The ADBench GMM objective, vectorised over points (one matrix per component)."""
    n, d = x.shape
    k = len(alphas)
    qs, ls = icf[:, :d], icf[:, d:]
    cols, rows = np.triu_indices(d, 1)               # column-major strict lower triangle
    main = np.empty((n, k))
    for c in range(k):
        q = np.diag(np.exp(qs[c]))
        q[rows, cols] = ls[c]
        qx = (x - means[c]) @ q.T
        main[:, c] = alphas[c] + qs[c].sum() - 0.5 * np.sum(qx * qx, axis=1)
    nn = d + m + 1
    const_c = nn * d * (math.log(gamma) - 0.5 * math.log(2.0)) - multigammaln(0.5 * nn, d)
    prior = np.sum(0.5 * gamma * gamma * (np.sum(np.exp(2 * qs), axis=1) + np.sum(ls * ls, axis=1))
                   - m * qs.sum(axis=1)) - k * const_c
    return float(-0.5 * n * d * math.log(2 * math.pi) + np.sum(_lse(main, axis=1))
                 - n * _lse(alphas) + prior)


# ------------------------------------------------------------------ Numba

@njit
def nb_sumsq(s, x):
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


@njit
def nb_recurrence(x, y, n):
    for _ in range(n):
        y += math.sin(x) * 0.5
        x += y * 0.01
    return x, y


@njit
def nb_csc_matvec(y, colptr, rowval, nzval, x):
    for j in range(x.shape[0]):
        xj = x[j]
        for p in range(colptr[j], colptr[j + 1]):
            y[rowval[p]] += nzval[p] * xj
    return y


@njit
def _nb_logsumexp(v):
    mx = v[0]
    for i in range(1, v.shape[0]):
        if mx < v[i]:
            mx = v[i]
    se = 0.0
    for i in range(v.shape[0]):
        se += math.exp(v[i] - mx)
    return math.log(se) + mx


@njit
def nb_gmm(alphas, means, icf, x, gamma, m):
    n, d = x.shape
    k = alphas.shape[0]
    qdiags = np.empty((k, d))
    sum_qs = np.zeros(k)
    xc = np.empty(d)
    qx = np.empty(d)
    main = np.empty(k)
    for ik in range(k):
        for j in range(d):
            sum_qs[ik] += icf[ik, j]
            qdiags[ik, j] = math.exp(icf[ik, j])
    slse = 0.0
    for i in range(n):
        for ik in range(k):
            for j in range(d):
                xc[j] = x[i, j] - means[ik, j]
            for j in range(d):
                qx[j] = qdiags[ik, j] * xc[j]
            idx = d
            for c in range(d):
                for r in range(c + 1, d):
                    qx[r] += icf[ik, idx] * xc[c]
                    idx += 1
            sq = 0.0
            for j in range(d):
                sq += qx[j] * qx[j]
            main[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq
        slse += _nb_logsumexp(main)
    # Wishart prior
    nn = d + m + 1
    lmg = 0.25 * d * (d - 1) * math.log(math.pi)
    for j in range(1, d + 1):
        lmg += math.lgamma(0.5 * nn + 0.5 * (1 - j))
    const_c = nn * d * (math.log(gamma) - 0.5 * math.log(2.0)) - lmg
    prior = 0.0
    for ik in range(k):
        frob = 0.0
        for j in range(d):
            frob += qdiags[ik, j] * qdiags[ik, j]
        for j in range(d, icf.shape[1]):
            frob += icf[ik, j] * icf[ik, j]
        prior += 0.5 * gamma * gamma * frob - m * sum_qs[ik]
    prior -= k * const_c
    return (-(n * d) * 0.5 * math.log(2.0 * math.pi) + slse - n * _nb_logsumexp(alphas)
            + prior)


# ------------------------------------------------------------------ C through ctypes

_dp = ctypes.POINTER(ctypes.c_double)
_ip = ctypes.POINTER(ctypes.c_int64)


def _ptr(a: np.ndarray, kind):
    return a.ctypes.data_as(kind)


class CLib:
    """c/workloads.c compiled with gcc into a temporary shared library."""

    def __init__(self, cflags: list[str] | None = None, cc: str = "gcc"):
        self.cflags = list(DEFAULT_CFLAGS if cflags is None else cflags)
        self._dir = tempfile.mkdtemp(prefix="rlang-bench-c-")
        so = os.path.join(self._dir, "workloads.so")
        cmd = [cc, *self.cflags, "-shared", "-fPIC", "-o", so, str(C_SOURCE), "-lm"]
        subprocess.run(cmd, check=True)
        self.command = " ".join(cmd)
        lib = self.lib = ctypes.CDLL(so)
        i64, f64 = ctypes.c_int64, ctypes.c_double
        lib.sumsq.argtypes, lib.sumsq.restype = [f64, _dp, i64], f64
        lib.recurrence.argtypes, lib.recurrence.restype = [f64, f64, i64, _dp], None
        lib.csc_matvec.argtypes, lib.csc_matvec.restype = [_dp, _ip, _ip, _dp, _dp, i64], None
        lib.gmm_objective.argtypes = [i64, i64, i64, _dp, _dp, _dp, _dp, f64, i64]
        lib.gmm_objective.restype = f64

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    # Each `bind_*` converts the arguments once and returns a no-argument callable,
    # so that the timed call is the kernel plus the ctypes call (about a microsecond).

    def bind_sumsq(self, s, x):
        f, p, n = self.lib.sumsq, _ptr(x, _dp), x.shape[0]
        return lambda: f(s, p, n)

    def bind_recurrence(self, x, y, n):
        f, out = self.lib.recurrence, np.zeros(2)
        p = _ptr(out, _dp)

        def call():
            f(x, y, n, p)
            return float(out[0]), float(out[1])
        return call

    def bind_csc_matvec(self, y, colptr, rowval, nzval, x):
        f = self.lib.csc_matvec
        args = (_ptr(y, _dp), _ptr(colptr, _ip), _ptr(rowval, _ip), _ptr(nzval, _dp),
                _ptr(x, _dp), x.shape[0])

        def call():
            f(*args)
            return y
        return call

    def bind_gmm(self, alphas, means, icf, x, gamma, m):
        f = self.lib.gmm_objective
        n, d = x.shape
        args = (d, alphas.shape[0], n, _ptr(alphas, _dp), _ptr(means, _dp), _ptr(icf, _dp),
                _ptr(x, _dp), gamma, m)
        for a in (alphas, means, icf, x):
            assert a.flags.c_contiguous and a.dtype == np.float64
        return lambda: f(*args)
