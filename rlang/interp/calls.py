"""Calls and uncalls of user functions in the interpreter (LANGUAGE.md §5, §6).

Arguments that are views are passed by reference: arrays and stacks as the objects
themselves, scalars copied in and written back when the callee returns (so `f(a[i])`
updates the element).  Other arguments are expressions, evaluated into temporaries
that the callee must leave unchanged (checked while invcheck is on).  While invcheck
is on, an argument bound to a parameter the callee may write must not share memory
with any other argument.
"""
from __future__ import annotations

import numpy as np

from ..frontend import ast
from .comparisons import values_equal
from ..errors import ReversibilityError, RlangError, RlangRuntimeError
from .evaluate import ElemRef, FieldRef, VarRef
from .limits import size_of
from .trail import AfterStatement, CallPoint
from ..values import Stack, summarize


class CallEntry:
    """A call in progress: the callee, its variables, and what returning needs (the
    caller's views, the budget held for temporaries, the expression arguments'
    values to compare against)."""

    __slots__ = ("stmt", "function", "env", "refs", "held", "saved")

    def __init__(self, stmt, function, env, refs, held, saved):
        self.stmt, self.function, self.env = stmt, function, env
        self.refs, self.held, self.saved = refs, held, saved


def execute_call(interp, stmt: ast.CallStmt, env) -> None:
    entry = enter_call(interp, stmt, env)
    try:
        interp.run_function(entry.function, entry.env, stmt.inverse, call_site=stmt.span)
    except RlangError as error:
        error.trail.append(CallPoint(entry))
        raise
    try:
        leave_call(interp, entry)
    except RlangError as error:
        error.trail.append(AfterStatement())
        raise


def enter_call(interp, stmt: ast.CallStmt, env) -> CallEntry:
    """Bind the arguments of `stmt` (a call or uncall) in `env` to a new variable
    dictionary for the callee, making the checks a call makes before it runs."""
    fn = interp.functions.get(stmt.func)
    if fn is None:
        raise RlangRuntimeError(f"call to undefined function `{stmt.func}`", stmt.span)
    if len(stmt.args) != len(fn.params):
        raise RlangRuntimeError(f"`{fn.name}` takes {len(fn.params)} argument(s), got "
                                f"{len(stmt.args)}", stmt.span)
    check = interp.invcheck
    ev = interp.evaluator
    refs, values = [], []
    for arg in stmt.args:
        ref = _view_ref(interp, arg, env)
        refs.append(ref)
        values.append(ref.get() if ref is not None else ev.eval(arg, env))
    held = 0 if interp.budget is None else \
        hold_temporaries(interp, refs, values, stmt.span, copies=2 if check else 1)
    saved = None
    if check:
        _check_aliasing(interp, stmt, fn, refs)
        saved = [(i, _snapshot(v)) for i, (r, v) in enumerate(zip(refs, values)) if r is None]
    callee_env = {}
    for param, value in zip(fn.params, values):
        callee_env[param.name] = interp.bind_argument(fn, param, value, False, stmt.span)
    return CallEntry(stmt, fn, callee_env, refs, held, saved)


def leave_call(interp, entry: CallEntry) -> None:
    """Return from the call `entry`: write scalar parameters back to the caller's
    views and check that expression arguments came back unchanged."""
    fn, callee_env, stmt = entry.function, entry.env, entry.stmt
    if entry.held:
        interp.budget.release(entry.held)
        entry.held = 0
    written = interp.written.get(fn.name, frozenset())
    for i, (param, ref) in enumerate(zip(fn.params, entry.refs)):
        if ref is not None:
            new = callee_env[param.name]
            if not isinstance(new, (np.ndarray, Stack)):
                _put_back(ref, new, logged=i in written)
    for i, before in entry.saved or ():
        after = callee_env[fn.params[i].name]
        if not values_equal(after, before, 0.0):
            raise ReversibilityError(
                f"`{fn.name}` changed its argument {i + 1} (`{fn.params[i].name}`), which is "
                f"an expression, not a view: {summarize(before)} became {summarize(after)}",
                stmt.args[i].span)


def hold_temporaries(interp, refs, values, span, copies: int = 1) -> int:
    """Charge the sandbox's budget for the arrays and stacks among `values` that are
    expressions, not views (`f(zeros(f64, n))`): they live while the call runs,
    `copies` times over where invcheck keeps a copy.  The bytes charged, which the
    caller releases when the call returns."""
    held = 0
    for ref, value in zip(refs, values):
        if ref is None and isinstance(value, (np.ndarray, Stack)):
            held += copies * size_of(value)
    if held:
        interp.budget.reserve(held, span, "the call's array arguments")
    return held


def _put_back(ref, value, logged: bool) -> None:
    """Copy a scalar parameter's value out to its view.  Only a parameter the callee
    may write counts as a write of the view: an element several iterations of a
    `@parallel for` pass for a read-only parameter is a shared read (LANGUAGE.md §6),
    not a shared write (rlang/interp/loops.py tracks writes through the refs' logs)."""
    base = ref.base if isinstance(ref, FieldRef) else ref
    if logged or not isinstance(base, ElemRef) or base.log is None:
        ref.set(value)
        return
    log, base.log = base.log, None
    try:
        ref.set(value)
    finally:
        base.log = log


def _view_ref(interp, arg, env):
    """A ref for a view argument rooted in a local variable; None for expressions."""
    root = ast.view_root(arg)
    if root is None or root.id not in env:
        return None
    return interp.evaluator.ref(arg, env)


def _snapshot(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, Stack):
        return value.copy()
    return value


def _check_aliasing(interp, stmt, fn, refs) -> None:
    written = interp.written.get(fn.name, frozenset())
    for i in written:
        if refs[i] is None:
            continue
        for j, other in enumerate(refs):
            if j == i or other is None or (j in written and j < i):
                continue
            if refs[i].overlaps(other) or _same_object(refs[i], other):
                raise ReversibilityError(
                    f"arguments {min(i, j) + 1} and {max(i, j) + 1} of `{fn.name}` "
                    f"(`{refs[min(i, j)].text}` and `{refs[max(i, j)].text}`) are the same "
                    f"memory, and `{fn.params[i].name}` is written", stmt.span)


def _same_object(a, b) -> bool:
    if isinstance(a, VarRef) and isinstance(b, VarRef):
        x, y = a.get(), b.get()
        return isinstance(x, (np.ndarray, Stack)) and x is y
    return False
