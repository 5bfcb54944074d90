"""The static checker: the rules of LANGUAGE.md §6 marked "statically", and the plain
static errors of a program (undefined names and functions, wrong argument counts, …).

In: a `Unit` (rlang.frontend.unit), as the loader builds it.  Out: `collect_errors(unit)` returns
every `CheckError` found, in source order (the main file first); `check(unit)` raises
them together as one `CheckErrors`.  The AST is not changed.  `written_params` (which
parameters each function may write, directly or through the functions it calls) is
public so that later stages can ask the same question.

The walker visits each function's statements in order, keeping an environment of the
names bound at that point -- parameters, live ancillas, `for` indices, consts and the
constants `pi inf nan` -- each with its type where that is known.  Only what the names
show is checked here: whatever depends on values (`a[i] += a[j]` with `i == j`,
deallocation values, loop conditions) is the interpreter's to check at run time.

# Note [Scopes]
A scope is a function body, the body of a loop (`for`, `while`, and each of the `do`
and `loop` parts of `from`), or one branch of an `if`.  A scope must leave the set of
live ancillas as it found it: what it allocates it deallocates, and it deallocates
nothing allocated outside it (a loop would free it twice, a branch would leave it
freed on one path only).  `main`'s body is the exception: its top-level ancillas are
the program's store.  `begin … end` and `@routine` bodies are not scopes: an ancilla
allocated in `@routine` is freed by the matching `~@routine`.

# Note [Inverted blocks]
`~begin B end` runs the inverse of `B`, so the walker walks `invert_body(B)` (the
inverter's own answer): an `Alloc` in `B` deallocates there.  Errors keep their spans,
since inverted nodes keep the span of the node they came from; `ctx.inverted` only
adds a note saying that the statement runs backward.
"""
from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, field

from .. import primitives
from .ast import (Alloc, Annotated, ArrayLit, Binary, Block, BoolLit, Call, CallStmt, Dealloc,
                  Derivative, Field, FloatLit, For, From, Function, If, ImagLit, Index, Instr,
                  IntLit, Name, Routine, Safe, StrLit, TypeExpr, TypeRef, Unary, UnRoutine, Update,
                  While, Zeros, is_view, view_root)
from .views import (children as _children, indices_of as _indices_of, is_whole as _is_whole,
                    overlaps as _overlaps, read_views as _read_views)
from .analysis import written_params
from ..errors import CheckError, CheckErrors
from .ast import is_number_literal
from .invert import invert_body
from .printer import format_expr as _src, format_type
from ..span import NO_SPAN, Span
from ..types_rules import (BITWISE_OPS, INSTRUCTION_OPERANDS, bitwise_operand_message,
                           instruction_operand_message)
from .unit import Unit
from ..deep import run_deep

#: The static check of one program stops with a CheckError after this many seconds
#: (docs/language-decisions.md "Limits"); it is linear in the program's size, so only
#: a program of millions of statements comes near it.
MAX_CHECK_SECONDS = 60.0

_INTEGER_TYPES = ("i64", "i32", "bool")
#: Operand types that the bitwise operators refuse, as the interpreter's `_bitwise`
#: does (fixed and ulog take their number systems' own path and words).
_NOT_BITWISE = ("f64", "f32", "complex")
_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=", "&&", "||")
_KIND_TEXT = {"param": "a parameter", "index": "a `for` index", "const": "a constant",
              "constant": "a built-in constant", "ancilla": "an ancilla"}


# ------------------------------------------------------------------------ public API

def check(unit: Unit) -> None:
    """Raise `CheckErrors` holding every static error of `unit`, if there is any."""
    errors = collect_errors(unit)
    if errors:
        raise CheckErrors(errors)


def collect_errors(unit: Unit) -> list[CheckError]:
    """Every static error of `unit`, in source order (on the deep-stack worker: the
    walks recurse as deep as the expressions nest)."""
    return run_deep(_collect_errors, unit)


class _TooLong(Exception):
    def __init__(self, span: Span):
        self.span = span


def _collect_errors(unit: Unit) -> list[CheckError]:
    errors: list[CheckError] = []
    try:
        _walk_unit(unit, errors, time.monotonic() + MAX_CHECK_SECONDS)
    except _TooLong as stop:
        errors.append(CheckError(
            f"the static check was stopped after {MAX_CHECK_SECONDS:.0f} s, here; the "
            f"program is too large to check", stop.span,
            ("split it into several functions or files",)))
    return _in_source_order(unit, errors)


def _walk_unit(unit: Unit, errors: list, deadline: float) -> None:
    for kind, name, span in unit.redefinitions:
        errors.append(_redefinition(unit, kind, name, span))
    writes = written_params(unit.functions)
    globals_ = _global_env(unit)
    for const in unit.consts.values():
        env = {name: b for name, b in globals_.items() if name != const.name}
        _read(_Ctx(unit, None, writes, errors, env, deadline), const.value)
    for fn in unit.functions.values():
        _check_function(_Ctx(unit, fn, writes, errors, dict(globals_), deadline))


# ---------------------------------------------------------------------- the walker

@dataclass
class _Binding:
    kind: str                   # a key of _KIND_TEXT
    type: TypeRef | None        # None where unknown (generic parameters, …)
    span: Span                  # where it was bound


@dataclass
class _Ctx:
    unit: Unit
    fn: Function | None
    writes: dict[str, frozenset[int]]
    errors: list[CheckError]
    env: dict[str, _Binding]
    deadline: float                 # time.monotonic() when the check gives up
    freed: dict[str, Span] = field(default_factory=dict)      # name -> where deallocated
    inverted: bool = False          # inside `~begin … end`: see Note [Inverted blocks]
    parallel: list[frozenset] = field(default_factory=list)   # names outside each @parallel

    def error(self, message: str, span: Span | None, *notes: str) -> None:
        self.errors.append(CheckError(message, span, tuple(n for n in notes if n)))


def _check_function(ctx: _Ctx) -> None:
    fn = ctx.fn
    if fn.name == "main" and fn.params:
        ctx.error("`main` takes no parameters", fn.params[0].span,
                  "`main` is the entry point; its variables are ancillas it allocates")
    for param in fn.params:
        if param.name in ctx.env and ctx.env[param.name].kind == "param":
            ctx.error(f"parameter `{param.name}` is listed twice", param.span)
        ctx.env[param.name] = _Binding("param", param.type, param.span)
    if fn.name == "main":
        _walk_list(ctx, fn.body)    # top-level ancillas of main are the program's store
    else:
        _scope(ctx, fn.body, f"function `{fn.name}`")


def _scope(ctx: _Ctx, stmts: tuple, where: str, extra: dict | None = None) -> None:
    """Walk `stmts` as a scope (see Note [Scopes]); the environment is restored after."""
    saved = dict(ctx.env)
    ctx.env.update(extra or {})
    _walk_list(ctx, stmts)
    for name, b in ctx.env.items():
        if b.kind == "ancilla" and name not in saved:
            ctx.error(f"ancilla `{name}` is still allocated at the end of {where}", b.span,
                      f"deallocate it (`{name} → value`) before the end of {where}, or "
                      "allocate it in a `@routine` undone by `~@routine`")
    for name, b in saved.items():
        if b.kind == "ancilla" and name not in ctx.env:
            ctx.error(f"ancilla `{name}` is allocated outside {where} but deallocated inside it",
                      ctx.freed.get(name, b.span),
                      f"`{name}` was allocated at {b.span}; a loop body or a branch must "
                      "leave the same ancillas allocated")
    ctx.env = saved


def _walk_list(ctx: _Ctx, stmts: tuple) -> None:
    """Walk one statement list, pairing `@routine` with `~@routine` like brackets."""
    partner = _pair_routines(ctx, stmts)       # ~@routine position -> @routine position
    effects: dict[int, tuple] = {}
    for k, stmt in enumerate(stmts):
        if time.monotonic() > ctx.deadline:
            raise _TooLong(stmt.span)
        marker = _unwrap(stmt)
        if isinstance(marker, Routine):
            effects[k] = _run_routine(ctx, marker.body)
        elif isinstance(marker, UnRoutine):
            if k in partner:
                _undo_routine(ctx, effects[partner[k]], marker.span)
        else:
            _check_stmt(ctx, stmt)


def _pair_routines(ctx: _Ctx, stmts: tuple) -> dict[int, int]:
    open_routines, partner = [], {}
    for k, stmt in enumerate(stmts):
        stmt = _unwrap(stmt)
        if isinstance(stmt, Routine):
            open_routines.append(k)
        elif isinstance(stmt, UnRoutine):
            if open_routines:
                partner[k] = open_routines.pop()
            else:
                ctx.error("`~@routine` has no `@routine` before it in the same block", stmt.span)
    for k in open_routines:
        ctx.error("`@routine` is never undone: add `~@routine` later in the same block",
                  _unwrap(stmts[k]).span)
    return partner


def _run_routine(ctx: _Ctx, body: tuple) -> tuple:
    """Walk a routine body; return its effect (names allocated, names freed)."""
    before = dict(ctx.env)
    _walk_list(ctx, body)
    allocated = tuple(name for name in ctx.env if name not in before)
    freed = {name: b for name, b in before.items() if name not in ctx.env}
    return allocated, freed


def _undo_routine(ctx: _Ctx, effect: tuple, span: Span) -> None:
    allocated, freed = effect
    for name in allocated:
        if name in ctx.env:
            del ctx.env[name]
            ctx.freed[name] = span
        else:
            ctx.error(f"`~@routine` deallocates `{name}`, which is no longer allocated", span)
    for name, binding in freed.items():
        if name in ctx.env:
            ctx.error(f"`~@routine` allocates `{name}` again, but it is already bound", span)
        else:
            ctx.env[name] = binding


def _unwrap(stmt):
    while isinstance(stmt, Annotated):
        stmt = stmt.stmt
    return stmt


# -------------------------------------------------------------------- statements

def _check_stmt(ctx: _Ctx, stmt) -> None:
    match stmt:
        case Update():
            _check_update(ctx, stmt)
        case Instr():
            _check_instr(ctx, stmt)
        case Alloc():
            _read(ctx, stmt.value, alloc_value=True)
            _bind_ancilla(ctx, stmt.name, _infer(stmt.value, ctx.env), stmt.span)
        case Dealloc():
            _read(ctx, stmt.value, alloc_value=True)
            _check_dealloc_literal(ctx, stmt)
            _unbind_ancilla(ctx, stmt.name, stmt.span)
        case Zeros():
            _check_zeros(ctx, stmt)
        case CallStmt():
            _check_call(ctx, stmt)
        case Derivative():
            _check_derivative(ctx, stmt)
        case Block(inverse=False):
            _walk_list(ctx, stmt.body)
        case Block(inverse=True):
            ctx.inverted = not ctx.inverted
            _walk_list(ctx, invert_body(stmt.body))
            ctx.inverted = not ctx.inverted
        case If():
            _check_if(ctx, stmt)
        case While():
            _read(ctx, stmt.pre)
            _read(ctx, stmt.post)
            _scope(ctx, stmt.body, "the loop body")
        case From():
            _read(ctx, stmt.start)
            _read(ctx, stmt.stop)
            _scope(ctx, stmt.body, "the `do` part of the loop")
            _scope(ctx, stmt.step, "the `loop` part of the loop")
        case For():
            _check_for(ctx, stmt)
        case Annotated():
            _check_stmt(ctx, stmt.stmt)
        case Safe():
            _check_safe(ctx, stmt)
        case Routine() | UnRoutine():
            pass    # only reachable through _walk_list, which handles them


def _check_update(ctx: _Ctx, stmt: Update) -> None:
    target = stmt.target
    if not is_view(target):
        ctx.error(f"the target of `{stmt.op}` must be a variable, an element or a field",
                  target.span)
        _read(ctx, target)
        _read(ctx, stmt.value)
        return
    _write(ctx, target)
    _read(ctx, stmt.value)
    _check_written_indices(ctx, [target])
    for view in _read_views(stmt.value):
        if _overlaps(target, view):
            if _src(view) == _src(target):
                message = f"`{_src(target)}` is read on the right-hand side of its own update"
            else:
                message = (f"the right-hand side reads `{_src(view)}`, "
                           f"which overlaps the target `{_src(target)}`")
            ctx.error(message, view.span, "an update cannot be undone when its right-hand "
                      "side reads its target; copy the value into an ancilla first")
            break
    _check_update_type(ctx, stmt)


def _check_update_type(ctx: _Ctx, stmt: Update) -> None:
    """`*=`/`/=` only on ulog, `+=`/`-=` never on ulog, `^=` on integers and bools."""
    known = _infer(stmt.target, ctx.env)
    if known is None or known.is_stack:
        return
    has_type = f"`{_src(stmt.target)}` has type {format_type(known)}"
    if stmt.op in ("*=", "/=") and known.scalar != "ulog":
        ctx.error(f"`{stmt.op}` is reversible only on ulog; convert with ulog(x)",
                  stmt.target.span, has_type)
    elif stmt.op in ("+=", "-=") and known.scalar == "ulog":
        ctx.error(f"`{stmt.op}` is not reversible on ulog; use `*=` or `/=`",
                  stmt.target.span, has_type)
    elif stmt.op == "^=" and known.scalar not in _INTEGER_TYPES:
        ctx.error("`^=` needs an integer or bool target", stmt.target.span, has_type)


def _check_instr(ctx: _Ctx, stmt: Instr) -> None:
    info = primitives.INSTRUCTION_TABLE.get(stmt.name)
    if info is None:
        ctx.error(f"unknown instruction `{stmt.name}`", stmt.span,
                  _did_you_mean(stmt.name, primitives.INSTRUCTION_TABLE))
        for arg in stmt.args:
            _read(ctx, arg)
        return
    if len(stmt.args) != info.arity:
        ctx.error(f"`{stmt.name}` takes {_count(info.arity, 'operand')} but "
                  f"{_given(len(stmt.args))}", stmt.span)
    written = []
    for k, arg in enumerate(stmt.args):
        if k not in info.written:
            _read(ctx, arg)
        elif is_view(arg):
            _write(ctx, arg)
            written.append((arg, True))
        else:
            ctx.error(f"operand {k + 1} of `{stmt.name}` must be a variable, an element or "
                      "a field", arg.span, f"`{stmt.name}` writes it")
            _read(ctx, arg)
    _check_overlaps(ctx, written, "operands", f"`{stmt.name}`", "writes")
    _check_written_indices(ctx, [w for w, _ in written])
    if stmt.name in INSTRUCTION_OPERANDS and written:
        _check_operand_type(ctx, stmt)
    for k, arg in enumerate(stmt.args):
        if k in info.written:
            continue
        for view in _read_views(arg):
            if any(_overlaps(w, view) for w, _ in written):
                ctx.error(f"`{stmt.name}` reads `{_src(view)}`, which it also writes",
                          view.span)
                break


def _check_operand_type(ctx: _Ctx, stmt: Instr) -> None:
    """NEG, INC, DEC, FLIP or CONJ on an operand whose type is plain in the source
    (LANGUAGE.md §3: INC on an f64 is a type error); an operand of unknown type is
    left to run time, which checks every operand."""
    known = _infer(stmt.args[0], ctx.env)
    if known is not None and not known.is_stack and known.ndim == 0:
        wrong = instruction_operand_message(stmt.name, known.scalar)
        if wrong:
            ctx.error(wrong, stmt.span)


def _check_call(ctx: _Ctx, stmt: CallStmt) -> None:
    callee = ctx.unit.functions.get(stmt.func)
    if callee is None:
        ctx.error(f"call to undefined function `{stmt.func}`", stmt.span,
                  _undefined_function_hint(ctx, stmt.func))
        for arg in stmt.args:
            _read(ctx, arg)
        return
    params = callee.params
    if len(stmt.args) != len(params):
        ctx.error(f"`{stmt.func}` takes {_count(len(params), 'argument')} but "
                  f"{_given(len(stmt.args))}", stmt.span,
                  f"`{stmt.func}` is defined at {callee.span}")
    may_write = ctx.writes.get(stmt.func, frozenset())
    views = []
    for k, arg in enumerate(stmt.args):
        written = k < len(params) and k in may_write
        if written and is_view(arg):
            _write(ctx, arg, f"`{stmt.func}` may write its parameter `{params[k].name}`")
        else:
            _read(ctx, arg)
        if is_view(arg):
            views.append((arg, written))
    _check_overlaps(ctx, views, "arguments", f"`{stmt.func}`", "may write")
    _check_written_indices(ctx, [view for view, written in views if written])
    _check_expression_arguments(ctx, stmt, [view for view, written in views if written])


def _check_derivative(ctx: _Ctx, stmt: Derivative) -> None:
    """`grad f(args) wrt p, … into t, …` (docs/nested.md): f exists and takes the
    arguments, the `wrt` names are distinct parameters of f, one target per name;
    the arguments are only read (f runs and is undone), the targets are written and
    are distinct views that no argument reads."""
    what = f"`{stmt.mode} {stmt.func}`"
    for arg in stmt.args:
        _read(ctx, arg)
    callee = ctx.unit.functions.get(stmt.func)
    if callee is None:
        ctx.error(f"{stmt.mode} of undefined function `{stmt.func}`", stmt.span,
                  _undefined_function_hint(ctx, stmt.func))
        return
    params = [p.name for p in callee.params]
    if len(stmt.args) != len(params):
        ctx.error(f"`{stmt.func}` takes {_count(len(params), 'argument')} but "
                  f"{_given(len(stmt.args))}", stmt.span,
                  f"`{stmt.func}` is defined at {callee.span}")
    if not params:
        ctx.error(f"{what} needs a function with a parameter: the first one is the loss",
                  stmt.span)
    for k, name in enumerate(stmt.wrt):
        if name not in params:
            ctx.error(f"`{name}` is not a parameter of `{stmt.func}`", stmt.span,
                      f"`{stmt.func}` takes ({', '.join(params)})")
        elif name in stmt.wrt[:k]:
            ctx.error(f"`{name}` appears twice after `wrt`", stmt.span)
    if len(stmt.targets) != len(stmt.wrt):
        ctx.error(f"{what} names {_count(len(stmt.wrt), 'parameter')} after `wrt` but "
                  f"{_count(len(stmt.targets), 'target')} after `into`", stmt.span,
                  "each gradient goes into its own target")
    for target in stmt.targets:
        _write(ctx, target, f"{what} adds a gradient to it")
    _check_overlaps(ctx, [(t, True) for t in stmt.targets], "targets", what, "writes")
    _check_written_indices(ctx, list(stmt.targets))
    roots = {view_root(t).id for t in stmt.targets if view_root(t) is not None}
    for arg in stmt.args:
        for read in _read_views(arg):
            root = view_root(read)
            if root is not None and root.id in roots:
                ctx.error(f"the argument `{_src(arg)}` reads `{root.id}`, which {what} "
                          "writes", arg.span, "the gradient must not depend on its target")
                return


def _check_expression_arguments(ctx: _Ctx, stmt: CallStmt, written: list) -> None:
    """An expression argument must not read what the call writes: it is evaluated
    before the call, and running backward would evaluate it after."""
    roots = {view_root(view).id for view in written if view_root(view) is not None}
    for arg in stmt.args:
        if is_view(arg):
            continue
        for read in _read_views(arg):
            root = view_root(read)
            if root is not None and root.id in roots:
                ctx.error(f"the argument `{_src(arg)}` reads `{root.id}`, which the call to "
                          f"`{stmt.func}` writes", arg.span,
                          "compute the argument into an ancilla before the call and "
                          "uncompute it after")
                return


def _check_written_indices(ctx: _Ctx, written: list) -> None:
    """An index of a view a statement writes must not read a variable the statement
    writes (Janus's rule for `x[e] += …`): the inverse would evaluate the index after
    the write and so update another element."""
    roots = {view_root(view).id for view in written if view_root(view) is not None}
    for view in written:
        for read in [v for index in _indices_of(view) for v in _read_views(index)]:
            root = view_root(read)
            if root is not None and root.id in roots:
                ctx.error(f"an index of `{_src(view)}` reads `{root.id}`, which this "
                          "statement writes", read.span,
                          "running backward would evaluate the index after the write and "
                          "update another element; copy the index into an ancilla first")
                return


def _check_overlaps(ctx: _Ctx, views: list, what: str, owner: str, verb: str) -> None:
    """Report two views of one call that share memory where at least one is written."""
    for j, (second, second_written) in enumerate(views):
        for first, first_written in views[:j]:
            if (first_written or second_written) and _overlaps(first, second):
                ctx.error(f"{what} `{_src(first)}` and `{_src(second)}` of {owner} overlap",
                          second.span, f"{owner} {verb} them, and views that may be "
                          "written must not share memory")
                break


def _check_zeros(ctx: _Ctx, stmt: Zeros) -> None:
    if not stmt.inverse:
        kind = TypeRef(stmt.type.scalar, stmt.type.ndim, stmt.type.is_stack)
        for name in stmt.names:
            _bind_ancilla(ctx, name, kind, stmt.span)
    else:
        for name in reversed(stmt.names):
            _unbind_ancilla(ctx, name, stmt.span)


def _check_if(ctx: _Ctx, stmt: If) -> None:
    for branch in stmt.branches:
        _read(ctx, branch.pre)
        _scope(ctx, branch.body, "the branch")
        if branch.post is not None:
            _read(ctx, branch.post)
    if stmt.orelse is not None:
        _scope(ctx, stmt.orelse, "the `else` branch")


def _check_for(ctx: _Ctx, stmt: For) -> None:
    for bound in (stmt.start, stmt.step, stmt.stop):
        _read(ctx, bound)
    if isinstance(stmt.step, IntLit) and stmt.step.value == 0:
        ctx.error("the step of a `for` loop must not be zero", stmt.step.span)
    existing = ctx.env.get(stmt.var)
    if existing is not None:
        ctx.error(f"`{stmt.var}` is already bound as {_KIND_TEXT[existing.kind]}; "
                  "a `for` index needs a new name", stmt.span)
    if stmt.parallel:
        ctx.parallel.append(frozenset(ctx.env))
    index = _Binding("index", TypeRef("i64"), stmt.span)
    _scope(ctx, stmt.body, "the loop body", {stmt.var: index})
    if stmt.parallel:
        ctx.parallel.pop()


def _check_safe(ctx: _Ctx, stmt: Safe) -> None:
    if stmt.func not in primitives.SAFE_FUNCTIONS:
        ctx.error(f"unknown `@safe` function `{stmt.func}`", stmt.span,
                  "`@safe` takes print(…), show(…) or assert(…)")
    elif stmt.func == "assert":
        if not 1 <= len(stmt.args) <= 2:
            ctx.error(f"`assert` takes 1 or 2 arguments but {_given(len(stmt.args))}",
                      stmt.span)
        elif len(stmt.args) == 2 and not isinstance(stmt.args[1], StrLit):
            ctx.error("the message of `assert` must be a string", stmt.args[1].span)
    for arg in stmt.args:
        if not isinstance(arg, StrLit):
            _read(ctx, arg)


# --------------------------------------------------------- bindings, reads, writes

def _bind_ancilla(ctx: _Ctx, name: str, kind: TypeRef | None, span: Span) -> None:
    backward = _backward_note(ctx)
    existing = ctx.env.get(name)
    if existing is None:
        ctx.env[name] = _Binding("ancilla", kind, span)
        ctx.freed.pop(name, None)
    elif existing.kind == "ancilla":
        ctx.error(f"`{name}` is allocated twice", span, f"it is already allocated at "
                  f"{existing.span}; deallocate it first", backward)
    elif existing.kind in ("const", "constant"):
        ctx.error(f"`{name}` is {_KIND_TEXT[existing.kind]} and cannot be allocated", span,
                  backward)
    else:
        ctx.error(f"`{name}` is already bound as {_KIND_TEXT[existing.kind]}; an ancilla "
                  "needs a new name", span, backward)


def _unbind_ancilla(ctx: _Ctx, name: str, span: Span) -> None:
    backward = _backward_note(ctx)
    existing = ctx.env.get(name)
    if existing is None and name in ctx.freed:
        ctx.error(f"`{name}` is deallocated twice", span,
                  f"it was deallocated at {ctx.freed[name]}", backward)
    elif existing is None:
        ctx.error(f"cannot deallocate `{name}`: it is not allocated", span, backward)
    elif existing.kind != "ancilla":
        ctx.error(f"cannot deallocate `{name}`: it is {_KIND_TEXT[existing.kind]}, "
                  "not an ancilla", span, backward)
    else:
        del ctx.env[name]
        ctx.freed[name] = span


#: Types a bare number literal does not have: deallocating such an ancilla with a
#: literal would, run backward, allocate it with the literal's type instead.
_TYPES_WITHOUT_LITERALS = ("fixed", "ulog", "f32", "i32", "complex")


def _check_dealloc_literal(ctx: _Ctx, stmt: Dealloc) -> None:
    binding = ctx.env.get(stmt.name)
    known = binding.type if binding is not None else None
    if known is None or known.ndim or known.is_stack or \
            known.scalar not in _TYPES_WITHOUT_LITERALS or not is_number_literal(stmt.value):
        return
    ctx.error(f"`{stmt.name}` is {known.scalar}, but it is deallocated with the literal "
              f"`{_src(stmt.value)}`", stmt.value.span,
              f"run backward this allocates `{stmt.name}`, so write the value in its type: "
              f"`{stmt.name} → {known.scalar}({_src(stmt.value)})`")


def _backward_note(ctx: _Ctx) -> str:
    return "inside `~begin … end` this statement runs backward" if ctx.inverted else ""


def _write(ctx: _Ctx, view, *notes: str) -> None:
    """Check a view that a statement updates (its root must be bound and assignable)."""
    _read(ctx, view)
    root = view_root(view)
    binding = ctx.env.get(root.id)
    if binding is None:
        return
    if binding.kind in ("const", "constant"):
        ctx.error(f"`{root.id}` is {_KIND_TEXT[binding.kind]} and cannot be assigned",
                  view.span, *notes)
    elif binding.kind == "index":
        ctx.error(f"`{root.id}` is a `for` index and cannot be assigned", view.span,
                  "the body of a `for` loop must leave its index unchanged", *notes)
    elif _is_whole(view) and any(root.id in outer for outer in ctx.parallel):
        ctx.error(f"`{root.id}` is written by every iteration of a `@parallel for`",
                  view.span, "iterations of `@parallel for` must be independent: write an "
                  "element indexed by the loop index, or drop `@parallel`", *notes)


def _read(ctx: _Ctx, expr, alloc_value: bool = False) -> None:
    """Check an expression that is read: names bound, calls known, fields, strings."""
    match expr:
        case Name():
            _lookup(ctx, expr)
        case StrLit():
            ctx.error("a string can only be an argument of `@safe print`, `show` or `assert`",
                      expr.span)
        case Field() if expr.name not in ("re", "im"):
            ctx.error(f"unknown field `.{expr.name}`; only `.re` and `.im` exist", expr.span)
        case Call():
            _check_builtin_call(ctx, expr, alloc_value)
        case Binary() if expr.op in BITWISE_OPS:
            _check_bitwise(ctx, expr)
    for child in _children(expr):
        _read(ctx, child)


def _check_bitwise(ctx: _Ctx, expr: Binary) -> None:
    """`^ & | << >>` with an operand that is plainly a float or a complex: the error
    the interpreter raises when it runs it (LANGUAGE.md §3: `^` between floats is a
    type error).  An operand of unknown type (a generic parameter) is left to run
    time, which checks every operand."""
    for operand in (expr.left, expr.right):
        known = _infer(operand, ctx.env)
        if known is not None and not known.is_stack and known.ndim == 0 \
                and known.scalar in _NOT_BITWISE:
            ctx.error(bitwise_operand_message(expr.op, known.scalar), expr.span)
            return


def _lookup(ctx: _Ctx, name: Name) -> None:
    if name.id in ctx.env:
        return
    if name.id in ctx.freed:
        ctx.error(f"`{name.id}` is used after it was deallocated", name.span,
                  f"it was deallocated at {ctx.freed[name.id]}")
    elif name.id in ctx.unit.functions:
        ctx.error(f"`{name.id}` is a function, not a variable", name.span)
    else:
        ctx.error(f"`{name.id}` is not defined", name.span, _did_you_mean(name.id, ctx.env))


def _check_builtin_call(ctx: _Ctx, call: Call, alloc_value: bool) -> None:
    if call.func in primitives.ALLOCATION_ONLY and not alloc_value:
        ctx.error(f"`{call.func}(…)` can only be the whole value of an allocation",
                  call.span, f"write `x ← {call.func}(…)`")
    if call.func in ctx.unit.functions and not primitives.is_builtin_function(call.func):
        ctx.error(f"user function `{call.func}` cannot be called inside an expression; "
                  "call it as a statement", call.span)
    elif not primitives.is_builtin_function(call.func):
        known = {**primitives.BUILTINS, **primitives.STRUCTURAL_BUILTINS,
                 **dict.fromkeys(primitives.CONVERSIONS)}
        ctx.error(f"unknown function `{call.func}`", call.span,
                  _did_you_mean(call.func, known))
    else:
        low, high = primitives.builtin_arity(call.func)
        if not low <= len(call.args) <= high:
            wanted = _count(low, "argument") if low == high else f"{low} to {high} arguments"
            ctx.error(f"`{call.func}` takes {wanted} but {_given(len(call.args))}", call.span)


# ------------------------------------------------------------------ views and types

def _infer(expr, env: dict) -> TypeRef | None:
    """The type of an expression where it is plain to see, else None."""
    match expr:
        case IntLit():
            return TypeRef("i64")
        case FloatLit():
            return TypeRef("f64")
        case BoolLit():
            return TypeRef("bool")
        case ImagLit():
            return TypeRef("complex")
        case Name():
            binding = env.get(expr.id)
            return binding.type if binding is not None else None
        case Index():
            base = _infer(expr.base, env)
            if base is not None and not base.is_stack and base.ndim == len(expr.indices):
                return TypeRef(base.scalar)
        case Field():
            base = _infer(expr.base, env)
            if base is not None and base == TypeRef("complex"):
                return TypeRef("f64")
        case Unary(op="-"):
            return _infer(expr.operand, env)
        case Binary() if expr.op in _COMPARISONS:
            return TypeRef("bool")
        case ArrayLit():
            items = {_infer(item, env) for item in expr.items}
            if len(items) == 1 and None not in items:
                item = items.pop()
                return TypeRef(item.scalar, item.ndim + 1)
        case Call():
            return _infer_call(expr)
    return None


def _infer_call(call: Call) -> TypeRef | None:
    if call.func in primitives.CONVERSIONS or call.func == "complex":
        return TypeRef(call.func)
    if not call.args or not isinstance(call.args[0], TypeExpr):
        return None
    scalar = call.args[0].type.scalar
    return {"zero": TypeRef(scalar), "one": TypeRef(scalar),
            "zeros": TypeRef(scalar, len(call.args) - 1),
            "stack": TypeRef(scalar, 0, True)}.get(call.func)


# ------------------------------------------------------------------------ helpers

def _global_env(unit: Unit) -> dict[str, _Binding]:
    env = {name: _Binding("constant", TypeRef("f64"), NO_SPAN) for name in primitives.CONSTANTS}
    for name, const in unit.consts.items():
        env[name] = _Binding("const", _infer(const.value, {}), const.span)
    return env


def _redefinition(unit: Unit, kind: str, name: str, span: Span) -> CheckError:
    first = unit.functions.get(name) if kind == "function" else unit.consts.get(name)
    notes = ()
    if first is not None and first.span != span:
        notes = (f"first defined at {first.span}",)
    return CheckError(f"{kind} `{name}` is defined twice", span, notes)


def _undefined_function_hint(ctx: _Ctx, name: str) -> str:
    if name in primitives.SAFE_FUNCTIONS:
        return f"`{name}` is an irreversible side effect: write `@safe {name}(…)`"
    if primitives.is_builtin_function(name):
        return f"`{name}` is a built-in function; use it inside an expression"
    if name.upper() in primitives.INSTRUCTION_TABLE:
        return f"the instruction is spelt `{name.upper()}`"
    return _did_you_mean(name, ctx.unit.functions)


def _did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f"did you mean `{close[0]}`?" if close else ""


def _in_source_order(unit: Unit, errors: list[CheckError]) -> list[CheckError]:
    """Sort by position; the main file's errors first, then other files as they appear."""
    file_rank = {unit.file: 0}
    for item in unit.program.items:
        file_rank.setdefault(item.span.file, 0)

    def key(error: CheckError):
        span = error.span or NO_SPAN
        return file_rank.setdefault(span.file, len(file_rank)), span.line, span.col

    return sorted(errors, key=key)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _given(n: int) -> str:
    return f"{n} {'was' if n == 1 else 'were'} given"
