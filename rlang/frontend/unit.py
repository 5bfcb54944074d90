"""A compilation unit: a program together with everything it includes.

`Unit` is what the checker, the inverter driver, the interpreter and (later) the
compiled backends work on.  It is built by `rlang.frontend.loader.load_unit`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ast import Const, Function, Program


@dataclass
class Unit:
    """`program` is the main file's AST; `functions` and `consts` hold the definitions
    of the main file and of every file it includes (transitively), by name.
    `redefinitions` lists the later definitions of a name already defined (the
    checker reports them).  `file` is the main file's name as given."""

    program: Program
    file: str
    functions: dict[str, Function] = field(default_factory=dict)
    consts: dict[str, Const] = field(default_factory=dict)
    redefinitions: list = field(default_factory=list)
    included_programs: list = field(default_factory=list)
    #: (file, source text) of the main file and of each included one, in load order:
    #: what compiled code depends on (the llvm backend's cache key)
    sources: list = field(default_factory=list)
    #: "rev", or "janus" for a .ja program (rlang/frontend/janus): how `@safe` output
    #: is formatted and how `rlang run` prints main's store
    dialect: str = "rev"
    #: what an i64 result outside i64 does: "wrap" (rev, two's complement) or
    #: "unbounded" (Janus: the interpreter keeps it exact, compiled code reports an
    #: overflow; Note [Janus integers])
    integers: str = "wrap"
