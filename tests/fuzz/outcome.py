"""What one fuzz case came to: `Outcome`s, and `guarded(thunk)` that classifies a call.

Kinds, from fine to defect: "ok" (a result), "error" (an `RlangError`, the answer to
bad input), "unsupported" (a compiled backend's `BackendUnsupported`: LANGUAGE.md §10
lets a backend refuse what it cannot run, with an error naming it), then the defects: "traceback" (any other exception escaping rlang),
"internal" (the command line's exit status 70), "disagree" (two backends or a run and
its inverse that should agree do not), "crash" (the worker process died) and "hang"
(the case ran past its timeout).  The last two are decided by the runner.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass

DEFECTS = ("traceback", "internal", "disagree", "crash", "hang")


@dataclass(frozen=True)
class Outcome:
    kind: str                 # "ok", "error" or one of DEFECTS
    detail: str = ""          # the error's text, the traceback, what disagreed
    value: object = None      # the result of an "ok" call (not sent between processes)

    @property
    def is_defect(self) -> bool:
        return self.kind in DEFECTS


class Disagreement(Exception):
    """Raised by a case when two results that must agree do not."""


def guarded(thunk) -> Outcome:
    """Call `thunk()`: "ok" with its value, "error" for an `RlangError`, "traceback"
    (with the traceback) for anything else.  A `Disagreement` is "disagree"."""
    from rlang import RlangError
    from rlang.types_rules import BackendUnsupported, CompiledTypeError

    try:
        return Outcome("ok", value=thunk())
    except BackendUnsupported as error:
        kind = "error" if isinstance(error, CompiledTypeError) else "unsupported"
        return Outcome(kind, f"{type(error).__name__}: {error}")
    except RlangError as error:
        return Outcome("error", f"{type(error).__name__}: {error}")
    except Disagreement as failed:
        return Outcome("disagree", str(failed))
    except Exception:  # noqa: BLE001 - this is what the fuzzer looks for
        return Outcome("traceback", traceback.format_exc())


def worst(outcomes) -> Outcome:
    """The first defect among `outcomes`, or the last outcome when there is none."""
    outcomes = list(outcomes)
    for outcome in outcomes:
        if outcome.is_defect:
            return outcome
    return outcomes[-1] if outcomes else Outcome("ok")
