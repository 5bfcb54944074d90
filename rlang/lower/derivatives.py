"""Lowering of derivative statements: `grad f(args) wrt p, … into t, …` and `fgrad …`.

`lower_derivative(lowering, stmt)` returns the IR of one ast.Derivative
(docs/nested.md): a call of a *derivative function* of the module, whose parameters
are the arguments and then the targets, and which adds ±∂L/∂p to each target.  The
function is lowered with an empty body and a `DerivativeOf` saying what it computes;
rlang/ad/nested_ir.py fills the body in (the calls of f and of its gradient pass or
tangent version) and gives its derivatives, since only the AD layer derives IR.  f
is specialised forward and backward for the arguments' types, so that both are in
the module to derive from.
"""
from __future__ import annotations

from ..errors import RlangTypeError
from ..frontend import ast
from ..ir import nodes as ir
from ..types_rules import BackendUnsupported

#: The scalar types a derivative statement's arguments may have on compiled backends.
_ARGUMENT_TYPES = ("f64", "i64", "i32", "bool")


def lower_derivative(lowering, stmt: ast.Derivative) -> list:
    """The statements of `stmt` in the function being lowered (`lowering`, a
    _FunctionLowering): argument temporaries, the call of the derivative function,
    and the temporaries' deallocations."""
    unit_fn = lowering.lowering.unit.functions[stmt.func]
    params = [p.name for p in unit_fn.params]
    wrt = tuple(params.index(name) for name in stmt.wrt)
    what = f"`{stmt.mode} {stmt.func}`"
    before, args, after, types = lowering.call_arguments(stmt.func, stmt.args)
    for k, t in enumerate(types):
        if t not in _ARGUMENT_TYPES:
            raise BackendUnsupported(f"{what} with the argument `{params[k]}` of type "
                                     f"{ir.type_text(t)} (compiled derivative statements "
                                     "take f64, integer and bool scalars)", stmt.span)
    for k in (0,) + wrt:
        if types[k] != "f64":
            role = "the loss" if k == 0 else "a parameter to differentiate by"
            raise RlangTypeError(f"{what}: `{params[k]}` is {role} and must be an f64 "
                                 f"value, got {ir.type_text(types[k])}", stmt.span)
    targets = [lowering.place(t) for t in stmt.targets]
    for view, place in zip(stmt.targets, targets):
        if place.type != "f64":
            raise RlangTypeError(f"{what} adds an f64 gradient to `{ast_text(view)}`, which "
                                 f"is {ir.type_text(place.type)}", view.span)
    forward = lowering.lowering.specialise(stmt.func, tuple(types), False)
    inverse = lowering.lowering.specialise(stmt.func, tuple(types), True)
    sign = -1.0 if stmt.inverse else 1.0
    site = lowering.call_site(stmt.span, (stmt.func, stmt.inverse))
    symbol = _symbol(stmt.mode, sign, forward, wrt)
    module = lowering.module
    if symbol not in module.functions:
        inputs = tuple(ir.Var(f"{params[k]}·arg", t, True) for k, t in enumerate(types))
        outputs = tuple(ir.Var(f"{stmt.wrt[j]}·{stmt.mode}", "f64", True)
                        for j in range(len(wrt)))
        module.functions[symbol] = ir.Function(
            symbol, f"{stmt.mode} {stmt.func}", False, inputs + outputs, (), stmt.span,
            written=frozenset(range(len(inputs), len(inputs) + len(outputs))),
            derivative=ir.DerivativeOf(stmt.mode, sign, forward, inverse, wrt, site))
    alias = None
    if lowering.checks and len(targets) > 1:    # targets the same element at run time
        texts = tuple(ast_text(a) for a in stmt.args + stmt.targets)
        alias = lowering.site("call_alias", stmt.span, (
            f"{stmt.mode} {stmt.func}", tuple(range(len(args), len(args) + len(targets))),
            target_names(params, stmt.wrt), texts))
    call = ir.Call(symbol, tuple(args) + tuple(targets), site, alias)
    return before + [call] + after


def target_names(params: list, wrt: tuple) -> tuple:
    """The names of a derivative function's parameters in messages: f's, then
    `into p` for the target of each parameter p."""
    return tuple(params) + tuple(f"into {name}" for name in wrt)


def _symbol(mode: str, sign: float, forward: str, wrt: tuple) -> str:
    """`rev_dgrad_f__f64_f64_w1` (`rev_dgrad_neg_…` subtracts)."""
    by = "_".join(str(k) for k in wrt)
    return f"rev_d{mode}{'_neg' if sign < 0 else ''}_{forward[len('rev_'):]}_w{by}"


def ast_text(view) -> str:
    from ..frontend.printer import format_expr

    return format_expr(view)
