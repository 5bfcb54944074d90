"""Run fuzz cases in worker processes, each under a timeout: `run(cases, …)`.

The parent keeps `jobs` workers (`python -m <package>.worker`), sends each one case at
a time as a JSON line on its stdin and reads the answer from its stdout (the worker
moves the program's own output out of the way first, see worker.py).  A worker that
closes its stdout mid-case died: the case is a *crash* (with the signal, and the tail
of the worker's stderr).  A case with no answer after `timeout` seconds is a *hang*:
the worker is killed.  Either way a fresh worker takes the next case.

Note [Workers, not a process per case]
A process per case would pay Python's and rlang's start-up (about a second with
llvmlite) on every case, which makes the 10^5-case runs the project promises take
days on two cores.  A worker runs cases until one kills it; because every case is
made from (family, seed, index) alone, a case is the same in any worker and in any
order, so nothing a worker kept from an earlier case can hide behind the pool — and a
defect found in a long run is replayed alone with `--case`.  A worker is replaced
after `CASES_PER_WORKER` cases: the code llvm compiles for each case stays in its
process, which grew past 1 GB in 10^4 cases.

Note [A late look is not a hang]
The parent is one thread: while it starts a replacement worker (PyTorch and JAX load
in seconds, more on a loaded CI machine) no other worker is looked at, and the other
workers' cases keep their clocks.  A case whose time ran out while its answer was
already waiting must be read, not called a hang — the runner's own test once failed
that way on CI, calling a case that raised at once a hang.  So a worker is killed for
a hang only when nothing is waiting on its stdout.
"""
from __future__ import annotations

import json
import os
import select
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

from .cases import Case
from .outcome import DEFECTS

PACKAGE = __package__                       # "tests.fuzz" or "fuzz" (under pytest)
PACKAGE_ROOT = Path(__file__).resolve().parents[len(PACKAGE.split("."))]
REPO = Path(__file__).resolve().parents[2]
CASES_PER_WORKER = 500


@dataclass
class Finding:
    case: Case
    kind: str
    detail: str
    seconds: float


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)     # outcome kind -> cases
    families: Counter = field(default_factory=Counter)   # family -> cases
    findings: list = field(default_factory=list)         # of Finding (defects only)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.counts.items()))
        fams = ", ".join(f"{k} {n}" for k, n in sorted(self.families.items()))
        return (f"{sum(self.counts.values())} cases in {self.seconds:.0f} s ({fams}): "
                f"{kinds}; {len(self.findings)} defects")


#: How long a worker may take to load its libraries before its first case.
STARTUP_SECONDS = 300


class _Worker:
    """One worker process and the case it is running."""

    def __init__(self, memory_bytes: int):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(REPO), str(PACKAGE_ROOT), env.get("PYTHONPATH", "")])
        env.setdefault("RLANG_BACKEND", "interp")
        env["RLANG_FUZZ_MEMORY"] = str(memory_bytes)
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", f"{PACKAGE}.worker"], cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            start_new_session=True)
        self.case: Case | None = None
        self.started = 0.0
        self.cases = 0
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        """Wait for the worker's first line, written once its libraries are loaded
        (PyTorch and JAX take seconds): a case's time limit counts from its own
        start, not the worker's.  A worker that dies first is found at its first case."""
        ready, _, _ = select.select([self.proc.stdout], [], [], STARTUP_SECONDS)
        if ready:
            self.proc.stdout.readline()

    def send(self, case: Case) -> None:
        self.case, self.started = case, time.monotonic()
        self.cases += 1
        self.proc.stdin.write(json.dumps(case.as_json()) + "\n")
        self.proc.stdin.flush()

    def has_answered(self) -> bool:
        """Whether the worker's answer (or its death) is waiting to be read.  Starting a
        replacement worker blocks the parent for seconds (Note [A late look is not a
        hang]), so a case past its time may have answered long before."""
        ready, _, _ = select.select([self.proc.stdout], [], [], 0)
        return bool(ready)

    def answer(self) -> dict | None:
        """The worker's answer to its case, or None when it died."""
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def stderr_tail(self, size: int = 2000) -> str:
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - size))
        return self.stderr.read().decode("utf-8", "replace")

    def death(self) -> str:
        """How the worker ended (after its stdout closed)."""
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        how = (f"killed by {signal.Signals(-code).name}" if code and code < 0
               else f"exited with status {code}")
        return f"the worker {how}\n{self.stderr_tail()}"

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self.stderr.close()


def run(cases, jobs: int = 1, timeout: float = 60.0, memory_bytes: int = 6 << 30,
        report_dir: Path | None = None, progress=None) -> Report:
    """Run `cases` (an iterable of `Case`) on `jobs` workers; each defect is written to
    `report_dir` (when given) as a reproducer.  `progress(report)` is called after
    every case."""
    report, begun = Report(), time.monotonic()
    pending = deque(cases)
    selector = selectors.DefaultSelector()
    workers: list[_Worker] = []

    def start_worker() -> _Worker:
        worker = _Worker(memory_bytes)
        selector.register(worker.proc.stdout, selectors.EVENT_READ, worker)
        workers.append(worker)
        return worker

    def retire(worker: _Worker) -> None:
        selector.unregister(worker.proc.stdout)
        workers.remove(worker)

    def record(case: Case, kind: str, detail: str, seconds: float) -> None:
        report.seconds = time.monotonic() - begun
        report.counts[kind] += 1
        report.families[case.family] += 1
        if kind in DEFECTS:
            finding = Finding(case, kind, detail, seconds)
            report.findings.append(finding)
            if report_dir is not None:
                write_reproducer(report_dir, finding)
        if progress is not None:
            progress(report)

    def feed(worker: _Worker) -> None:
        if pending and worker.cases >= CASES_PER_WORKER:
            worker.case = None
            retire(worker)
            worker.close()
            worker = start_worker()
        if pending:
            worker.send(pending.popleft())
        else:
            worker.case = None

    for _ in range(max(1, jobs)):
        if pending:
            feed(start_worker())
    try:
        while any(w.case is not None for w in workers):
            now = time.monotonic()
            busy = [w for w in workers if w.case is not None]
            wait = max(0.0, min(w.started + timeout for w in busy) - now)
            for key, _ in selector.select(timeout=wait):
                worker = key.data
                if worker.case is None:
                    continue
                answer = worker.answer()
                case, seconds = worker.case, time.monotonic() - worker.started
                if answer is None:
                    record(case, "crash", worker.death(), seconds)
                    retire(worker)
                    worker.close()
                    feed(start_worker())
                else:
                    record(case, answer["kind"], answer["detail"], seconds)
                    feed(worker)
            now = time.monotonic()
            for worker in [w for w in workers if w.case is not None]:
                if now - worker.started > timeout and not worker.has_answered():
                    case = worker.case
                    retire(worker)
                    worker.kill()
                    worker.close()
                    record(case, "hang", f"no answer after {timeout:.0f} s", now - worker.started)
                    feed(start_worker())
    finally:
        for worker in list(workers):
            worker.close()
        selector.close()
    report.seconds = time.monotonic() - begun
    return report


def write_reproducer(directory: Path, finding: Finding) -> Path:
    """`<family>-<seed>-<index>.txt`: the defect, what the case ran, and how to rerun it."""
    from .cases import describe

    directory.mkdir(parents=True, exist_ok=True)
    case = finding.case
    path = directory / f"{case.family}-{case.seed}-{case.index}.txt"
    path.write_text(
        f"# {finding.kind} in case {case.family} seed {case.seed} index {case.index} "
        f"({finding.seconds:.1f} s)\n"
        f"# rerun: python -m tests.fuzz --family {case.family} --seed {case.seed} "
        f"--case {case.index}\n\n{finding.detail}\n\n# the case\n{describe(case)}\n",
        encoding="utf-8")
    return path
