"""What the use of undeclared parameters says about their types, for an
ahead-of-time compile (rlang/lower/entries.py): which are arrays and of what rank
(`array_ranks`), which are integers (`integer_params`).

In: the program's functions (name → ast.Function).  Out: name → {parameter name:
rank} for the parameters without a declared type that the body uses as arrays:

* indexed with k indices (`x[i, j]`): an array of rank k;
* passed to `length` (rank at least 1) or as `size(x, d)` with a literal d (rank at
  least d + 1);
* passed to a function whose parameter in that position is an array (declared, or
  inferred here: a least fixpoint over the call graph, so recursion is handled).

A parameter used in several ways gets the largest rank; if the uses disagree, the
lowering refuses the function with its reason.  A parameter is an integer (i64, or an
array of i64) when it stands as an index or a `for` bound, alone or in `+ - * // %`
arithmetic there.  The others' element type is the caller's to try: f64, then i64
(Note [Signatures from use]).
"""
from __future__ import annotations

import dataclasses

from ..frontend import ast


def array_ranks(functions: dict) -> dict:
    """function name → {undeclared parameter name: inferred array rank}."""
    ranks = {name: _direct_ranks(fn) for name, fn in functions.items()}
    changed = True
    while changed:                       # ranks only grow, and are bounded: it ends
        changed = False
        for name, fn in functions.items():
            found = ranks[name]
            undeclared = {p.name for p in fn.params if p.type is None}
            for node in _nodes(fn.body):
                if not isinstance(node, ast.CallStmt) or node.func not in functions:
                    continue
                for arg, rank in zip(node.args, _param_ranks(functions[node.func],
                                                             ranks[node.func])):
                    if rank and isinstance(arg, ast.Name) and arg.id in undeclared \
                            and rank > found.get(arg.id, 0):
                        found[arg.id] = rank
                        changed = True
    return ranks


def _param_ranks(fn: ast.Function, inferred: dict) -> list[int]:
    """The array rank of each parameter of `fn` (0: a scalar, a stack or unknown)."""
    return [(p.type.ndim if not p.type.is_stack else 0) if p.type is not None
            else inferred.get(p.name, 0) for p in fn.params]


def _direct_ranks(fn: ast.Function) -> dict:
    """The ranks that the body of `fn` itself shows (no calls followed)."""
    undeclared = {p.name for p in fn.params if p.type is None}
    found: dict = {}

    def at_least(name: str, rank: int) -> None:
        if name in undeclared and rank > found.get(name, 0):
            found[name] = rank

    for node in _nodes(fn.body):
        match node:
            case ast.Index(base=ast.Name(id=name), indices=indices):
                at_least(name, len(indices))
            case ast.Call(func="length", args=(ast.Name(id=name),)):
                at_least(name, 1)
            case ast.Call(func="size", args=(ast.Name(id=name), ast.IntLit(value=d))):
                at_least(name, max(d + 1, 1))
    return found


def integer_params(fn: ast.Function) -> frozenset:
    """The undeclared parameters of `fn` used as integers: an index (`x[i + 1]`), a
    `for` bound (`for k = 0:n - 1`)."""
    undeclared = {p.name for p in fn.params if p.type is None}
    integer_places = []
    for node in _nodes(fn.body):
        match node:
            case ast.Index(indices=indices):
                integer_places.extend(indices)
            case ast.For(start=start, step=step, stop=stop):
                integer_places += [start, step, stop]
    found = set()
    while integer_places:
        expr = integer_places.pop()
        match expr:
            case ast.Name(id=name) if name in undeclared:
                found.add(name)
            case ast.Binary(op="+" | "-" | "*" | "//" | "%", left=left, right=right):
                integer_places += [left, right]
            case ast.Unary(op="-", operand=operand):
                integer_places.append(operand)
    return frozenset(found)


def _nodes(root):
    """Every AST node under `root` (a node or a tuple of them), without recursion."""
    pending = [root]
    while pending:
        value = pending.pop()
        if isinstance(value, tuple):
            pending.extend(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, ast.TypeRef):
            yield value
            pending.extend(getattr(value, f.name) for f in dataclasses.fields(value)
                           if f.name != "span")


# Note [Signatures from use]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# `rlang compile` must pick one specialisation per function without seeing a call.
# A declared type is taken as written.  An undeclared parameter is an array when its
# use says so (above), else a scalar; one used as an index or a loop bound is i64
# (its elements, for an array); the others' type is tried as f64, then i64, for all
# of them at once, as it always was for scalars: the first that lowers is compiled.
# Anything finer (an f32 array, a stack, an i64 that no index shows) is the user's
# to write, in the source or as `--signature 'f(i64, f64[:])'`
# on the command line (docs/cli.md); a function that none of these types compiles
# is left out with the lowering's reason.
