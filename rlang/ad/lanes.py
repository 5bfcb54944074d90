"""Gradient passes that carry several cotangents at once: lanes.

`laned(module, shared, lanes)` takes a gradient pass (the adjoint transform of ~f's
IR, derivatives.py) and returns `(module, shared)` for the same pass run with
`lanes` cotangents together: every gradient shadow `v·grad` becomes `lanes` of
them (`v·grad`, `v·grad·1`, …), the statements that compute gradients run once per
lane, and the statements that compute values run once.  The entry takes ~f's
arguments and then each gradient parameter `lanes` times (lane 0 first); its
symbol is the pass's with `__x<lanes>` added.

Note [Gradient lanes]
~~~~~~~~~~~~~~~~~~~~~
A Jacobian of m outputs is m gradient passes: each runs the inverse of f from f's
outputs (values) and carries one cotangent's gradients (shadows).  The values are
the same in every pass; only the shadows differ.  Values never depend on shadows
in the adjoint IR (conditions, indices and loop bounds are values; a gradient is
only ever added to, from values and other gradients), so a pass can carry W
cotangents at once and compute the values once: each statement that writes a
shadow (or a temporary computed from shadows: a seed) is repeated for each lane
with that lane's variables; a branch whose condition reads a shadow (a zero-seed
guard, Note [Zero seeds]) or a loop whose bounds do (the extent of a shadow stack)
is repeated whole, per lane, with its own temporaries; a call passes each shadow
argument W times to the laned callee.  Statements that only compute values run
once.  A pass in which a value would be computed from a shadow (not made by the
adjoint transform) is refused with `NotLaned`, and the driver falls back to one
pass per cotangent.  `rlang.jacobian` on a compiled backend takes its rows W at a
time this way (ad/compiled.py `compiled_jacobian`), after one forward run; the
cuda backend's BA benchmark takes both residuals' rows in one pass (issue #28's
vector seeds).
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from ..ir import nodes as ir
from ..types_rules import BackendUnsupported
from ..ir.guards import flattened_seed_branch
from .symbols import laned_symbol
from ..ir.walk import (defined_vars, expr_vars, mapped, nested_bodies, stmt_exprs, stmt_places,
                       walk)


class NotLaned(BackendUnsupported):
    """The pass computes a value from a gradient: it cannot carry lanes.  (A
    backend refusal: the backend keeps it and does not derive the pass again.)"""


def lane_arguments(gradients: list) -> list:
    """The gradient arguments of a laned pass, from one list of gradients per lane
    (None where an argument has none): each argument's lanes together, lane 0 first."""
    return [lane[k] for k in range(len(gradients[0])) if gradients[0][k] is not None
            for lane in gradients]


def laned(module: ir.Module, shared: frozenset, lanes: int) -> tuple:
    """(module, shared) of the pass with `lanes` cotangents (see the module
    docstring); NotLaned when it cannot carry them."""
    lane_params = {symbol: [k for k, p in enumerate(fn.params) if p in shared]
                   for symbol, fn in module.functions.items()}
    out = ir.Module(laned_symbol(module.entry, lanes), sites=module.sites)
    new_shared = set(shared)
    for symbol, fn in module.functions.items():
        laning = _Laning(fn, shared, lanes, lane_params)
        out.functions[laned_symbol(symbol, lanes)] = laning.function()
        new_shared |= laning.shared_copies()
    return out, frozenset(new_shared)


class _Laning:
    def __init__(self, fn: ir.Function, shared: frozenset, lanes: int, lane_params: dict):
        self.fn, self.shared, self.lanes, self.lane_params = fn, shared, lanes, lane_params
        self.copies: dict = {}          # Var → its variable in each lane (lane 0: itself)
        for k in lane_params[fn.symbol]:
            self._lane(fn.params[k])

    def _lane(self, var: ir.Var) -> None:
        if var not in self.copies:
            self.copies[var] = [var] + [ir.Var(f"{var.name}·{lane}", var.type, var.is_param)
                                        for lane in range(1, self.lanes)]

    def shared_copies(self) -> set:
        return {copy for var, copies in self.copies.items() if var in self.shared
                for copy in copies}

    def function(self) -> ir.Function:
        fn = self.fn
        body = self._body(fn.body)
        params, where = [], {}
        for k, p in enumerate(fn.params):
            where[k] = list(range(len(params), len(params) + len(self.copies.get(p, [p]))))
            params += self.copies.get(p, [p])

        def moved(positions) -> frozenset:
            return frozenset(j for k in positions for j in where[k])

        return replace(fn, symbol=laned_symbol(fn.symbol, self.lanes), params=tuple(params),
                       body=body, written=moved(fn.written),
                       accumulated=moved(fn.accumulated))

    # ------------------------------------------------------------- statements
    def _body(self, stmts) -> tuple:
        out = []
        for stmt in stmts:
            out += self._statement(stmt)
        return tuple(out)

    def _statement(self, stmt) -> list:
        if isinstance(stmt, ir.Call):
            return [self._call(stmt)]
        if nested_bodies(stmt):
            if not self._reads_lanes(stmt_exprs(stmt)):
                return [self._rebuilt(stmt)]
            flat = flattened_seed_branch(stmt)      # Note [Seed branches in lanes]
            if flat is not None:
                return list(self._body(tuple(self._value_guards(s) for s in flat)))
            inner = set().union(*(defined_vars(b) for b in nested_bodies(stmt)))
            for var in inner | _loop_var(stmt):
                self._lane(var)     # temporaries of its own in each lane's copy
            return self._per_lane(stmt)
        if isinstance(stmt, ir.Alloc) and (stmt.var in self.shared or self._reads_lanes(
                stmt_exprs(stmt))):
            self._lane(stmt.var)
        written = [p.var for p in _written_places(stmt)]
        if any(v in self.copies for v in written):
            if not all(v in self.copies for v in written):
                raise NotLaned(f"`{self.fn.name}` writes a value and a gradient together")
            return self._per_lane(stmt)
        if self._reads_lanes(stmt_exprs(stmt)) or self._reads_lanes(
                [i for p in stmt_places(stmt) for i in getattr(p, "indices", ())]):
            raise NotLaned(f"`{self.fn.name}` computes a value from a gradient")
        return [stmt]

    def _value_guards(self, stmt):
        """A statement of a flattened seed branch that computes a value (reads no
        lane but in its guards), with the guards on lanes taken out (those on values
        kept); other statements (those of tangents) as they are."""
        reads = self._reads_lanes
        if any(p.var in self.copies or p.var in self.shared
               for p in _written_places(stmt)):
            return stmt

        def strip(node):
            if isinstance(node, ir.Guarded):
                kept = tuple(g for g in node.guards if not reads([g]))
                value = strip(node.value)
                return replace(node, guards=kept, value=value) if kept else value
            if is_dataclass(node) and not isinstance(node, type) and \
                    not isinstance(node, ir.Var):
                changes = {f.name: strip(getattr(node, f.name)) for f in fields(node)}
                return replace(node, **changes)
            if isinstance(node, tuple):
                return tuple(strip(x) for x in node)
            return node

        stripped = strip(stmt)
        return stmt if reads(stmt_exprs(stripped)) else stripped

    def _rebuilt(self, stmt):
        """A branch or loop whose control reads no gradient: its bodies laned."""
        if isinstance(stmt, ir.If):
            branches = tuple(replace(b, body=self._body(b.body)) for b in stmt.branches)
            return replace(stmt, branches=branches, orelse=self._body(stmt.orelse))
        if isinstance(stmt, ir.From):
            return replace(stmt, body=self._body(stmt.body), step=self._body(stmt.step))
        return replace(stmt, body=self._body(stmt.body))

    def _per_lane(self, stmt) -> list:
        if self._writes_values(stmt):
            raise NotLaned(f"`{self.fn.name}` computes a value under a gradient's condition")
        return [_substituted(stmt, {v: c[lane] for v, c in self.copies.items()})
                for lane in range(self.lanes)]

    def _writes_values(self, stmt) -> bool:
        """Whether a statement repeated per lane writes a variable without lanes (or
        calls a function, which takes every lane at once)."""
        for inner in walk([stmt]):
            if isinstance(inner, ir.Call):
                return True
            for place in _written_places(inner):
                if place.var not in self.copies:
                    return True
        return False

    def _call(self, stmt: ir.Call) -> ir.Call:
        if stmt.callee not in self.lane_params:     # derived later (a library's)
            raise NotLaned(f"`{self.fn.name}` calls `{stmt.callee}`, which has no lanes")
        laned_positions = self.lane_params[stmt.callee]
        args = []
        for k, arg in enumerate(stmt.args):
            if k in laned_positions:
                if arg.var not in self.copies:
                    raise NotLaned(f"`{self.fn.name}` passes a value as a gradient")
                args += [_substituted(arg, {v: c[lane] for v, c in self.copies.items()})
                         for lane in range(self.lanes)]
            elif arg.var in self.copies:        # (arguments are views: Read or places)
                raise NotLaned(f"`{self.fn.name}` passes a gradient as a value")
            else:
                args.append(arg)
        return replace(stmt, callee=laned_symbol(stmt.callee, self.lanes), args=tuple(args))

    def _reads_lanes(self, exprs) -> bool:
        return any(v in self.copies for e in exprs if e is not None for v in expr_vars(e))


def _loop_var(stmt) -> set:
    return {stmt.var} if isinstance(stmt, ir.For) else set()


def _written_places(stmt) -> list:
    """The places a simple statement writes (a call's are its callee's business)."""
    if isinstance(stmt, ir.Update):
        return [stmt.target]
    if isinstance(stmt, ir.Instr):
        return list(stmt.places)
    if isinstance(stmt, (ir.Push, ir.Pop)):
        return [ir.VarPlace(stmt.stack), stmt.place]
    if isinstance(stmt, (ir.Alloc, ir.Dealloc)):
        return [ir.VarPlace(stmt.var)]
    return []


def _substituted(node, mapping: dict):
    """`node` with every variable in `mapping` replaced."""
    return mapped(node, lambda part: mapping.get(part) if isinstance(part, ir.Var) else None)
