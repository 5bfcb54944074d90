"""`for` and `@parallel for` in the interpreter (LANGUAGE.md §6).

The bounds are evaluated once.  While invcheck is on, the body must leave the index
unchanged (checked after every iteration) and the bounds must evaluate to the same
values after the loop.  A parallel loop runs its iterations in order here; with
invcheck on it records which array elements each iteration writes and refuses a
write that another iteration made too (a write shared between iterations).
"""
from __future__ import annotations

from ..frontend import ast
from ..errors import ReversibilityError, RlangError, RlangRuntimeError, RlangTypeError
from ..frontend.invert import inverted_range
from ..frontend.printer import format_expr
from .trail import AfterStatement, LoopIndex, record_end
from ..values import a_type, summarize


def _bound(interp, expr, env, what):
    value = interp.evaluator.eval(expr, env)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RlangTypeError(f"the {what} of a `for` range must be an integer, got "
                             f"{a_type(value)} {summarize(value)}", expr.span)
    return value


def _bounds(interp, stmt, env):
    return (_bound(interp, stmt.start, env, "start"), _bound(interp, stmt.step, env, "step"),
            _bound(interp, stmt.stop, env, "stop"))


def execute_for(interp, stmt: ast.For, env) -> None:
    bounds, indices = for_range(interp, stmt, env)
    check = interp.invcheck
    tracker = _WriteTracker(interp, stmt) if stmt.parallel and check else None
    var = stmt.var
    budget = interp.budget
    i, after_pass = None, False     # after_pass: an error is at the body's end
    try:
        for i in indices:
            if budget is not None:
                budget.tick(stmt.span)
            env[var] = i
            if tracker is not None:
                tracker.iteration = i
            after_pass = False
            interp._exec_body(stmt.body, env)
            after_pass = True
            if check:
                check_index(stmt, env, i)
    except RlangError as error:
        if after_pass:
            record_end(error, stmt.body, interp.backward, interp.invcheck)
        if i is not None:
            error.trail.append(LoopIndex(stmt, env.get(var, i)))
        raise
    finally:
        env.pop(var, None)
        if tracker is not None:
            tracker.close()
    if check:
        try:
            check_range_after(interp, stmt, env, bounds)
        except RlangError as error:
            error.trail.append(AfterStatement())
            raise


def for_range(interp, stmt: ast.For, env):
    """The bounds (start, step, stop) of `stmt` as evaluated now, and the index values
    it visits, in order (Note [Loop inversion] for a range written backward)."""
    start, step, stop = _bounds(interp, stmt, env)
    if step == 0:
        raise RlangRuntimeError("the step of a `for` range must not be zero", stmt.step.span)
    original = inverted_range(stmt.start, stmt.step, stmt.stop)
    if original is None:
        return (start, step, stop), _range(start, step, stop)
    a, s, b = (_bound(interp, e, env, what) for e, what in
               zip(original, ("start", "step", "stop")))
    return (start, step, stop), _range(a, s, b)[::-1]


def check_index(stmt: ast.For, env, i: int) -> None:
    """The body of a `for` loop must leave its index as it found it."""
    if env.get(stmt.var) != i:
        raise ReversibilityError(f"the body of the loop changed its index `{stmt.var}` "
                                 f"from {i} to {summarize(env.get(stmt.var))}", stmt.span)


def check_range_after(interp, stmt: ast.For, env, bounds) -> None:
    """The bounds of a `for` loop must be what they were before it ran."""
    start, step, stop = bounds
    after = _bounds(interp, stmt, env)
    if interp.backward and after != bounds:
        # the range here is the inverted one: name no expression the user did not write
        raise ReversibilityError(
            "the loop body changed the loop's range while the loop ran backward (as "
            f"the inverse runs it, the range went from {start}:{step}:{stop} to "
            f"{after[0]}:{after[1]}:{after[2]})", stmt.span)
    for what, before, now, expr in zip(("start", "step", "stop"), bounds,
                                       after, (stmt.start, stmt.step, stmt.stop)):
        if before != now:
            raise ReversibilityError(
                f"the {what} of the loop range `{format_expr(expr)}` changed from {before} "
                f"to {now} while the loop ran", expr.span)


def _range(start: int, step: int, stop: int) -> range:
    return range(start, stop + 1, step) if step > 0 else range(start, stop - 1, step)


class _WriteTracker:
    """Records, per array element, the iteration of a parallel loop that wrote it."""

    def __init__(self, interp, stmt):
        self.interp, self.stmt = interp, stmt
        self.iteration = None
        self.writers: dict = {}
        self.previous = interp.evaluator.write_log
        interp.evaluator.write_log = self.record

    def record(self, ref) -> None:
        if self.previous is not None:
            self.previous(ref)
        key = (id(ref.array), ref.index)
        writer = self.writers.setdefault(key, (self.iteration, ref.array))[0]
        if writer != self.iteration:
            var = self.stmt.var
            raise ReversibilityError(
                f"@parallel for: iterations {var} = {writer} and {var} = {self.iteration} both "
                f"write `{ref.text}`; iterations must not share a write", self.stmt.span)

    def close(self) -> None:
        self.interp.evaluator.write_log = self.previous
