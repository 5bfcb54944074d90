"""Fuzz cases: `Case(family, seed, index)`, the families, and `run_case`.

A family is a module with three functions: `make(rng) -> spec` draws what the case
does from a `random.Random`, `run(spec) -> Outcome` does it (in a worker process) and
`describe(spec) -> str` writes it down as a reproducer.  `rng` is seeded with
"family:seed:index" (string seeds are hashed with SHA-512, the same on every
platform and Python 3 version), so a case is its three numbers.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from importlib import import_module

from .outcome import Outcome

#: name -> module of the family; the default mix runs them in these proportions
FAMILIES = {"source": "mutate", "program": "programs", "argument": "arguments",
            "command": "commands", "debugger": "debugger"}
MIX = ("source", "source", "source", "source", "program", "program", "argument",
       "argument", "command", "debugger")
#: a family only `--family selftest` runs: cases that crash, hang and raise on purpose,
#: to show that the runner catches each (tests/fuzz/test_fuzz.py)
SELFTEST = "selftest"


@dataclass(frozen=True)
class Case:
    family: str
    seed: int
    index: int

    def rng(self) -> random.Random:
        return random.Random(f"{self.family}:{self.seed}:{self.index}")

    def as_json(self) -> dict:
        return {"family": self.family, "seed": self.seed, "index": self.index}

    @classmethod
    def from_json(cls, data: dict) -> "Case":
        return cls(data["family"], int(data["seed"]), int(data["index"]))


def family_module(name: str):
    module = "selftest" if name == SELFTEST else FAMILIES[name]
    return import_module(f"{__package__}.{module}")


def cases(seed: int, count: int, families=None, start: int = 0) -> list[Case]:
    """Cases `start … start+count-1` of a run: of the given families in turn, or of
    the default mix."""
    mix = tuple(families) if families else MIX
    return [Case(mix[index % len(mix)], seed, index) for index in range(start, start + count)]


def spec_of(case: Case):
    return family_module(case.family).make(case.rng())


def run_case(case: Case) -> Outcome:
    """Make the case and run it; a failure to even make it is the fuzzer's own bug,
    reported as a traceback."""
    from .outcome import guarded

    made = guarded(lambda: spec_of(case))
    if made.kind != "ok":
        return Outcome("traceback", "making the case failed (a fuzzer bug):\n" + made.detail)
    return family_module(case.family).run(made.value)


def describe(case: Case) -> str:
    return family_module(case.family).describe(spec_of(case))
