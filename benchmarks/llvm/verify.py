"""Check the benchmark programs on small sizes before they are timed.

    python benchmarks/llvm/verify.py              # interpreter (and llvm, when it exists)

For each workload of workloads.rev, on the interpreter:
  * the forward result matches the NumPy reference of baselines.py to 1e-10 relative,
    and so do the Numba and C baselines;
  * running the inverse on the outputs gives the inputs back;
  * `rlang.check_grad` passes (gradient by the inverse program against central
    differences, for every float input).
If `backend="llvm"` loads, its forward results and gradients are compared with the
interpreter's on the same inputs (1e-10 relative); otherwise that part prints n/a.
Takes 10 to 15 s (mostly Numba compiling and the GMM gradient checks).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import rlang  # noqa: E402

import baselines as B  # noqa: E402

WORKLOADS = HERE / "workloads.rev"
RTOL = 1e-10


def close(a, b, rtol=RTOL, atol=0.0) -> bool:
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                            rtol=rtol, atol=atol))


def relerr(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300), initial=0.0))


def require(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def cases():
    """(name, function name, args builder, loss, reference, baselines, output positions)
    for a forward-check size and a smaller gradient-check size."""
    clib = B.CLib()

    def sumsq(n):
        x = B.make_sumsq(n)["x"]
        return (0.25, x)

    def recurrence(n):
        r = B.make_recurrence(n)
        return (r["x"], r["y"], r["n"])

    def sparse(m, n, density):
        s = B.make_sparse(m, n, density)
        return (np.linspace(-1.0, 1.0, m), s["colptr"], s["rowval"], s["nzval"], s["x"])

    def gmm(d, k, n):
        g = B.make_gmm(d, k, n)
        return (0.5, g["alphas"], g["means"], g["icf"], g["x"], g["gamma"], g["m"])

    def copy(args):
        return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)

    return clib, [
        ("sumsq", "sumsq!", lambda: sumsq(2000), lambda: sumsq(12), "s!",
         lambda a: [B.ref_sumsq(*a)],
         {"numba": lambda a: [B.nb_sumsq(*a)], "C": lambda a: [clib.bind_sumsq(*a)()]},
         [0]),
        ("recurrence", "recurrence!", lambda: recurrence(3000), lambda: recurrence(40), "y!",
         lambda a: list(B.ref_recurrence(*a)),
         {"numba": lambda a: list(B.nb_recurrence(*a)),
          "C": lambda a: list(clib.bind_recurrence(*a)())},
         [0, 1]),
        ("csc_matvec", "csc_matvec!", lambda: sparse(60, 50, 0.1), lambda: sparse(7, 6, 0.4),
         ("y!", 2),
         lambda a: [B.ref_csc_matvec(*a)],
         {"numba": lambda a: [B.nb_csc_matvec(*copy(a))],
          "C": lambda a: [clib.bind_csc_matvec(*copy(a))().copy()]},
         [0]),
        ("gmm d=3 K=4", "gmm_objective!", lambda: gmm(3, 4, 12), lambda: gmm(3, 3, 4), "err!",
         lambda a: [a[0] + B.ref_gmm(*a[1:])],
         {"numba": lambda a: [a[0] + B.nb_gmm(*a[1:])],
          "C": lambda a: [a[0] + clib.bind_gmm(*a[1:])()]},
         [0]),
        ("gmm d=2 K=1", "gmm_objective!", lambda: gmm(2, 1, 5), lambda: gmm(2, 2, 3), "err!",
         lambda a: [a[0] + B.ref_gmm(*a[1:])],
         {"numba": lambda a: [a[0] + B.nb_gmm(*a[1:])],
          "C": lambda a: [a[0] + clib.bind_gmm(*a[1:])()]},
         [0]),
        ("gmm d=5 K=3 m=2", "gmm_objective!",
         lambda: (0.0,) + gmm(5, 3, 6)[1:6] + (2,), lambda: gmm(1, 2, 3), "err!",
         lambda a: [a[0] + B.ref_gmm(*a[1:])],
         {"numba": lambda a: [a[0] + B.nb_gmm(*a[1:])],
          "C": lambda a: [a[0] + clib.bind_gmm(*a[1:])()]},
         [0]),
    ]


def main() -> int:
    interp = rlang.load(WORKLOADS)
    try:
        llvm = rlang.load(WORKLOADS, backend="llvm", invcheck=False)
    except Exception as error:  # noqa: BLE001 - any failure means "not available"
        llvm, why = None, f"{type(error).__name__}: {error}"
    clib, all_cases = cases()
    failures = 0
    try:
        for name, fname, big, small, loss, reference, bases, outs in all_cases:
            start = time.perf_counter()
            try:
                fn = interp[fname]
                args = big()
                expected = reference(args)
                got = fn(*tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))
                result = [got[i] for i in outs]
                worst = 0.0
                for r, e in zip(result, expected):
                    require(close(r, e), f"interp {r!r} != reference {e!r}")
                    worst = max(worst, relerr(r, e))
                for base, run in bases.items():
                    for r, e in zip(run(args), expected):
                        require(close(r, e), f"{base} {r!r} != reference {e!r}")
                back = (~fn)(*tuple(a.copy() if isinstance(a, np.ndarray) else a for a in got))
                for b, a in zip(back, args):
                    require(close(b, a, rtol=1e-12, atol=1e-9), f"inverse gave {b!r}, not {a!r}")
                grad_args = small()
                require(rlang.check_grad(fn, grad_args, loss), "check_grad")
                status = f"ok (rel. err. vs NumPy {worst:.1e}, inverse, check_grad)"
                if llvm is not None:
                    verdict = compare_llvm(llvm[fname], fn, big(), small(), loss)
                    failures += verdict.startswith("FAILED")
                    status += "; llvm: " + verdict
                else:
                    status += "; llvm: n/a"
            except Exception as error:  # noqa: BLE001 - report and go on
                failures += 1
                status = f"FAILED: {type(error).__name__}: {error}"
            print(f"{name:18s} {time.perf_counter() - start:6.2f} s  {status}", flush=True)
    finally:
        clib.close()
    if llvm is None:
        print(f"llvm backend not available ({why.splitlines()[0]})")
    print("all checks passed" if not failures else f"{failures} workload(s) FAILED")
    return 1 if failures else 0


def compare_llvm(fast, slow, args, grad_args, loss) -> str:
    def fresh(a):
        return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a)
    try:
        got, want = fast(*fresh(args)), slow(*fresh(args))
        for g, w in zip(got, want):
            require(close(g, w), f"forward {g!r} != interp {w!r}")
        g_fast = rlang.gradient(fast, fresh(grad_args), loss)
        g_slow = rlang.gradient(slow, fresh(grad_args), loss)
        for g, w in zip(g_fast, g_slow):
            if w is None:
                require(g is None, f"gradient {g!r} where interp has None")
            else:
                require(close(g, w, atol=1e-12), f"gradient {g!r} != interp {w!r}")
        return "forward and gradient agree with interp"
    except Exception as error:  # noqa: BLE001
        return f"FAILED: {type(error).__name__}: {error}"


if __name__ == "__main__":
    sys.exit(main())
