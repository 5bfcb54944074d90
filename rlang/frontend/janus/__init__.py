"""Janus programs (`.ja`, as the jana interpreter accepts them) on rlang.

`loads_janus(text, file, modular=False)` parses (janus/parser.py) and lowers
(janus/lower.py) a Janus program into a `Unit` of rev's AST, which the one checker,
inverter, interpreter and backends take; `rlang.frontend.loader.load_unit` calls it
for files ending in `.ja`.  janus/printer.py prints such a unit back as Janus source
(`rlang invert prog.ja`), janus/values.py formats values and stores as jana does, and
janus/wording.py words rlang's run-time errors as jana does.  See docs/janus.md.
"""
from __future__ import annotations


def loads_janus(text: str, file: str = "<string>.ja", modular: bool = False):
    """The `Unit` of the Janus program `text` (named `file` in errors)."""
    from .lower import lower_janus
    from .parser import parse_janus

    return lower_janus(parse_janus(text, file), text, modular)
