"""The tree-walking interpreter: the reference semantics of rev.

`Interpreter(unit, invcheck=True)` runs checked programs.  `call(name, args,
inverse=False)` runs a function (or its inverse) on Python values and returns the
new values of its arguments; `run_main()` runs `main` and returns its store as
(name, value) pairs.  Arrays are updated in place.

Running backward is running the inverted AST forward: inverted bodies come from
`rlang.frontend.invert` (cached per function and per `~begin`/`@routine` block), and keep the
spans of the forward source, so an error in a backward run points at the line the
user wrote.  Every run-time check of LANGUAGE.md §6 is made while `invcheck` is on,
and none when it is off (`@invcheckoff` turns it off for one statement).

Errors leaving a call collect the call chain (function, call site, direction and
the frame's variables) as they unwind.

With `sandbox=Sandbox(…)` (rlang/interp/limits.py, Note [Sandbox]) every run is held
to the sandbox's limits: `self.budget` is ticked by each loop iteration and call and
charged for each array and stack element allocated.  Without one, `budget` is None
and each of those places costs one test of it.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import cached_property

import numpy as np

from ..frontend import ast
from . import ops
from ..frontend.check_cache import written_of
from .calls import execute_call
from .comparisons import check_dealloc
from ..errors import (Frame, LimitExceeded, ReversibilityError, RlangError, RlangRuntimeError,
                      RlangTypeError)
from ..frontend.ast import is_number_literal
from .evaluate import Evaluator, UnaddressableZeros, adapt_literal
from .instructions import execute_instruction
from .limits import Budget, size_of
from .trail import FunctionPoint, record_body, record_end
from ..frontend.invert import invert_body
from ..frontend.janus.wording import janus_wording
from .loops import execute_for
from ..frontend.printer import format_expr, format_type
from .safe import execute_safe
from ..values import (UNBOUNDED_INTEGERS, Stack, a_type, argument_type, conform,
                      is_device_array, scalar_type, summarize, with_article, zero_of)

#: Default limit of the call depth (LANGUAGE.md §4).
MAX_DEPTH = 10_000


#: The runner of derivative statements (`grad f(…) wrt … into …`), set by
#: rlang/ad/nested_run.py when it is imported: they run the gradient interpreter,
#: which lies in a layer above this one (docs/architecture.md, "Layers").
DERIVATIVE_RUNNERS: dict = {}


class _FrameState:
    """A running function: its variables, and what an error report needs."""

    __slots__ = ("function", "env", "backward", "call_site")

    def __init__(self, function: str, env: dict, backward: bool, call_site):
        self.function, self.env, self.backward, self.call_site = function, env, backward, call_site


class Interpreter:
    """Runs the functions of a `Unit` (which the checker has accepted)."""

    def __init__(self, unit, invcheck: bool = True, max_depth: int | None = None, out=None,
                 sandbox=None):
        """`max_depth` None: MAX_DEPTH as it is when the interpreter is made."""
        self.unit = unit
        self.functions = unit.functions
        self.invcheck = invcheck
        self.sandbox = sandbox
        self.max_depth = sandbox.max_depth if sandbox is not None else \
            MAX_DEPTH if max_depth is None else max_depth
        self.budget = None if sandbox is None else Budget(sandbox)
        self.out = out
        self.depth = 0
        self.backward = False       # the direction the current statement runs in
        self.frame_backward = False  # the direction of the current function
        self.evaluator = Evaluator({})
        self.evaluator.budget = self.budget     # constants too: `const A = zeros(…)`
        self.evaluator.consts.update(self._eval_consts())
        self._inverse_bodies: dict[int, tuple] = {}
        self._stmt = {
            ast.Update: self._update, ast.Instr: self._instr, ast.Alloc: self._alloc,
            ast.Dealloc: self._dealloc, ast.Zeros: self._zeros, ast.CallStmt: self._call_stmt,
            ast.Block: self._block, ast.If: self._if, ast.While: self._while,
            ast.From: self._from, ast.For: self._for, ast.Annotated: self._annotated,
            ast.Safe: self._safe, ast.Derivative: self._derivative,
        }

    @cached_property
    def written(self) -> dict:
        """function name → the parameter positions it may write (found when first
        asked, from the disk cache where the loader made the unit: Note [Checked
        programs on disk])."""
        return written_of(self.unit)

    def _eval_consts(self) -> dict:
        values = {}
        for const in self.unit.consts.values():
            self.evaluator.consts = values
            values[const.name] = self.evaluator.eval(const.value, {})
        return values

    # ------------------------------------------------------------- entry points
    def call(self, name: str, args: list, inverse: bool = False, convert: bool = True) -> list:
        """Run `name` (or its inverse) on `args`; return the arguments' new values."""
        fn = self.functions.get(name)
        if fn is None:
            raise RlangRuntimeError(f"no function named `{name}`")
        env = dict(zip((p.name for p in fn.params), self.bind_arguments(name, args, convert)))
        self.check_writable(fn, list(env.values()))
        if self.invcheck:
            self.check_argument_aliasing(fn, list(env.values()))
        self.run_in(fn, env, inverse)
        return [env[p.name] for p in fn.params]

    def bind_arguments(self, name: str, args: list, convert: bool = True) -> list:
        """`args` as the values `name`'s parameters take (converted from Python values
        with `convert`: NumPy scalars, lists, 0-d arrays, `__array__` objects), or an
        RlangTypeError naming the first argument that cannot be one.  What every call
        and every derivative driver does first, on every backend."""
        fn = self.functions.get(name)
        if fn is None:
            raise RlangRuntimeError(f"no function named `{name}`")
        if len(args) != len(fn.params):
            raise RlangTypeError(f"`{name}` takes {len(fn.params)} argument(s), got {len(args)}",
                                 fn.span)
        return [self.bind_argument(fn, param, value, convert, param.span)
                for param, value in zip(fn.params, args)]

    def check_writable(self, fn, values) -> None:
        """Refuse a read-only NumPy array (`a.flags.writeable` off, a read-only
        memory map) where `fn` updates the argument in place."""
        for k in self.written.get(fn.name, ()):
            value = values[k]
            if isinstance(value, np.ndarray) and not value.flags.writeable:
                param = fn.params[k]
                raise RlangTypeError(f"argument `{param.name}` of `{fn.name}` is a read-only "
                                     f"array, but `{fn.name}` updates it in place; pass a "
                                     f"writable copy", param.span)

    def check_argument_aliasing(self, fn, values) -> None:
        """Arrays handed in from Python must not share memory with another argument
        when the function may write them (the rule of LANGUAGE.md §5)."""
        written = self.written.get(fn.name, frozenset())
        for i in written:
            a = values[i]
            if not isinstance(a, np.ndarray):       # (most calls: a written scalar)
                continue
            for j, other in enumerate(values):
                if j != i and isinstance(other, np.ndarray) and np.shares_memory(a, other):
                    raise ReversibilityError(
                        f"arguments {min(i, j) + 1} and {max(i, j) + 1} of `{fn.name}` are the "
                        f"same memory, and `{fn.params[i].name}` is written")

    def run_main(self) -> list:
        """Run `main()`; return its store, in allocation order."""
        fn = self.functions.get("main")
        if fn is None:
            defined = ", ".join(self.functions) or "no functions"
            raise RlangRuntimeError(f"{self.unit.file} has no `function main()`; name the "
                                    f"function to run (it defines {defined})")
        env: dict = {}
        self.run_in(fn, env)
        return list(env.items())

    def run_in(self, fn: ast.Function, env: dict, inverse: bool = False) -> None:
        """Run the body of `fn` (or its inverse) on the variables `env`, which it
        updates in place: allocations add to it, deallocations remove from it.  The
        REPL runs its top-level statements this way, on a copy of its store."""
        with self.dialect():
            self.run_function(fn, env, inverse, call_site=None)

    @contextmanager
    def dialect(self):
        """Run in the unit's dialect: a unit whose integers are "unbounded" (Janus,
        Note [Janus integers]) with UNBOUNDED_INTEGERS on, its errors in its own words
        (`worded`)."""
        token = UNBOUNDED_INTEGERS.set(self.unit.integers == "unbounded")
        try:
            yield
        except RlangError as error:
            raise self.worded(error)
        finally:
            UNBOUNDED_INTEGERS.reset(token)

    def worded(self, error: RlangError) -> RlangError:
        """`error` in the words of the unit's language: jana's for a Janus program
        (Note [Janus error wording])."""
        return janus_wording(error) if self.unit.dialect == "janus" else error

    # ---------------------------------------------------------------- functions
    def body_of(self, fn: ast.Function, backward: bool) -> tuple:
        return self.inverse_of(fn.body) if backward else fn.body

    def inverse_of(self, body: tuple) -> tuple:
        """The inverse of a statement list, computed once per list."""
        key = id(body)
        cached = self._inverse_bodies.get(key)
        if cached is None or cached[0] is not body:
            cached = (body, invert_body(body))
            self._inverse_bodies[key] = cached
        return cached[1]

    def run_function(self, fn, env, backward, call_site):
        self.depth += 1
        outer_direction, self.backward = self.backward, backward
        outer_frame, self.frame_backward = self.frame_backward, backward
        try:
            if self.budget is not None:
                self.budget.enter(self.depth, call_site or fn.span)
            if self.depth > self.max_depth:
                raise self.too_deep(call_site or fn.span)
            self._exec_body(self.body_of(fn, backward), env)
        except RlangError as error:
            error.add_frame(Frame(fn.name, call_site, backward, format_env(env)))
            error.trail.append(FunctionPoint(fn, env, backward, call_site, self))
            raise
        except MemoryError:     # an allocation the host cannot make: the program's error
            error = RlangRuntimeError(f"out of memory while running `{fn.name}`",
                                      call_site or fn.span)
            error.add_frame(Frame(fn.name, call_site, backward, format_env(env)))
            raise error from None
        finally:
            self.depth -= 1
            self.backward = outer_direction
            self.frame_backward = outer_frame

    def too_deep(self, span) -> RlangRuntimeError:
        """The error of a call past the depth limit: in a sandbox, a LimitExceeded."""
        if self.sandbox is None:
            return RlangRuntimeError(f"call depth exceeded the limit of {self.max_depth} "
                                     "(unbounded recursion?)", span)
        return LimitExceeded("depth", f"call depth exceeded the sandbox's depth limit of "
                             f"{self.max_depth} (unbounded recursion?)", span)

    def bind_argument(self, fn, param, value, convert, span):
        # only values from outside widen (Note [Widening read-only arrays]); calls inside
        # a program, the hot path, skip the lookup
        read_only = convert and fn.params.index(param) not in self.written.get(fn.name, ())
        conformed = conform(value, param.type, convert, read_only)
        if conformed is None:
            expected = "a rev value (a number, a bool, a NumPy array or a list; integers " \
                "within i64)" if param.type is None else with_article(format_type(param.type))
            shown = summarize(value) if scalar_type(value) or \
                isinstance(value, (np.ndarray, Stack)) else repr(value)[:60]
            what = "an integer outside i64," if type(value) is int and \
                not -(1 << 63) <= value < 1 << 63 else argument_type(value)
            notes = ("a device array is read from the host only for a parameter the function "
                     "does not update: load the program with backend=\"cuda\", or copy it "
                     "with copy_to_host()",) if is_device_array(value) else ()
            raise RlangTypeError(f"argument `{param.name}` of `{fn.name}` must be {expected}, "
                                 f"got {what} {shown}", span, notes)
        return conformed

    # --------------------------------------------------------------- statements
    def execute(self, stmt, env: dict, backward: bool, frame_backward: bool,
                invcheck: bool) -> None:
        """Run the one statement `stmt` (not a `@routine` marker) on `env`, in a
        frame running `frame_backward`, the statement itself running `backward`,
        with `invcheck` as given.  What the debugger runs a step with."""
        saved = self.backward, self.frame_backward, self.invcheck
        self.backward, self.frame_backward, self.invcheck = backward, frame_backward, invcheck
        try:
            self._exec_body((stmt,), env)
        finally:
            self.backward, self.frame_backward, self.invcheck = saved

    def _exec_body(self, stmts: tuple, env: dict) -> None:
        routines = []
        stmt = None
        try:
            for stmt in stmts:
                kind = type(stmt)
                if kind is ast.Routine:
                    self._exec_oriented(stmt.body, env, False, "`@routine`", stmt.span)
                    routines.append(stmt)
                elif kind is ast.UnRoutine:
                    if not routines:
                        raise RlangRuntimeError("`~@routine` without a `@routine` before it",
                                                stmt.span)
                    self._exec_oriented(self.inverse_of(routines.pop().body), env, True,
                                        "`~@routine`", stmt.span)
                else:
                    self._stmt[kind](stmt, env)
        except RlangError as error:
            record_body(error, stmts, stmt, self.backward, self.invcheck)
            raise

    def _update(self, stmt: ast.Update, env):
        ref = self.evaluator.ref(stmt.target, env)
        old = ref.get()
        ref.set(ops.accumulate(stmt.op, old, self.update_value(stmt, ref, old, env),
                               stmt.span, ref))

    def update_value(self, stmt: ast.Update, ref, old, env, memo: dict | None = None):
        """The right-hand side of an update of `ref` (holding `old`): evaluated while
        the target is watched (invcheck on), a literal adopting the target's type.
        With `memo`, the value of every node is recorded there (see gvar.backprop)."""
        ev = self.evaluator
        evaluate = ev.eval if memo is None else \
            (lambda expr, env: ev.eval_recording(expr, env, memo))
        if self.invcheck:
            ev.watched = ref
            try:
                rhs = evaluate(stmt.value, env)
            finally:
                ev.watched = None
        else:
            rhs = evaluate(stmt.value, env)
        if is_number_literal(stmt.value):
            rhs = adapt_literal(rhs, old, stmt.value)
        if isinstance(old, (np.ndarray, Stack)):
            raise RlangTypeError(f"`{stmt.op}` updates scalars; `{ref.text}` is "
                                 f"{a_type(old)} (loop over its elements)", stmt.target.span)
        return rhs

    def _instr(self, stmt: ast.Instr, env):
        execute_instruction(self, stmt, env)

    def _alloc(self, stmt: ast.Alloc, env):
        if stmt.name in env:
            raise ReversibilityError(f"`{stmt.name}` is already allocated", stmt.span)
        value = self.evaluator.eval(stmt.value, env)
        if isinstance(value, (np.ndarray, Stack)):
            if self.budget is not None:
                self.budget.reserve(size_of(value), stmt.span, f"`{stmt.name}`")
            if not _is_fresh(stmt.value):
                value = value.copy()
        elif isinstance(value, (str, ast.TypeRef)):
            raise RlangTypeError(f"cannot allocate {a_type(value)}", stmt.value.span)
        env[stmt.name] = value

    def free(self, name: str, env: dict) -> None:
        """Deallocate `name`: take it out of `env`, giving its bytes back to the budget."""
        value = env.pop(name)
        if self.budget is not None:
            self.budget.release(size_of(value))

    def _dealloc(self, stmt: ast.Dealloc, env):
        if stmt.name not in env:
            raise ReversibilityError(f"`{stmt.name}` is not allocated", stmt.span)
        if self.invcheck:
            expected = self.expected_value(stmt, env, env[stmt.name])
            if is_number_literal(stmt.value):
                expected = adapt_literal(expected, env[stmt.name], stmt.value)
            check_dealloc(stmt.name, env[stmt.name], expected, stmt.span)
        self.free(stmt.name, env)

    def expected_value(self, stmt: ast.Dealloc, env, current):
        """The value `current` (the variable's) is checked against; a `zeros` too large
        for any array to have its shape fails the check here."""
        try:
            return self.evaluator.eval_expected(stmt.value, env)
        except UnaddressableZeros as zeros:
            raise ReversibilityError(
                f"deallocation check failed: {stmt.name} = {summarize(current)}, "
                f"expected {zeros.summary()}", stmt.span) from None

    def _zeros(self, stmt: ast.Zeros, env):
        scalar = stmt.type.scalar
        if stmt.type.ndim or stmt.type.is_stack:
            raise RlangTypeError("@zeros allocates scalars; allocate arrays with "
                                 "`a ← zeros(T, n…)` and stacks with `s ← stack(T)`",
                                 stmt.type.span)
        zero = zero_of(scalar)
        for name in reversed(stmt.names) if stmt.inverse else stmt.names:
            if not stmt.inverse:
                if name in env:
                    raise ReversibilityError(f"`{name}` is already allocated", stmt.span)
                env[name] = zero
                continue
            if name not in env:
                raise ReversibilityError(f"`{name}` is not allocated", stmt.span)
            if self.invcheck:
                check_dealloc(name, env[name], zero, stmt.span)
            del env[name]

    def _block(self, stmt: ast.Block, env):
        if stmt.inverse:
            self._exec_oriented(self.inverse_of(stmt.body), env, not self.backward,
                                "`~begin … end`", stmt.span)
        else:
            self._exec_body(stmt.body, env)

    def _exec_oriented(self, body: tuple, env: dict, backward: bool, what: str, span) -> None:
        """Run a block whose statements run `backward` (or forward) relative to the
        source text, whatever the function's direction.  A routine's body keeps its
        source orientation in both directions of the function (so `@routine` runs it
        forward and `~@routine` backward); `~begin` flips the current direction.  An
        error inside says so when that differs from the direction of its frame."""
        outer, self.backward = self.backward, backward
        try:
            self._exec_body(body, env)
        except RlangError as error:
            if backward != self.frame_backward and not getattr(error, "direction_noted", False):
                direction = "backward" if backward else "forward"
                error.notes += (f"this statement was running {direction}, as part of {what} "
                                f"at {span}",)
                error.direction_noted = True
            raise
        finally:
            self.backward = outer

    def _annotated(self, stmt: ast.Annotated, env):
        if stmt.annotation != "invcheckoff":   # @inbounds: the interpreter always checks
            self._exec_body((stmt.stmt,), env)
            return
        saved = self.invcheck
        self.invcheck = False
        try:
            self._exec_body((stmt.stmt,), env)
        finally:
            self.invcheck = saved

    def _safe(self, stmt: ast.Safe, env):
        execute_safe(self, stmt, env)

    # ----------------------------------------------------------- control flow
    def cond(self, expr, env, what: str) -> bool:
        """The truth of the condition `expr` (`what` names it in a type error)."""
        return ops.truth(self.evaluator.eval(expr, env), what, expr.span)

    def taken_branch(self, stmt: ast.If, env) -> int | None:
        """The index of the first branch of `stmt` whose condition holds; None: else."""
        for k, branch in enumerate(stmt.branches):
            if self.cond(branch.pre, env, "an `if` condition"):
                return k
        return None

    def _if(self, stmt: ast.If, env):
        taken = self.taken_branch(stmt, env)
        body = branch_body(stmt, taken)
        self._exec_body(body, env)
        if self.invcheck:
            try:
                self.check_if_post(stmt, taken, env)
            except RlangError as error:
                record_end(error, body, self.backward, self.invcheck)
                raise

    def check_if_post(self, stmt: ast.If, taken, env):
        """The check after branch `taken` (None: else) of `stmt` ran (LANGUAGE.md §6)."""
        for k, branch in enumerate(stmt.branches):
            post = branch.pre if branch.post is None else branch.post
            holds = self.cond(post, env, "an `if` postcondition")
            if k == taken and not holds:
                what = "condition" if branch.post is None else "postcondition"
                raise ReversibilityError(
                    f"`if` {what} `{format_expr(post)}` is false after its branch ran"
                    + (" (the branch changed its own condition)" if branch.post is None else ""),
                    post.span)
            if k != taken and (taken is None or k < taken) and holds:
                where = "the else branch" if taken is None else f"branch {taken + 1}"
                raise ReversibilityError(
                    f"`if` postcondition `{format_expr(post)}` of branch {k + 1} holds after "
                    f"{where} ran, so running backward would take the wrong branch", post.span)

    def _while(self, stmt: ast.While, env):
        check = self.invcheck
        if check:
            self.check_while_entry(stmt, env)
        budget = self.budget
        after_pass = False          # an error past here: the body's end (Note [Resuming…])
        try:
            while self.cond(stmt.pre, env, "a `while` condition"):
                if budget is not None:
                    budget.tick(stmt.span)
                after_pass = False
                self._exec_body(stmt.body, env)
                after_pass = True
                if check:
                    self.check_while_pass(stmt, env)
        except RlangError as error:
            if after_pass:
                record_end(error, stmt.body, self.backward, self.invcheck)
            raise

    def check_while_entry(self, stmt: ast.While, env) -> None:
        """A `while` loop's postcondition must be false when the loop starts."""
        if self.cond(stmt.post, env, "a `while` postcondition"):
            raise ReversibilityError(f"`while` postcondition `{format_expr(stmt.post)}` must be "
                                     "false when the loop starts", stmt.post.span)

    def check_while_pass(self, stmt: ast.While, env) -> None:
        """A `while` loop's postcondition must hold after every pass."""
        if not self.cond(stmt.post, env, "a `while` postcondition"):
            raise ReversibilityError(f"`while` postcondition `{format_expr(stmt.post)}` "
                                     "must hold after every iteration", stmt.post.span)

    def _from(self, stmt: ast.From, env):
        check = self.invcheck
        if check:
            self.check_from_entry(stmt, env)
        self._exec_body(stmt.body, env)
        budget = self.budget
        done = stmt.body            # the part that ran last, whose end an error is at
        try:
            while not self.cond(stmt.stop, env, "an `until` condition"):
                if budget is not None:
                    budget.tick(stmt.span)
                done = None
                self._exec_body(stmt.step, env)
                done = stmt.step
                if check:
                    self.check_from_repeat(stmt, env)
                done = None
                self._exec_body(stmt.body, env)
                done = stmt.body
        except RlangError as error:
            if done is not None:
                record_end(error, done, self.backward, self.invcheck)
            raise

    def check_from_entry(self, stmt: ast.From, env) -> None:
        """A `from` loop's entry condition must hold when the loop starts."""
        if not self.cond(stmt.start, env, "a `from` condition"):
            raise ReversibilityError(f"`from` condition `{format_expr(stmt.start)}` must hold "
                                     "when the loop starts", stmt.start.span)

    def check_from_repeat(self, stmt: ast.From, env) -> None:
        """A `from` loop's entry condition must be false after each `loop` part."""
        if self.cond(stmt.start, env, "a `from` condition"):
            raise ReversibilityError(f"`from` condition `{format_expr(stmt.start)}` must be "
                                     "false after the first iteration", stmt.start.span)

    def _for(self, stmt: ast.For, env):
        execute_for(self, stmt, env)

    # ------------------------------------------------------------------ calls
    def _call_stmt(self, stmt: ast.CallStmt, env):
        execute_call(self, stmt, env)

    def _derivative(self, stmt: ast.Derivative, env):
        run = DERIVATIVE_RUNNERS.get("run")
        if run is None:
            raise RlangRuntimeError(f"`{stmt.mode}` statements need rlang.ad.nested_run "
                                    "(import rlang.api)", stmt.span)
        run(self, stmt, env)


def _is_fresh(expr) -> bool:
    """Whether `expr` makes a new array or stack, which `←` may keep without a copy."""
    return isinstance(expr, ast.ArrayLit) or \
        isinstance(expr, ast.Call) and expr.func in ("zeros", "stack")


def branch_body(stmt: ast.If, taken: int | None) -> tuple:
    """The statements branch `taken` of `stmt` runs (None: the else branch, or none)."""
    if taken is not None:
        return stmt.branches[taken].body
    return stmt.orelse or ()


def format_env(env: dict) -> str:
    """A frame's variables as an error's call chain shows them."""
    return ", ".join(f"{name} = {summarize(value)}" for name, value in env.items())
