"""`python -m tests.fuzz [--count N] [--seed S] [--family F …] [--jobs J] …`

Runs cases start … start+count-1 of the run `seed` and prints a summary; each defect
is written to `--report` (default fuzz-report/) with a reproducer.  `--case K` runs
case K alone in this process and prints what it did (the traceback, the
disagreement).  The exit status is 1 when a defect was found.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .cases import FAMILIES, SELFTEST, Case, cases, describe, run_case
from .runner import run


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="cases to run (1000)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (0)")
    parser.add_argument("--start", type=int, default=0, help="the first case's index (0)")
    parser.add_argument("--family", action="append", choices=[*FAMILIES, SELFTEST],
                        help="only these families, in turn (default: the mix of cases.py)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (the CPUs)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds before a case is a hang (60)")
    parser.add_argument("--report", type=Path, default=Path("fuzz-report"),
                        help="where defects are written (fuzz-report/)")
    parser.add_argument("--case", type=int, help="run this one case here and show it")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    options = parse(argv)
    if options.case is not None:
        family = (options.family or [None])[0]
        case = Case(family, options.seed, options.case) if family else \
            cases(options.seed, 1, start=options.case)[0]
        print(describe(case))
        outcome = run_case(case)
        print(f"\n# outcome: {outcome.kind}\n{outcome.detail}")
        return 1 if outcome.is_defect else 0

    def progress(report):
        done = sum(report.counts.values())
        if done % 100 == 0 or done == options.count:
            print(f"  {report.summary()}", file=sys.stderr, flush=True)

    report = run(cases(options.seed, options.count, options.family, options.start),
                 jobs=options.jobs, timeout=options.timeout, report_dir=options.report,
                 progress=progress)
    print(report.summary())
    for finding in report.findings:
        case = finding.case
        first = finding.detail.strip().splitlines()[-1:] or [""]
        print(f"  {finding.kind}: {case.family} seed {case.seed} case {case.index}: "
              f"{first[0][:200]}")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
