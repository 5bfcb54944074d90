"""The debugger's stepping machine: a position in a running program that moves one
statement forward by running the statement, and one statement backward by running
its inverse.

`Machine(interp, function, env, backward)` stands before the first statement of
`function` (its inverse when `backward`) over the variables `env`.  `step()` moves
forward one statement, into compound statements and calls; `back()` undoes one,
entering compound statements and calls from their end.  A position is a stack of
`Frame`s (one per running function), each a stack of `Seq`s (one per statement list
being run: a body, a branch, a loop part), each with an index: the position is
before `body[index]` of the innermost `Seq`.  `depth` orders positions for `next`
and `finish`.  An `RlangError` from a step leaves the machine where the step failed,
with the store as the failing statement found it (Note [Resuming at a failure]).

# Note [Stepping backward without a log]
Going back runs inverses; nothing is recorded on the way forward.  Undoing a simple
statement runs `invert_stmt` of it.  Undoing a compound statement enters it from its
end, and what a log would say (which branch ran, whether a loop pass was the first)
is read from the store, exactly as the inverse program decides it: an `if` is
entered at the end of the first branch whose postcondition holds; at the start of a
`from` body, the entry condition says whether this was the first pass; a `while`
pass had a pass before it when the postcondition holds; a `for` loop's index says
which pass it is; a call is entered at the end of the callee's body, with the
arguments as they are now.  Each position reached backward is one the forward run
passed through, so `step` and `back` are inverses of each other (stops included),
which the tests check on every example.

# Note [Callers see their callees' scalars]
The interpreter passes a scalar view (`f(x)`, `f(a[i])`) by copying it into the
callee and back when the callee returns.  Between those two moments the caller's
variable holds the value from before the call going forward, but the value from after
it going backward, so `where` and `print` in an outer frame would show different
values at the same position depending on how it was reached.  After every step the
machine copies each running call's scalar parameters out to the caller's views, as a
by-reference language (Janus) shows them; the copy back on return writes the same
values again.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..deep import run_deep
from ..errors import Frame as ErrorFrame, RlangError
from ..frontend import ast
from ..frontend.invert import invert_stmt
from ..interp.calls import enter_call, leave_call
from ..interp.interpreter import branch_body, format_env
from ..interp.loops import check_index, check_range_after, for_range
from ..interp.trail import AfterStatement, BodyPoint, CallPoint, FunctionPoint, LoopIndex
from ..values import Stack

#: Statements a step runs whole (a compound statement or a call is entered instead).
SIMPLE = (ast.Update, ast.Instr, ast.Alloc, ast.Dealloc, ast.Zeros, ast.Safe, ast.Derivative)


def is_simple(stmt) -> bool:
    """Whether a step runs `stmt` whole (`@invcheckoff x += 1` included)."""
    if isinstance(stmt, ast.Annotated):
        return is_simple(stmt.stmt)
    return isinstance(stmt, SIMPLE)


class Seq:
    """A statement list being run: before `body[index]`, owned by `owner` (the
    construct it belongs to), its statements running `backward` relative to the
    source, with `invcheck`."""

    __slots__ = ("body", "index", "owner", "backward", "invcheck")

    def __init__(self, body, index, owner, backward, invcheck):
        self.body, self.index, self.owner = body, index, owner
        self.backward, self.invcheck = backward, invcheck

    @property
    def at_end(self) -> bool:
        return self.index >= len(self.body)


class Owner:
    """What a `Seq` is the body of: `kind` is "function", "if", "while", "do" and
    "loop" (the parts of a `from`), "for" or "block"; `stmt` the statement (None for
    a function); `taken` an `if`'s branch; `bounds`, `indices`, `k` a `for` loop's."""

    __slots__ = ("kind", "stmt", "taken", "bounds", "indices", "k")

    def __init__(self, kind, stmt=None, taken=None, bounds=None, indices=None, k=0):
        self.kind, self.stmt, self.taken = kind, stmt, taken
        self.bounds, self.indices, self.k = bounds, indices, k


class Frame:
    """A running function: its variables, direction and call (`entry` is the
    `CallEntry` of the call statement; None for the function the session started)."""

    __slots__ = ("function", "env", "backward", "call_site", "entry", "seqs")

    def __init__(self, function, env, backward, call_site, entry, seqs):
        self.function, self.env, self.backward = function, env, backward
        self.call_site, self.entry, self.seqs = call_site, entry, seqs

    @property
    def seq(self) -> Seq:
        return self.seqs[-1]


class Machine:
    """A position in a running program; see the module docstring."""

    def __init__(self, interp, function: ast.Function, env: dict, backward: bool = False,
                 invcheck: bool | None = None):
        self.interp = interp
        invcheck = interp.invcheck if invcheck is None else invcheck
        body = interp.body_of(function, backward)
        self.frames = [Frame(function, env, backward, None, None,
                             [Seq(body, 0, Owner("function"), backward, invcheck)])]
        self._partners: dict[int, tuple] = {}
        self._inverses: dict[int, tuple] = {}

    # ------------------------------------------------------------------ where
    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def depth(self) -> tuple[int, int]:
        """(frames, statement lists of the innermost frame): larger is deeper."""
        return len(self.frames), len(self.frame.seqs)

    @property
    def at_start(self) -> bool:
        return len(self.frames) == 1 and len(self.frame.seqs) == 1 and self.frame.seq.index == 0

    @property
    def finished(self) -> bool:
        return len(self.frames) == 1 and len(self.frame.seqs) == 1 and self.frame.seq.at_end

    @property
    def statement(self):
        """The statement the machine stands before; None at the end of a list."""
        seq = self.frame.seq
        return None if seq.at_end else seq.body[seq.index]

    @property
    def previous(self):
        """The statement just before the machine's position in its list; None at the
        start of a list."""
        seq = self.frame.seq
        return seq.body[seq.index - 1] if seq.index > 0 else None

    def span(self):
        """Where the machine stands: the statement's span, else the construct whose
        list it is at the end of, else the function's (whose last line is `end`)."""
        stmt = self.statement
        if stmt is not None:
            return stmt.span
        owner = self.frame.seq.owner
        return owner.stmt.span if owner.stmt is not None else self.frame.function.span

    # --------------------------------------------------------------- forward
    def step(self) -> None:
        """Run one statement (entering a compound statement or a call)."""
        if self.finished:
            return
        frame, seq = self.frame, self.frame.seq
        if not seq.at_end:
            stmt = seq.body[seq.index]
            if is_simple(stmt):
                self._run(stmt, seq, undo=False)
                seq.index += 1
            else:
                self._enter_forward(stmt, frame, seq)
        try:
            self._settle_forward()
        finally:
            self.show_through()

    def _settle_forward(self) -> None:
        while self.frame.seq.at_end and not self.finished:
            self._leave_forward()

    def _enter_forward(self, stmt, frame: Frame, seq: Seq) -> None:
        interp, env = self.interp, frame.env
        with self._flags(seq):
            match stmt:
                case ast.If():
                    taken = interp.taken_branch(stmt, env)
                    self._push(branch_body(stmt, taken), 0, Owner("if", stmt, taken), seq)
                case ast.While():
                    if seq.invcheck:
                        interp.check_while_entry(stmt, env)
                    if interp.cond(stmt.pre, env, "a `while` condition"):
                        self._push(stmt.body, 0, Owner("while", stmt), seq)
                    else:
                        seq.index += 1
                case ast.From():
                    if seq.invcheck:
                        interp.check_from_entry(stmt, env)
                    self._push(stmt.body, 0, Owner("do", stmt), seq)
                case ast.For():
                    bounds, indices = for_range(interp, stmt, env)
                    if len(indices):
                        env[stmt.var] = indices[0]
                        self._push(stmt.body, 0, Owner("for", stmt, None, bounds, indices), seq)
                    else:
                        seq.index += 1
                case ast.CallStmt():
                    self._call(stmt, seq, at_end=False)
                case _:
                    self._push_block(stmt, seq, at_end=False)

    def _leave_forward(self) -> None:
        frame, seq = self.frame, self.frame.seq
        owner, env, interp = seq.owner, frame.env, self.interp
        stmt = owner.stmt
        with self._flags(seq):
            match owner.kind:
                case "function":
                    leave_call(interp, frame.entry)
                    self.frames.pop()
                    self.frame.seq.index += 1
                    return
                case "if":
                    if seq.invcheck:
                        interp.check_if_post(stmt, owner.taken, env)
                case "while":
                    if seq.invcheck:
                        interp.check_while_pass(stmt, env)
                    if interp.cond(stmt.pre, env, "a `while` condition"):
                        seq.index = 0
                        return
                case "do":
                    if not interp.cond(stmt.stop, env, "an `until` condition"):
                        self._replace(stmt.step, 0, Owner("loop", stmt))
                        return
                case "loop":
                    if seq.invcheck:
                        interp.check_from_repeat(stmt, env)
                    self._replace(stmt.body, 0, Owner("do", stmt))
                    return
                case "for":
                    if seq.invcheck:
                        check_index(stmt, env, owner.indices[owner.k])
                    if owner.k + 1 < len(owner.indices):
                        owner.k += 1
                        env[stmt.var] = owner.indices[owner.k]
                        seq.index = 0
                        return
                    env.pop(stmt.var, None)
            frame.seqs.pop()
            frame.seq.index += 1
            if owner.kind == "for" and seq.invcheck:
                check_range_after(interp, stmt, env, owner.bounds)

    # -------------------------------------------------------------- backward
    def back(self) -> bool:
        """Undo one statement (entering a compound statement or a call from its end);
        False when the machine is at the start and nothing is left to undo."""
        try:
            return self._back()
        finally:
            self.show_through()

    def _back(self) -> bool:
        while True:
            frame, seq = self.frame, self.frame.seq
            if seq.index == 0:
                if self.at_start:
                    return False
                if self._leave_backward():
                    return True
                continue
            prev = seq.body[seq.index - 1]
            if is_simple(prev):
                self._run(prev, seq, undo=True)
                seq.index -= 1
                return True
            seq.index -= 1
            if not self._enter_backward(prev, frame, seq):
                return True

    def _enter_backward(self, stmt, frame: Frame, seq: Seq) -> bool:
        """Enter `stmt` at the end of the list that ran last; False when no list of
        it ran (the machine is then before `stmt`)."""
        interp, env = self.interp, frame.env
        with self._flags(seq, undo=True):
            match stmt:
                case ast.If():
                    taken = interp.taken_branch(self._inverse(stmt), env)
                    body = branch_body(stmt, taken)
                    self._push(body, len(body), Owner("if", stmt, taken), seq)
                case ast.While():
                    if seq.invcheck:
                        interp.check_while_entry(self._inverse(stmt), env)
                    if not interp.cond(stmt.post, env, "a `while` postcondition"):
                        return False
                    self._push(stmt.body, len(stmt.body), Owner("while", stmt), seq)
                case ast.From():
                    if seq.invcheck:
                        interp.check_from_entry(self._inverse(stmt), env)
                    self._push(stmt.body, len(stmt.body), Owner("do", stmt), seq)
                case ast.For():
                    bounds, indices = for_range(interp, stmt, env)
                    if not len(indices):
                        return False
                    env[stmt.var] = indices[-1]
                    self._push(stmt.body, len(stmt.body),
                               Owner("for", stmt, None, bounds, indices, len(indices) - 1), seq)
                case ast.CallStmt():
                    self._call(stmt, seq, at_end=True)
                case _:
                    self._push_block(stmt, seq, at_end=True)
        return True

    def _leave_backward(self) -> bool:
        """At the start of a list going backward: move to the end of the list that
        ran before it (False) or out to the construct's header (True)."""
        frame, seq = self.frame, self.frame.seq
        owner, env, interp = seq.owner, frame.env, self.interp
        stmt = owner.stmt
        with self._flags(seq, undo=True):
            match owner.kind:
                case "function":
                    leave_call(interp, frame.entry)
                    self.frames.pop()
                    return True
                case "if":
                    if seq.invcheck:
                        interp.check_if_post(self._inverse(stmt), owner.taken, env)
                case "while":
                    if seq.invcheck:
                        interp.check_while_pass(self._inverse(stmt), env)
                    if interp.cond(stmt.post, env, "a `while` postcondition"):
                        seq.index = len(seq.body)
                        return False
                case "do":
                    if not interp.cond(stmt.start, env, "a `from` condition"):
                        self._replace(stmt.step, len(stmt.step), Owner("loop", stmt))
                        return False
                case "loop":
                    if seq.invcheck:
                        interp.check_from_repeat(self._inverse(stmt), env)
                    self._replace(stmt.body, len(stmt.body), Owner("do", stmt))
                    return False
                case "for":
                    if seq.invcheck:
                        check_index(stmt, env, owner.indices[owner.k])
                    if owner.k > 0:
                        owner.k -= 1
                        env[stmt.var] = owner.indices[owner.k]
                        seq.index = len(seq.body)
                        return False
                    env.pop(stmt.var, None)
            frame.seqs.pop()
            return True

    # ------------------------------------------------------------ whole runs
    def run_whole(self, budget=None) -> None:
        """Run the compound statement the machine stands before in one go on the
        interpreter (its loops and calls at the interpreter's speed) and move past it,
        as `next` does; `budget` (an object with the methods of the interpreter's
        Budget) is ticked by its loops and calls.  On an error the machine stands where
        the error happened, read from its trail (Note [Resuming at a failure])."""
        seq = self.frame.seq
        try:
            self._whole(seq.body[seq.index], seq.backward, budget)
        except RlangError as error:
            # the trail's outermost point is the one-statement list `execute` ran
            self.follow_trail(list(reversed(error.trail))[1:])
            self.show_through()
            error.frames = []       # the chain as stepping shows it (callers see callees)
            self.add_frames(error)
            raise
        self.show_through()
        seq.index += 1
        try:
            self._settle_forward()
        finally:
            self.show_through()

    def undo_whole(self, budget=None) -> None:
        """Undo the compound statement before the machine's position in one go (its
        inverse run whole on the interpreter), as `reverse-next` does.  An error in the
        middle has no position in the forward source; so the frame's store is copied
        first, and on an error (or an interruption through `budget`) it is put back and
        the error raised, the machine standing where it stood (Note [Motions at the
        interpreter's speed], rlang/debug/session.py)."""
        frame, seq = self.frame, self.frame.seq
        checkpoint = _checkpoint(frame.env)
        try:
            self._whole(self._inverse(seq.body[seq.index - 1]), not seq.backward, budget)
        except RlangError:
            _restore(frame.env, checkpoint)
            raise
        seq.index -= 1
        self.show_through()

    def _whole(self, stmt, backward: bool, budget) -> None:
        """Run `stmt` on the interpreter in the innermost frame: on a deep stack (it may
        recurse as deep as the call depth limit allows, counted from this frame), its
        loops and calls ticking `budget`."""
        interp, frame, seq = self.interp, self.frame, self.frame.seq
        saved = interp.budget, interp.evaluator.budget, interp.depth
        interp.budget = interp.evaluator.budget = budget
        interp.depth = len(self.frames)
        try:
            run_deep(interp.execute, stmt, frame.env, backward, frame.backward, seq.invcheck)
        finally:
            interp.budget, interp.evaluator.budget, interp.depth = saved

    def follow_trail(self, points) -> None:
        """Extend the position by an error's trail, read outermost first: a frame per
        function, a statement list per body, with the loop indices, calls and checks
        after statements the trail records.  A frame whose body never started (the
        call failed as it was entered) is left out: the position is then the call."""
        entry = loop_index = None
        for point in points:
            if isinstance(point, FunctionPoint):
                self.frames.append(Frame(point.function, point.env, point.backward,
                                         point.call_site, entry, []))
                entry = None
            elif isinstance(point, CallPoint):
                entry = point.entry
            elif isinstance(point, LoopIndex):
                loop_index = point
            elif isinstance(point, BodyPoint):
                frame = self.frames[-1]
                owner = self._owner_of(frame, point.body, loop_index)
                loop_index = None
                frame.seqs.append(Seq(point.body, point.index, owner, point.backward,
                                      point.invcheck))
            elif isinstance(point, AfterStatement):
                self.frames[-1].seqs[-1].index += 1
        while self.frames and not self.frames[-1].seqs:
            self.frames.pop()

    def _owner_of(self, frame: Frame, body: tuple, loop_index) -> Owner:
        """The owner of the statement list `body`, entered from the statement the
        frame's innermost list stands at."""
        if not frame.seqs:
            return Owner("function")
        outer = frame.seqs[-1]
        stmt = outer.body[outer.index]
        match stmt:
            case ast.If():
                taken = next((k for k, branch in enumerate(stmt.branches)
                              if branch.body is body), None)
                return Owner("if", stmt, taken)
            case ast.While():
                return Owner("while", stmt)
            case ast.From():
                return Owner("do" if body is stmt.body else "loop", stmt)
            case ast.For():
                bounds, indices = for_range(self.interp, stmt, frame.env)
                frame.env[stmt.var] = loop_index.value
                k = next((k for k, i in enumerate(indices) if i == loop_index.value), 0)
                return Owner("for", stmt, None, bounds, indices, k)
        return Owner("block", stmt)

    # ------------------------------------------------------------- the parts
    def _run(self, stmt, seq: Seq, undo: bool) -> None:
        """Run a simple statement (its inverse when `undo`) in the innermost frame."""
        frame = self.frame
        try:
            self.interp.execute(invert_stmt(stmt) if undo else stmt, frame.env,
                                seq.backward != undo, frame.backward, seq.invcheck)
        except RlangError as error:
            self.add_frames(error)
            raise

    def show_through(self) -> None:
        """Copy the scalar parameters of the running calls out to the callers' views
        (Note [Callers see their callees' scalars])."""
        for frame in reversed(self.frames[1:]):     # innermost first: values travel out
            for param, ref in zip(frame.function.params, frame.entry.refs):
                value = frame.env.get(param.name)
                if ref is not None and not isinstance(value, (np.ndarray, Stack)):
                    ref.set(value)

    def add_frames(self, error: RlangError) -> None:
        """Give `error` the call chain of the machine's frames, innermost first, and
        the note the interpreter gives a statement running against its frame's
        direction."""
        self._note_direction(error)
        for frame in reversed(self.frames):
            error.add_frame(ErrorFrame(frame.function.name, frame.call_site, frame.backward,
                                       format_env(frame.env)))

    def _note_direction(self, error: RlangError) -> None:
        """As the interpreter's `_exec_oriented` notes it: the innermost `@routine`,
        `~@routine` or `~begin` whose statements run against the frame's direction."""
        frame = self.frame
        for seq in reversed(frame.seqs):
            what = _ORIENTED.get(type(seq.owner.stmt))
            if isinstance(seq.owner.stmt, ast.Block) and not seq.owner.stmt.inverse:
                what = None
            if what is None or seq.backward == frame.backward:
                continue
            if not getattr(error, "direction_noted", False):
                direction = "backward" if seq.backward else "forward"
                error.notes += (f"this statement was running {direction}, as part of {what} "
                                f"at {seq.owner.stmt.span}",)
                error.direction_noted = True
            return

    def _push(self, body, index, owner, seq, backward=None, invcheck=None) -> None:
        self.frame.seqs.append(Seq(body, index, owner, seq.backward if backward is None
                                   else backward, seq.invcheck if invcheck is None else invcheck))

    def _replace(self, body, index, owner) -> None:
        seq = self.frame.seq
        seq.body, seq.index, seq.owner = body, index, owner

    def _push_block(self, stmt, seq: Seq, at_end: bool) -> None:
        """Enter a `begin … end`, `@routine`, `~@routine` or annotated statement."""
        interp = self.interp
        backward, invcheck = seq.backward, seq.invcheck
        match stmt:
            case ast.Block(inverse=True):
                body, backward = interp.inverse_of(stmt.body), not seq.backward
            case ast.Block():
                body = stmt.body
            case ast.Routine():
                body, backward = stmt.body, False
            case ast.UnRoutine():
                body, backward = interp.inverse_of(self._partner(seq).body), True
            case ast.Annotated():
                body = (stmt.stmt,)
                if stmt.annotation == "invcheckoff":
                    invcheck = False
        self._push(body, len(body) if at_end else 0, Owner("block", stmt), seq, backward,
                   invcheck)

    def _call(self, stmt: ast.CallStmt, seq: Seq, at_end: bool) -> None:
        interp = self.interp
        if len(self.frames) >= interp.max_depth:
            raise interp.too_deep(stmt.span)
        entry = enter_call(interp, stmt, self.frame.env)
        fn = entry.function
        body = interp.body_of(fn, stmt.inverse)
        self.frames.append(Frame(fn, entry.env, stmt.inverse, stmt.span, entry, [
            Seq(body, len(body) if at_end else 0, Owner("function"), stmt.inverse,
                seq.invcheck)]))

    def _partner(self, seq: Seq):
        """The `@routine` that the `~@routine` at `seq.index` undoes."""
        key = id(seq.body)
        cached = self._partners.get(key)
        if cached is None or cached[0] is not seq.body:
            cached = (seq.body, routine_partners(seq.body))
            self._partners[key] = cached
        return cached[1][seq.index]

    def _inverse(self, stmt):
        """`invert_stmt(stmt)` of a compound statement, computed once."""
        cached = self._inverses.get(id(stmt))
        if cached is None or cached[0] is not stmt:
            cached = (stmt, invert_stmt(stmt))
            self._inverses[id(stmt)] = cached
        return cached[1]

    @contextmanager
    def _flags(self, seq: Seq, undo: bool = False):
        """The interpreter's direction and checks as `seq` runs (undone when `undo`)."""
        interp = self.interp
        saved = interp.backward, interp.frame_backward, interp.invcheck
        interp.backward = seq.backward != undo
        interp.frame_backward, interp.invcheck = self.frame.backward, seq.invcheck
        try:
            yield
        except RlangError as error:
            self.add_frames(error)
            raise
        finally:
            interp.backward, interp.frame_backward, interp.invcheck = saved


#: The statements whose lists may run against their frame's direction, as the
#: interpreter names them in an error's note.
_ORIENTED = {ast.Routine: "`@routine`", ast.UnRoutine: "`~@routine`",
             ast.Block: "`~begin … end`"}


def _checkpoint(env: dict) -> tuple:
    """The variables of `env` and a copy of their values (arrays and stacks copied)."""
    return dict(env), {name: value.copy() if isinstance(value, (np.ndarray, Stack)) else value
                       for name, value in env.items()}


def _restore(env: dict, checkpoint: tuple) -> None:
    """Put `env` back as `_checkpoint` found it, arrays and stacks in place (other
    frames hold the same objects)."""
    objects, copies = checkpoint
    env.clear()
    for name, value in objects.items():
        if isinstance(value, np.ndarray):
            value[...] = copies[name]
        elif isinstance(value, Stack):
            value.items[:] = copies[name].items
        env[name] = value


def routine_partners(body: tuple) -> dict[int, ast.Routine]:
    """For each `~@routine` of `body`, by index, the `@routine` it undoes."""
    partners, open_routines = {}, []
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.Routine):
            open_routines.append(stmt)
        elif isinstance(stmt, ast.UnRoutine) and open_routines:
            partners[index] = open_routines.pop()
    return partners
