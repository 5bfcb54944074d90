"""Programs checked clean, kept on disk: `check_loaded(unit)` is `check(unit)` for a
unit the loader made, skipped where this rlang found the same sources clean before
(Note [Checked programs on disk]); `written_of(unit)` is `written_params` of its
functions, kept on disk the same way.

Note [Checked programs on disk]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The static check of GradBench's GMM program (with the std files it includes) took
5–11 ms of a first gradient that the disk cache otherwise serves in tens of ms
(issue #26 item 4).  Its answer depends only on the unit's source texts (the main
file's and every included one's, `Unit.sources`), the file name (spans carry it),
the dialect and integer rule, and rlang itself, which `remembered`'s key covers.

- A unit that checked clean is remembered as such; one with errors is checked again
  each time, as its errors are what the user reads.
- As with parsed programs (Note [Parsed programs on disk]), only programs read from
  files are remembered: one given as a string ("<string>") is checked, as tests and
  tools make thousands of them.
- Units built otherwise (the REPL's, a debugger's) are checked by `check`.
- The parameters each function may write (`written_params`, which a call's binding
  asks for: 1-1.5 ms for GMM's unit) are kept under the same sources.
"""
from __future__ import annotations

from ..disk_cache import remembered
from ..errors import CheckError, CheckErrors
from .analysis import written_params
from .check import check, collect_errors
from .unit import Unit


def check_loaded(unit: Unit) -> None:
    """`check(unit)` for a unit as the loader made it (`load_unit`, `loads_unit`):
    one whose source texts (`unit.sources`) determine it (see the Note)."""
    if not _from_sources(unit):
        return check(unit)
    key = repr(("checked clean", unit.file, unit.dialect, unit.integers, unit.sources))
    errors: list[CheckError] = []

    def clean() -> bool:
        errors.extend(collect_errors(unit))
        return not errors

    if not remembered(key, clean):
        raise CheckErrors(errors or collect_errors(unit))


def written_of(unit: Unit) -> dict:
    """`written_params(unit.functions)`, kept on disk for a unit its source texts
    determine (see the Note)."""
    if not _from_sources(unit):
        return written_params(unit.functions)
    key = repr(("written", unit.file, unit.dialect, unit.integers, unit.sources))
    return remembered(key, lambda: written_params(unit.functions))


def _from_sources(unit: Unit) -> bool:
    """Whether the loader made `unit` from files (see the Note)."""
    return bool(unit.sources) and not unit.file.startswith("<")
