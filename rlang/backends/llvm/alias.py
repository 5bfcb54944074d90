"""Alias scopes for the array parameters of a generated function.

Note [Array parameters do not overlap]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An array reaches a function as a pointer to its descriptor {data, shape, strides};
the `noalias` on that pointer says nothing about the *data*, so without more the
optimiser must assume that a store into `y![i]` may change `x[j]`: it reloads `x[j]`
after every store and keeps gradient accumulators such as `x̄[j]` in memory.

LANGUAGE.md §5 forbids the overlap: an argument that a function can write does not
share memory with any other argument (checked at every call while invcheck is on;
with invcheck off, breaking the rule is undefined, as `restrict` is in C).  Read-only
arguments may share memory with each other, and so may the gradients of read-only
arguments (`accumulated`: a caller that passes one array twice passes its gradient
twice).  So each array parameter falls into a group:

  * a written parameter: its own group;
  * every read-only parameter: the group "read";
  * an accumulated parameter: its own group where no call in the module can pass
    one gradient for two of them (`distinct_gradients`: Python passes fresh
    buffers), else every accumulated parameter of the function is in the group
    "accumulated".  Gradients are never a primal array.

Each group is an alias scope, and every load and store through a parameter's data
pointer is tagged `!alias.scope` (its group) and `!noalias` (all other groups).  The
scopes are declared at the entry with `llvm.experimental.noalias.scope.decl`, so that
when the function is inlined into a loop, each inlined call is a scope of its own:
the promise holds between the accesses of one call, not between calls that pass the
arrays in another order.  Scope names carry the function's symbol, which is unique
in the module.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from ...ir.walk import walk

_DOMAIN = "rev.arrays"


class ParameterScopes:
    """The alias scopes of one function's array parameters.

    `ParameterScopes(out, fn, distinct)` groups the array parameters of the IR
    function `fn` (see the Note; `distinct`: its accumulated parameters never share
    memory); `declare(builder)` emits the scope declarations (call at the
    entry); `root(data, var)` records the data pointer of a parameter; after the body
    is emitted, `tag(llfn)` tags every load and store whose address is computed from
    a recorded data pointer.  With fewer than two groups there is nothing to say and
    all three do nothing."""

    def __init__(self, out: ll.Module, fn: ir.Function, distinct: bool):
        self.out = out
        self.group_of: dict = {}            # array parameter Var → group name
        for k, var in enumerate(fn.params):
            if isinstance(var.type, ir.ArrayType):
                self.group_of[var] = (
                    (f"param{k}" if distinct else "accumulated") if k in fn.accumulated
                    else f"param{k}" if k in fn.written else "read")
        groups = sorted(set(self.group_of.values()))
        self.enabled = len(groups) > 1
        self.roots: dict = {}               # data pointer value → group name
        if not self.enabled:
            return
        domain = out.add_metadata([ll.MetaDataString(out, _DOMAIN)])
        scopes = {g: out.add_metadata([ll.MetaDataString(out, f"rev.{fn.symbol}.{g}"),
                                       domain]) for g in groups}
        self.scope_list = {g: out.add_metadata([scopes[g]]) for g in groups}
        self.others = {g: out.add_metadata([scopes[h] for h in groups if h != g])
                       for g in groups}

    def declare(self, builder: ll.IRBuilder) -> None:
        if not self.enabled:
            return
        decl = self.out.globals.get("llvm.experimental.noalias.scope.decl")
        if decl is None:
            decl = ll.Function(self.out, ll.FunctionType(ll.VoidType(), [ll.MetaDataType()]),
                               "llvm.experimental.noalias.scope.decl")
        for scopes in self.scope_list.values():
            builder.call(decl, [scopes])

    def root(self, data, var) -> None:
        group = self.group_of.get(var)
        if self.enabled and group is not None:
            self.roots[id(data)] = group

    def tag(self, llfn: ll.Function) -> None:
        if not self.enabled:
            return
        for block in llfn.blocks:
            for instr in block.instructions:
                if isinstance(instr, ll.LoadInstr):
                    address = instr.operands[0]
                elif isinstance(instr, ll.StoreInstr):
                    address = instr.operands[1]
                else:
                    continue
                group = self._group(address)
                if group is not None:
                    instr.set_metadata("alias.scope", self.scope_list[group])
                    instr.set_metadata("noalias", self.others[group])

    def _group(self, address):
        """The group of the parameter whose data an address points into (through
        GEPs and casts), or None."""
        while True:
            group = self.roots.get(id(address))
            if group is not None:
                return group
            if isinstance(address, ll.GEPInstr):
                address = address.pointer
            elif isinstance(address, ll.CastInstr) and address.opname == "bitcast":
                address = address.operands[0]
            else:
                return None


def distinct_gradients(module: ir.Module) -> set:
    """The symbols of `module` whose accumulated array parameters never share memory
    (Note [Array parameters do not overlap]).  Calls from Python pass fresh buffers;
    a call in the module keeps the callee's apart unless it passes one variable at
    two accumulated positions, or passes accumulated parameters of a caller that
    does not keep its own apart."""
    calls = [(module.functions[symbol], stmt) for symbol, fn in module.functions.items()
             for stmt in walk(fn.body) if isinstance(stmt, ir.Call)]
    distinct = set(module.functions)
    changed = True
    while changed:
        changed = False
        for caller, call in calls:
            if call.callee in distinct and not _keeps_apart(module, caller, call, distinct):
                distinct.discard(call.callee)
                changed = True
    return distinct


def _keeps_apart(module: ir.Module, caller: ir.Function, call: ir.Call, distinct) -> bool:
    callee = module.functions[call.callee]
    passed = [call.args[k].var for k in sorted(callee.accumulated)
              if isinstance(callee.params[k].type, ir.ArrayType)]
    if len(passed) < 2:
        return True
    if len(set(passed)) < len(passed):
        return False
    caller_accumulated = {caller.params[k] for k in caller.accumulated}
    return caller.symbol in distinct or not any(v in caller_accumulated for v in passed)
