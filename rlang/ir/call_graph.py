"""The call graph of an IR module, for the code generators (llvm and cuda).

- `callees(body)`, `calls_in(body)`: what a statement list calls (and whether inside
  a loop);
- `recursive_symbols(module)`: the specialisations that can reach themselves;
- `depth_counted_symbols(module)`: those that count the call depth (the frames of
  every chain through recursion);
- `inlined_once(module)`: those called by one call statement, inside a loop, and
  not recursive (Note [Functions called once are inlined]).
"""
from __future__ import annotations

import collections

from . import nodes as ir

def callees(body) -> set:
    """The symbols a statement list calls, at any depth."""
    return {callee for callee, _ in calls_in(body)}


def calls_in(body, in_loop: bool = False):
    """(callee, whether inside a loop) for each call statement of a statement list,
    at any depth."""
    for stmt in body:
        if isinstance(stmt, ir.Call):
            yield stmt.callee, in_loop
        elif isinstance(stmt, ir.If):
            for branch in stmt.branches:
                yield from calls_in(branch.body, in_loop)
            yield from calls_in(stmt.orelse, in_loop)
        elif isinstance(stmt, (ir.While, ir.For)):
            yield from calls_in(stmt.body, True)
        elif isinstance(stmt, ir.From):
            yield from calls_in(stmt.body, True)
            yield from calls_in(stmt.step, True)


def inlined_once(module: ir.Module) -> set:
    """The specialisations that one call statement of the module calls, inside a
    loop, and that are not recursive (Note [Functions called once are inlined])."""
    calls = [call for fn in module.functions.values() for call in calls_in(fn.body)]
    sites = collections.Counter(callee for callee, _ in calls)
    return {callee for callee, in_loop in calls
            if in_loop and sites[callee] == 1} - recursive_symbols(module)


# Note [Functions called once are inlined]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every specialisation is an external function (its entry points and a shared
# library's callers call it), so LLVM's inliner weighs a large one called in a
# loop at its full size and leaves the call: GMM's `gmm_point!`, called once per
# data point, reloaded its six array descriptors and its ancillas' sizes on every
# point.  As C compilers inline a static function called from one place, a
# specialisation that one call statement of the module calls, inside a loop (and
# that is not recursive), is marked `alwaysinline`, as `@inline` functions are.
# The copy costs compile time only; calls outside loops are left alone, since
# there it would buy nothing (inlining every function called once made the first
# run of a 54-line program 0.2 s slower).  GMM d = 2, K = 5: forward 118.6 →
# 109.5 µs, gradient 264 → 246 µs; d = 10 and d = 64 unchanged within noise.


def recursive_symbols(module: ir.Module) -> set:
    """The specialisations that can reach themselves through calls."""
    graph = {symbol: callees(fn.body) for symbol, fn in module.functions.items()}
    recursive = set()
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            symbol = todo.pop()
            if symbol == start:
                recursive.add(start)
                break
            if symbol not in seen:
                seen.add(symbol)
                todo.extend(graph.get(symbol, ()))
    return recursive


def depth_counted_symbols(module: ir.Module) -> set:
    """The specialisations that count the call depth: the recursive ones, those that
    can reach one (its callers, at any distance) and those one can reach (its
    callees).  Every frame of a chain through recursion counts, as every frame does
    in the interpreter, so that the limit is reached at the same call; a chain
    without recursion is bounded by the program."""
    graph = {symbol: callees(fn.body) for symbol, fn in module.functions.items()}
    callers: dict = {}
    for symbol, called in graph.items():
        for callee in called:
            callers.setdefault(callee, set()).add(symbol)

    def reach(edges) -> set:
        seen, todo = set(), list(recursive_symbols(module))
        while todo:
            symbol = todo.pop()
            if symbol not in seen:
                seen.add(symbol)
                todo.extend(edges.get(symbol, ()))
        return seen

    return reach(graph) | reach(callers)
