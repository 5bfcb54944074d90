"""Speed of the llvm backend against Numba and C on the same algorithms.

    python benchmarks/llvm/run.py              # default: all workloads, 12 GMM sizes
    python benchmarks/llvm/run.py --quick      # 3 GMM sizes, fewer repetitions
    python benchmarks/llvm/run.py --full       # the 30 ADBench GMM sizes (n = 1000)
    python benchmarks/llvm/run.py --gmm 64x200 --only gmm --repeat 3
    python benchmarks/llvm/run.py --json results.json

Workloads (workloads.rev; Numba and C versions in baselines.py and c/workloads.c):
  sumsq        s += x[i] * x[i] over 10^7 f64
  recurrence   10^6 steps of y += sin(x) * 0.5; x += y * 0.01
  csc_matvec   y += A x, A 1000 x 1000 CSC with density 0.05
  gmm          the ADBench GMM objective, d x K from {2,10,20,32,64} x {5,...,200}, n = 1000

For each: best-of-N time of the Numba forward, the C forward (gcc -O3 -march=native,
through ctypes), and, when `rlang.load(..., backend="llvm")` works, the rlang llvm
forward with invcheck off and on, and `rlang.gradient` (invcheck off); then the
ratios.  Finally the compile latency of `rlang run latency.rev --backend llvm` in a
fresh process with an empty RLANG_CACHE_DIR, and again from that cache.  Where the
llvm backend is not available the rlang columns print n/a.  Results of all
implementations are compared (numpy.allclose, rtol 1e-10; the 10^6-step recurrence
1e-9 between the baselines and 1e-6 for rlang).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKLOADS = HERE / "workloads.rev"
LATENCY = HERE / "latency.rev"

GMM_D = (2, 10, 20, 32, 64)
GMM_K = (5, 10, 25, 50, 100, 200)
GMM_DEFAULT = [(d, k) for d in (2, 10, 32, 64) for k in (5, 50, 200)]
GMM_QUICK = [(2, 5), (10, 25), (64, 200)]


# ------------------------------------------------------------------ timing

class CallTimeout(KeyboardInterrupt):
    """Raised by SIGALRM when an rlang measurement runs past --rl-timeout.  A
    KeyboardInterrupt, so that rlang stops its worker thread as it does on Ctrl-C
    (rlang/deep.py); code running natively sees it when it returns to Python."""


def best_of(fn, repeat: int, min_sample: float = 0.02, budget: float = 10.0,
            limit: float | None = None):
    """Best time of one call of `fn`, over `repeat` samples (fewer when a sample is
    slow: sampling stops after `budget` seconds, with at least 2 samples).  Fast
    calls are looped inside a sample so that a sample lasts at least `min_sample`.
    The first call is a warm-up (JIT compilation, caches) and is returned as well:
    (best seconds per call, seconds of the first call, result of the last call).

    With `limit`, the whole measurement is cut off after `limit` seconds: the best
    sample so far is returned, or the warm-up time when no sample was complete,
    and None for the warm-up when even that did not finish (then `result` is the
    CallTimeout)."""
    if limit is None:
        return _best_of(fn, repeat, min_sample, budget, [None])
    progress = [None]

    def alarm(signum, frame):
        raise CallTimeout(f"cut off after {limit:g} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return _best_of(fn, repeat, min_sample, budget, progress)
    except CallTimeout as timeout:
        first, samples = progress[0] or (None, [])
        if samples:
            return min(samples), first, timeout
        return first, first, timeout
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _best_of(fn, repeat, min_sample, budget, progress):
    start = time.perf_counter()
    result = fn()
    first = time.perf_counter() - start
    samples: list[float] = []
    progress[0] = (first, samples)
    inner = 1 if first >= min_sample else max(1, math.ceil(min_sample / max(first, 1e-7)))
    if inner > 1 and repeat > 0:    # calibrate on a warm call: the first may have compiled
        start = time.perf_counter()
        fn()
        inner = max(1, math.ceil(min_sample / max(time.perf_counter() - start, 1e-7)))
    spent = 0.0
    while len(samples) < repeat and (len(samples) < min(2, repeat) or spent < budget):
        start = time.perf_counter()
        for _ in range(inner):
            result = fn()
        elapsed = time.perf_counter() - start
        samples.append(elapsed / inner)
        spent += elapsed
    return min(samples, default=first), first, result


# ------------------------------------------------------------------ workloads

class Case:
    """One workload at one size: its rev function, arguments, loss view, and
    baseline callables, each returning the outputs to compare as a flat list."""

    def __init__(self, name, size, fname, make_args, loss, numba, c, reference, outputs,
                 rtol=1e-10, rl_rtol=1e-10):
        self.name, self.size, self.fname, self.make_args = name, size, fname, make_args
        self.loss, self.numba, self.c, self.reference = loss, numba, c, reference
        self.outputs, self.rtol, self.rl_rtol = outputs, rtol, rl_rtol


def build_cases(args, clib, B) -> list[Case]:
    cases = []
    only = set(args.only.split(",")) if args.only else None

    def want(name):
        return only is None or name in only

    if want("sumsq"):
        x = B.make_sumsq(args.sumsq_n)["x"]
        cases.append(Case(
            "sumsq", f"n={args.sumsq_n:.0e}", "sumsq!", lambda: (0.0, x), "s!",
            numba=lambda: [B.nb_sumsq(0.0, x)],
            c=(lambda f: lambda: [f()])(clib.bind_sumsq(0.0, x)),
            reference=lambda: [B.ref_sumsq(0.0, x)], outputs=[0]))
    if want("recurrence"):
        n = args.recurrence_n
        cases.append(Case(
            "recurrence", f"n={n:.0e}", "recurrence!", lambda: (0.3, 0.0, n), "x!",
            numba=lambda: list(B.nb_recurrence(0.3, 0.0, n)),
            c=(lambda f: lambda: list(f()))(clib.bind_recurrence(0.3, 0.0, n)),
            reference=(lambda: list(B.ref_recurrence(0.3, 0.0, n))) if n <= 10**6 else None,
            # C and Numba agree bit for bit; 10^6 steps turn one-ulp differences per
            # step (an FMA, another sin) into about 1e-8 relative, hence rl_rtol
            outputs=[0, 1], rtol=1e-9, rl_rtol=1e-6))
    if want("csc_matvec"):
        s = B.make_sparse(args.sparse_n, args.sparse_n, args.density)
        m, cp, rv, nz, xv = s["m"], s["colptr"], s["rowval"], s["nzval"], s["x"]
        y_nb, y_c = np.zeros(m), np.zeros(m)
        c_call = clib.bind_csc_matvec(y_c, cp, rv, nz, xv)

        def c_fresh():
            y_c[:] = 0.0
            return [c_call().copy()]
        case = Case(
            "csc_matvec", f"{m}x{m} d={args.density} nnz={len(nz)}", "csc_matvec!",
            lambda: (np.zeros(m), cp, rv, nz, xv), ("y!", 0),
            numba=lambda: [B.nb_csc_matvec(np.zeros(m), cp, rv, nz, xv)],
            c=c_fresh, reference=lambda: [B.ref_csc_matvec(np.zeros(m), cp, rv, nz, xv)],
            outputs=[0])
        # timed calls accumulate into a preallocated y (no allocation in the loop)
        case.numba_timed = lambda: B.nb_csc_matvec(y_nb, cp, rv, nz, xv)
        case.c_timed = c_call
        cases.append(case)
    if want("gmm"):
        for d, k in args.gmm:
            g = B.make_gmm(d, k, args.gmm_n)
            a, mu, icf, xs, gam, wm = g["alphas"], g["means"], g["icf"], g["x"], g["gamma"], g["m"]
            cases.append(Case(
                "gmm", f"d={d} K={k} n={args.gmm_n}", "gmm_objective!",
                (lambda a=a, mu=mu, icf=icf, xs=xs, gam=gam, wm=wm:
                 (0.0, a, mu, icf, xs, gam, wm)), "err!",
                numba=(lambda a=a, mu=mu, icf=icf, xs=xs, gam=gam, wm=wm:
                       [B.nb_gmm(a, mu, icf, xs, gam, wm)]),
                c=(lambda f: lambda: [f()])(clib.bind_gmm(a, mu, icf, xs, gam, wm)),
                reference=(lambda a=a, mu=mu, icf=icf, xs=xs, gam=gam, wm=wm:
                           [B.ref_gmm(a, mu, icf, xs, gam, wm)]),
                outputs=[0]))
    return cases


def agree(a: list, b: list, rtol: float) -> bool:
    return len(a) == len(b) and all(
        np.allclose(np.asarray(x, dtype=float), np.asarray(y, dtype=float), rtol=rtol, atol=0.0)
        for x, y in zip(a, b))


# ------------------------------------------------------------------ rlang llvm

def load_llvm(rlang):
    """(module invcheck off, module invcheck on, None) or (None, None, reason)."""
    try:
        off = rlang.load(WORKLOADS, backend="llvm", invcheck=False)
        on = rlang.load(WORKLOADS, backend="llvm", invcheck=True)
        return off, on, None
    except Exception as error:  # noqa: BLE001 - any failure: not available (yet)
        return None, None, f"{type(error).__name__}: {str(error).splitlines()[0]}"


def time_rlang(case: Case, off, on, rlang, repeat, limit, notes) -> dict:
    """rlang times of one case; entries missing where a step failed (noted), and
    marked approximate (first call only) or missing where it ran past `limit`."""
    out = {}
    fresh = case.make_args

    def first_call():
        result = off[case.fname](*fresh())
        return [result[i] for i in case.outputs]
    try:
        expected = case.numba()
        # the first call after load (it may compile): timed, checked, time-limited
        out["rl_first"], _, got = best_of(first_call, 0, limit=limit)
        if isinstance(got, CallTimeout):
            out["cut"] = ["rl_off"]
            notes.append(f"{case.name} {case.size}: the first llvm call was cut off "
                         f"after {limit:g} s")
            out["rl_off"] = None
            return out
        if not agree(got, expected, case.rl_rtol):
            notes.append(f"{case.name} {case.size}: llvm result {got} != numba {expected}")
            out["mismatch"] = True
        fn_off, fn_on = off[case.fname], on[case.fname]
        args_off, args_on = fresh(), fresh()
        grad_args = fresh()
        for key, call, reps in (("rl_off", lambda: fn_off(*args_off), repeat),
                                ("rl_on", lambda: fn_on(*args_on), repeat),
                                ("grad", lambda: rlang.gradient(fn_off, grad_args, case.loss),
                                 max(2, repeat // 2))):
            best, first, result = best_of(call, reps, limit=limit)
            out[key] = best
            if isinstance(result, CallTimeout):
                out.setdefault("cut", []).append(key)
                notes.append(f"{case.name} {case.size}: {key} cut off after {limit:g} s "
                             + ("(no call finished)" if best is None else
                                "(time of the fewer calls that finished)"))
    except Exception as error:  # noqa: BLE001 - report, keep the other cases going
        notes.append(f"{case.name} {case.size}: llvm: {type(error).__name__}: "
                     f"{str(error).splitlines()[0] if str(error) else ''}")
    return out


# ------------------------------------------------------------------ compile latency

def latency(repeat: int) -> dict:
    """Wall time of `rlang run latency.rev` in fresh processes."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # as an installed package runs: with its modules' bytecode cached (pip compiles
    # it on install); otherwise every process compiles rlang's sources again
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import rlang.cli, rlang.ad.drivers, "
                    "rlang.ad.compiled"], env=env, check=True)
    results, outputs = {}, {}

    def one(argv, cache):
        env["RLANG_CACHE_DIR"] = cache
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        return time.perf_counter() - start, proc

    base = [sys.executable, "-c", "import rlang"]
    rlang_run = [sys.executable, "-m", "rlang", "run", str(LATENCY)]
    with tempfile.TemporaryDirectory(prefix="rlang-cache-") as tmp:
        results["python -c 'import rlang'"] = min(one(base, tmp)[0] for _ in range(repeat))
        times = []
        for _ in range(repeat):
            t, proc = one(rlang_run, tmp)
            times.append(t)
        results["rlang run, interp"] = min(times)
        outputs["interp"] = proc.stdout
        cold, warm, why = [], [], None
        for i in range(repeat):
            cache = os.path.join(tmp, f"cold{i}")
            os.mkdir(cache)
            t, proc = one(rlang_run + ["--backend", "llvm"], cache)
            if proc.returncode != 0:
                lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
                why = next((line for line in lines if "error" in line.lower()), lines[0])
                break
            cold.append(t)
            outputs["llvm"] = proc.stdout
            filled = any(os.scandir(cache))
        if why is None:
            for _ in range(repeat):
                warm.append(one(rlang_run + ["--backend", "llvm"], os.path.join(tmp, "cold0"))[0])
        results["rlang run --backend llvm, empty cache"] = min(cold) if cold else None
        results["rlang run --backend llvm, from cache"] = min(warm) if warm else None
        notes = []
        if why is not None:
            notes.append(f"llvm: {why}")
        else:
            if not filled:
                notes.append("RLANG_CACHE_DIR stayed empty after a run: is the cache used?")
            if outputs.get("llvm") != outputs["interp"]:
                notes.append("llvm output differs from interp:\n" + outputs.get("llvm", ""))
    return {"times": results, "notes": notes}


# ------------------------------------------------------------------ report

def fmt_t(t) -> str:
    if t is None:
        return "n/a"
    if t >= 1.0:
        return f"{t:.3f}s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f}ms"
    return f"{t * 1e6:.1f}us"


def fmt_r(a, b) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def row_text(case: Case, r: dict, limit: float) -> str:
    """One table row; `*` marks a time from fewer calls than asked (cut off at the
    time limit), `>Ns` a measurement of which not even one call finished."""
    cut = r.get("cut", [])

    def t(key):
        if key in cut and r.get(key) is None:
            return f">{limit:g}s"
        return fmt_t(r.get(key)) + ("*" if key in cut else "")
    g = r.get
    return (f"{case.name:11s} {case.size:27s} {fmt_t(g('numba')):>9s} {fmt_t(g('C')):>9s} "
            f"{t('rl_off'):>9s} {t('rl_on'):>9s} {t('grad'):>9s} {fmt_t(g('rl_first')):>9s} "
            f"{fmt_r(g('rl_off'), g('numba')):>7s} {fmt_r(g('rl_off'), g('C')):>6s} "
            f"{fmt_r(g('grad'), g('numba')):>7s} {fmt_r(g('grad'), g('C')):>6s} "
            f"{fmt_r(g('rl_on'), g('rl_off')):>6s}" + ("  MISMATCH" if g("mismatch") else ""))


def parse_gmm(text: str) -> tuple[int, int]:
    d, k = text.lower().split("x")
    return int(d), int(k)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="3 GMM sizes, repeat 3")
    mode.add_argument("--full", action="store_true", help="all 30 ADBench GMM sizes")
    p.add_argument("--gmm", type=parse_gmm, nargs="+", metavar="DxK",
                   help="GMM sizes, e.g. 10x25 64x200 (overrides the mode's)")
    p.add_argument("--gmm-n", type=int, default=1000, help="GMM points (default 1000)")
    p.add_argument("--only", help="comma list of sumsq,recurrence,csc_matvec,gmm")
    p.add_argument("--repeat", type=int, help="samples per timing, best taken (default 5)")
    p.add_argument("--sumsq-n", type=int, default=10**7)
    p.add_argument("--recurrence-n", type=int, default=10**6)
    p.add_argument("--sparse-n", type=int, default=1000)
    p.add_argument("--density", type=float, default=0.05)
    p.add_argument("--cflags", help="gcc flags (default '-O3 -march=native -ffp-contract=off')")
    p.add_argument("--no-latency", action="store_true", help="skip the compile-latency part")
    p.add_argument("--no-rlang", action="store_true", help="baselines only")
    p.add_argument("--rl-timeout", type=float,
                   help="seconds allowed to each rlang measurement, after which the "
                        "calls that finished count (default 20, --quick 10)")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    if args.gmm is None:
        args.gmm = (GMM_QUICK if args.quick else
                    [(d, k) for d in GMM_D for k in GMM_K] if args.full else GMM_DEFAULT)
    repeat = args.repeat or (3 if args.quick else 5)
    if args.rl_timeout is None:
        args.rl_timeout = 10.0 if args.quick else 20.0

    # The in-process llvm runs use a cache of their own (compiled code of earlier
    # runs would hide nothing here, but keeps the user's cache clean).
    own_cache = None
    if "RLANG_CACHE_DIR" not in os.environ:
        own_cache = tempfile.TemporaryDirectory(prefix="rlang-bench-cache-")
        os.environ["RLANG_CACHE_DIR"] = own_cache.name
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    import baselines as B  # noqa: E402
    import rlang  # noqa: E402

    wall = time.perf_counter()
    clib = B.CLib(args.cflags.split() if args.cflags else None)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, NumPy {np.__version__}, "
          f"Numba {__import__('numba').__version__}, rlang {rlang.__version__}")
    print(f"# C: {clib.command}")
    off = on = None
    why = "skipped (--no-rlang)"
    if not args.no_rlang:
        off, on, why = load_llvm(rlang)
    print(f"# rlang llvm backend: {'available' if off is not None else 'n/a — ' + why}")
    print(f"# best of {repeat}; one call; rlang gradient = rlang.gradient (invcheck off: "
          f"forward where needed + backward)\n")

    cases = build_cases(args, clib, B)
    header = (f"{'workload':11s} {'size':27s} {'numba':>9s} {'C':>9s} {'rl off':>9s} "
              f"{'rl on':>9s} {'rl grad':>9s} {'rl 1st':>9s} {'off/nb':>7s} {'off/C':>6s} "
              f"{'grad/nb':>7s} {'grad/C':>6s} {'on/off':>6s}")
    print(header)
    print("-" * len(header))
    rows, notes = [], []
    failures = 0
    for case in cases:
        # agreement of the baselines (and the NumPy reference) first
        nb, c = case.numba(), case.c()
        assert agree(nb, c, case.rtol), f"{case.name} {case.size}: numba {nb} != C {c}"
        if case.reference is not None:
            ref = case.reference()
            assert agree(nb, ref, case.rtol), f"{case.name} {case.size}: numba {nb} != NumPy {ref}"
        t_nb, _, _ = best_of(getattr(case, "numba_timed", case.numba), repeat)
        t_c, _, _ = best_of(getattr(case, "c_timed", case.c), repeat)
        r = {"workload": case.name, "size": case.size, "numba": t_nb, "C": t_c}
        if off is not None:
            r.update(time_rlang(case, off, on, rlang, repeat, args.rl_timeout, notes))
            failures += bool(r.get("mismatch")) or "rl_off" not in r
        rows.append(r)
        print(row_text(case, r, args.rl_timeout), flush=True)
    clib.close()
    for note in notes:
        print("note:", note)

    lat = None
    if not args.no_latency:
        lat = latency(3)
        print(f"\ncompile latency: {LATENCY.relative_to(ROOT)} "
              f"({sum(1 for _ in open(LATENCY))} lines), fresh process, best of 3")
        for label, t in lat["times"].items():
            print(f"  {label:40s} {fmt_t(t):>9s}")
        for note in lat["notes"]:
            print("  note:", note)

    total = time.perf_counter() - wall
    print(f"\nbaselines agree (numba vs C vs NumPy); total {total:.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "notes": notes, "latency": lat, "repeat": repeat,
                       "cflags": clib.cflags, "llvm": why or "available",
                       "total_s": total}, fh, indent=1)
    if own_cache is not None:
        own_cache.cleanup()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
