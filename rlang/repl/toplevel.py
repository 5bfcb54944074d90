"""Top-level statements as functions that the checker and the interpreter know.

In: the statements of one REPL input, the session store (name → value) and the
session's functions.  Out: the two forms of a synthesized function named `TOP`:

- `checked_form(stmts, store, span)`, for the checker: every session variable is
  an ancilla allocated first from a parameter of its own (typed from its value), so
  every static rule of LANGUAGE.md §6 applies to the input as to a function body,
  and `x → 2.0` may free a session variable as it frees any ancilla.  A function
  must free its ancillas, the REPL's top level need not (`x ← 2.0` adds a session
  variable), so the form ends by deallocating whatever is bound at the end
  (`x → x`, which always holds);
- `running_form(stmts, span)`, for `Interpreter.run_in`, which runs the body on a
  dict of variables (a copy of the store), so the runtime checks apply too.

`allocations(stmts)` says where an input allocates each name, so that the checker's
notes point at the input that allocated a session variable.
`callees(stmts, functions)` is the part of the session's functions the input can
reach: checking and running only that part keeps a broken, unused function from
blocking everything else.
"""
from __future__ import annotations

import numpy as np

from ..frontend import ast
from ..frontend.analysis import walk_stmts
from ..frontend.invert import invert_body
from ..values import Stack, array_scalar, scalar_type

#: The name of the synthesized function (no rev name can clash with it).
TOP = "<top level>"

#: The ancilla an expression input is evaluated into (`<value> ← expr`).
VALUE = "<value>"


def checked_form(stmts: tuple, store: dict, span, origins: dict) -> ast.Function:
    """`function TOP(incoming values…)` with the prologue and epilogue above; the
    prologue's allocations carry the spans of `origins` (name → where the session
    variable was allocated), which the checker quotes in its notes."""
    params = tuple(ast.Param(_incoming(name), type_of(value), span=span)
                   for name, value in store.items())
    prologue = tuple(ast.Alloc(name, ast.Name(_incoming(name), span=span),
                               span=origins.get(name) or span)
                     for name in store)
    epilogue = tuple(ast.Dealloc(name, ast.Name(name, span=span), span=span)
                     for name in sorted(live_after(stmts, set(store))))
    return ast.Function(TOP, params, prologue + tuple(stmts) + epilogue, span=span)


def running_form(stmts: tuple, span) -> ast.Function:
    """`function TOP()` whose body is the input, for `Interpreter.run_in`."""
    return ast.Function(TOP, (), tuple(stmts), span=span)


def _incoming(name: str) -> str:
    return f"<{name} before>"


def type_of(value) -> ast.TypeRef | None:
    """The declared type a session variable's value has (None: leave it generic)."""
    scalar = scalar_type(value)
    if scalar is not None:
        return ast.TypeRef(scalar)
    if isinstance(value, np.ndarray) and array_scalar(value) is not None and value.ndim:
        return ast.TypeRef(array_scalar(value), value.ndim)
    if isinstance(value, Stack):
        return ast.TypeRef(value.elem, is_stack=True)
    return None


def live_after(stmts: tuple, live: set) -> set:
    """The variables bound after `stmts` run at the top level, given those bound
    before.  Only statements that are not scopes (Note [Scopes] in rlang/frontend/check.py)
    can change the set: allocations, deallocations, `@zeros`, blocks and routines."""
    live = set(live)
    routines: list[tuple[set, set]] = []
    for stmt in stmts:
        while isinstance(stmt, ast.Annotated):
            stmt = stmt.stmt
        match stmt:
            case ast.Alloc(name=name):
                live.add(name)
            case ast.Dealloc(name=name):
                live.discard(name)
            case ast.Zeros(names=names, inverse=inverse):
                live = live - set(names) if inverse else live | set(names)
            case ast.Block(body=body, inverse=inverse):
                live = live_after(invert_body(body) if inverse else body, live)
            case ast.Routine(body=body):
                before, live = live, live_after(body, live)
                routines.append((live - before, before - live))
            case ast.UnRoutine() if routines:
                allocated, freed = routines.pop()
                live = (live - allocated) | freed
    return live


def allocations(stmts: tuple) -> dict:
    """name → span of the statement of `stmts` that allocates it at the top level
    (the last one; inside `begin`, `~begin` and `@routine` blocks too)."""
    found = {}
    for stmt in stmts:
        while isinstance(stmt, ast.Annotated):
            stmt = stmt.stmt
        match stmt:
            case ast.Alloc(name=name):
                found[name] = stmt.span
            case ast.Zeros(names=names, inverse=False):
                found.update((name, stmt.span) for name in names)
            case ast.Block(body=body, inverse=inverse):
                found.update(allocations(invert_body(body) if inverse else body))
            case ast.Routine(body=body):
                found.update(allocations(body))
    return found


def callees(stmts: tuple, functions: dict) -> dict:
    """The functions `stmts` call, directly or not, by name (those that exist)."""
    reached: dict = {}
    pending = [stmts]
    while pending:
        for stmt in walk_stmts(pending.pop()):
            if isinstance(stmt, ast.CallStmt) and stmt.func in functions \
                    and stmt.func not in reached:
                reached[stmt.func] = functions[stmt.func]
                pending.append(reached[stmt.func].body)
    return reached


def copy_store(store: dict) -> dict:
    """A copy of the store that a run may change without touching the original."""
    return {name: value.copy() if isinstance(value, (np.ndarray, Stack)) else value
            for name, value in store.items()}
