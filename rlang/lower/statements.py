"""Lowering: checked AST → typed reversible IR (rlang/ir/nodes.py), specialised per types.

`lower(unit, name, arg_types, inverse, invcheck)` returns an `ir.Module` whose entry
is the specialisation of function `name` (or of its inverse) for `arg_types` (IR
types, see `type_of_value` in rlang/lower/argument_types.py), together with every
specialisation it calls.

The typing rules are those of the interpreter (LANGUAGE.md §3, §7), decided here on
types instead of values: NumPy promotion (`types.promote`), a number literal taking
the type of a narrower operand (`x * 2.0` is f32 when x is), `/` of integers giving
f64, functions of integers giving f64 except the integer-preserving ones.  Inverse
functions are lowered from the inverted AST (`rlang.frontend.invert`), so the IR has no
notion of direction except in its sites (for error reports).

Constructs the compiled backends do not handle yet are refused with
`BackendUnsupported`, naming the construct and its source position.

Note [Checks invcheck does not turn off]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
invcheck (`invcheck=False`, `--no-invcheck`, `@invcheckoff`) turns off the
reversibility checks of LANGUAGE.md §6 and nothing else: "With it off no
reversibility check runs".  The errors of §8's RlangRuntimeError are made whatever
it says, as the interpreter makes them: an index out of bounds, integer, fixed and
ulog division by zero, an integer raised to a negative power, ulog subtraction
below zero, a failed conversion, a zero `for` step, an empty stack, call depth.
Without them compiled code would read and write outside its arrays (a wrong
result, or a crashed process, which §8 forbids) or give a value where the
interpreter raises.  Their sites come from `error_site`; those of the §6 checks
from `site`, which is None with invcheck off.  `@inbounds` is the one way to drop
the bounds checks, as in Julia: the program then promises its indices are in range.
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..frontend import ast
from ..ir import nodes as ir
from ..errors import RlangTypeError
from ..frontend.ast import is_number_literal
from ..interp.evaluate import Evaluator
from ..frontend.invert import invert_body, inverted_range
from .literals import refuse_unequal_literal
from .arrays import array_alloc, array_argument, array_dealloc, swap_arrays
from .complex import Pair, as_pair
from .expressions import convert, lower_expr
from .parallel import ParallelLoops
from .updates import UpdateLowering, part_place
from .janus_safe import lower_janus_safe
from .stacks import is_stack_call, names_stack, push_pop, stack_alloc, stack_dealloc
from .systems import SYSTEMS, to_system, zero_or_one
from ..primitives import CONSTANTS
from ..types_rules import (INSTRUCTION_OPERANDS, SUPPORTED_SCALARS, BackendUnsupported,
                           CompiledTypeError, instruction_operand_message)
from .argument_types import type_of_value
from ..values import with_article


def lower(unit, name: str, arg_types: tuple, inverse: bool, invcheck: bool) -> ir.Module:
    """The IR module of `name` (its inverse when `inverse`) for `arg_types`.  A type
    error is a CompiledTypeError (a refusal under backend "auto")."""
    with _type_errors_refused():
        lowering = _Lowering(unit, invcheck)
        entry = lowering.specialise(name, tuple(arg_types), inverse)
        lowering.drain()
    lowering.module.entry = entry
    return lowering.module


def lower_many(unit, entries, invcheck: bool) -> ir.Module:
    """One IR module holding the specialisations `entries` ((name, arg_types,
    inverse) triples) and everything they call; `module.entry` is unused."""
    with _type_errors_refused():
        lowering = _Lowering(unit, invcheck)
        for name, arg_types, inverse in entries:
            lowering.specialise(name, tuple(arg_types), inverse)
        lowering.drain()
    return lowering.module


@contextlib.contextmanager
def _type_errors_refused():
    """A RlangTypeError raised inside becomes a CompiledTypeError (types_rules.py)."""
    try:
        yield
    except RlangTypeError as error:
        if isinstance(error, CompiledTypeError):
            raise
        raise CompiledTypeError(error.message, error.span, error.notes) from None


class _Lowering:
    """The worklist of specialisations still to lower, and the module they go into."""

    def __init__(self, unit, invcheck: bool):
        self.unit = unit
        self.invcheck = invcheck
        self.module = ir.Module(entry="")
        self.pending: list = []
        self.owners: dict = {}          # symbol → the rev function it was made for
        self.consts = self._const_values()
        self._written = None

    def written(self, name: str) -> frozenset:
        """The parameter positions function `name` may write (`written_params` of the
        unit, found once per lowering: it walks every function to a fixed point)."""
        if self._written is None:
            from ..frontend.analysis import written_params

            self._written = written_params(self.unit.functions)
        return self._written.get(name, frozenset())

    def _const_values(self) -> dict:
        evaluator = Evaluator({})
        for const in self.unit.consts.values():
            evaluator.consts[const.name] = evaluator.eval(const.value, {})
        return {**CONSTANTS, **evaluator.consts}

    def specialise(self, name: str, arg_types: tuple, inverse: bool) -> str:
        symbol = ir.symbol_of(name, arg_types, inverse)
        owner = self.owners.setdefault(symbol, name)
        if owner != name:               # `g!` and `g_` are both `g_` in generated code
            raise BackendUnsupported(
                f"the functions `{owner}` and `{name}` have the same name in compiled code "
                f"(`{ir.c_identifier(name)}`); rename one", self.unit.functions[name].span)
        if symbol not in self.module.functions and symbol not in {p[0] for p in self.pending}:
            self.pending.append((symbol, name, arg_types, inverse))
            self.module.functions[symbol] = None        # reserved: recursion ends here
        return symbol

    def drain(self) -> None:
        while self.pending:
            symbol, name, arg_types, inverse = self.pending.pop()
            fn = self.unit.functions[name]
            self.module.functions[symbol] = _FunctionLowering(
                self, fn, arg_types, inverse, symbol).lower()


class _FunctionLowering(UpdateLowering):
    """Lowers one function body; `scope` maps rev names to IR variables."""

    def __init__(self, lowering: _Lowering, fn: ast.Function, arg_types, inverse, symbol):
        self.lowering, self.fn, self.inverse, self.symbol = lowering, fn, inverse, symbol
        self.module = lowering.module
        self.checks = lowering.invcheck
        self.inbounds = False
        self.hoisted: list | None = None        # see `hoist`
        self.oriented: list = []                # see `oriented_body`
        self.parallel = ParallelLoops()         # checked `@parallel for` loops around
        self.params = []
        self.scope: dict[str, ir.Var] = {}
        self.constants: dict[str, ir.Var] = {}          # constant arrays read here
        self.constant_values: dict = {}                 # their Var → ConstArray
        for param, t in zip(fn.params, arg_types):
            declared = _declared_type(param)
            if declared is not None and declared != ir.kind(t):
                raise RlangTypeError(f"argument `{param.name}` of `{fn.name}` must be "
                                     f"{with_article(ir.type_text(declared))}, got "
                                     f"{with_article(ir.type_text(t))}", param.span)
            var = ir.Var(param.name, t, is_param=True)
            self.params.append(var)
            self.scope[param.name] = var

    def lower(self) -> ir.Function:
        body = invert_body(self.fn.body) if self.inverse else self.fn.body
        lowered = self.body(body)
        results = ()
        if self.fn.name == "main" and not self.fn.params:     # the store (LANGUAGE.md §4)
            results = tuple(v for v in self.scope.values() if not v.is_param)
        written = self.lowering.written(self.fn.name)
        return ir.Function(self.symbol, self.fn.name, self.inverse, tuple(self.params),
                           lowered, self.fn.span, results,
                           tuple(self.constant_values.items()), frozenset(written),
                           inline=self.fn.inline)

    # ------------------------------------------------------------------ sites
    def site(self, kind: str, span, detail: tuple = ()) -> int | None:
        """A reversibility check's site (LANGUAGE.md §6), or None when invcheck is off
        here."""
        if not self.checks:
            return None
        return self.error_site(kind, span, detail)

    def error_site(self, kind: str, span, detail: tuple = ()) -> int:
        """The site of a check that is made whatever invcheck says: an error of meaning
        (index out of bounds, division by zero, a domain, a failed conversion) or of
        memory, an RlangRuntimeError in the interpreter too (Note [Checks invcheck
        does not turn off])."""
        return self.module.add_site(ir.Site(kind, span, self.fn.name, self.inverse, detail,
                                            self.direction_note()))

    def call_site(self, span, detail: tuple) -> int:
        return self.module.add_site(ir.Site("call", span, self.fn.name, self.inverse, detail,
                                            self.direction_note()))

    def direction_note(self) -> str | None:
        """The interpreter's note for an error here (interp._exec_oriented): the
        innermost `@routine`, `~@routine` or `~begin` block being lowered whose
        statements run against the direction of the function's frame."""
        for backward, what, span in reversed(self.oriented):
            if backward != self.inverse:
                return (f"this statement was running {'backward' if backward else 'forward'}"
                        f", as part of {what} at {span}")
        return None

    def oriented_body(self, stmts, backward: bool, what: str, span) -> tuple:
        """The IR of a block whose statements run `backward` (or forward) relative to
        the source, whatever the function's direction."""
        self.oriented.append((backward, what, span))
        try:
            return self.body(stmts)
        finally:
            self.oriented.pop()

    def running_backward(self) -> bool:
        return self.oriented[-1][0] if self.oriented else self.inverse

    # ------------------------------------------------------------- statements
    def body(self, stmts) -> tuple:
        out: list = []
        routines: list = []
        for stmt in stmts:
            if isinstance(stmt, ast.Routine):
                out.extend(self.oriented_body(stmt.body, False, "`@routine`", stmt.span))
                routines.append(stmt)
            elif isinstance(stmt, ast.UnRoutine):
                out.extend(self.oriented_body(invert_body(routines.pop().body), True,
                                              "`~@routine`", stmt.span))
            else:
                out.extend(self.stmt(stmt))
        return tuple(out)

    def stmt(self, stmt) -> list:
        """The IR of one statement, between the temporaries its expressions hoisted."""
        method = LOWERINGS.get(type(stmt))
        if method is None:
            raise BackendUnsupported(f"the compiled backends do not handle "
                                     f"{type(stmt).__name__} statements yet", stmt.span)
        outer = self.hoisted
        self.hoisted = [] if isinstance(stmt, _HOISTING) else None
        try:
            out = getattr(self, method)(stmt)
            temps = self.hoisted or []
        finally:
            self.hoisted = outer
        return [ir.Alloc(var, value) for var, value in temps] + out + \
            [ir.Dealloc(var, value, None) for var, value in reversed(temps)]

    def hoist(self, value) -> ir.Var | None:
        """A temporary holding `value` (a scalar IR value), allocated before the
        statement being lowered and freed after it, unchecked, against the same value
        (so gradients flow back into it); inside an expression lowered by `bound`
        (conditions, loop ranges), a Let's variable; None elsewhere."""
        if self.hoisted is None:
            return None
        var = ir.Var(f"t·{len(self.hoisted)}", value.type)
        self.hoisted.append((var, value))
        return var

    def bound(self, lower):
        """`lower()`, an IR expression of a statement that evaluates it more than
        once, with the temporaries it hoists bound by Lets around it (Note [Lets in
        conditions], rlang/ir/nodes.py).  In a statement that hoists around itself
        (an index of a place it writes), `lower()` as it is."""
        if self.hoisted is not None:
            return lower()
        self.hoisted = []
        try:
            value = lower()
        finally:
            lets, self.hoisted = self.hoisted, None
        for var, shared in reversed(lets):
            value = ir.Let(var, shared, value)
        return value

    def _instr(self, stmt: ast.Instr) -> list:
        name = stmt.name
        if name in ("PUSH", "POP"):
            return push_pop(self, stmt)
        if name in INSTRUCTION_OPERANDS:    # NEG INC DEC FLIP CONJ
            place = self.place(stmt.args[0])
            wrong = instruction_operand_message(name, ir.type_text(place.type))
            if wrong:
                raise RlangTypeError(wrong, stmt.span)
            if name == "CONJ":
                return [ir.Instr("NEG", (part_place(place, 1),))]
        count = 2 if name in ("SWAP", "ROT", "IROT", "HADAMARD") else 1
        places = tuple(self.place(arg) for arg in stmt.args[:count])
        if name == "SWAP" and all(isinstance(p.type, ir.ArrayType) for p in places):
            return swap_arrays(self, stmt, places)
        for place, arg in zip(places, stmt.args):
            if not isinstance(place.type, str):
                raise RlangTypeError(f"{name} needs scalar views", arg.span)
        angle = None
        if name in ("ROT", "IROT", "HADAMARD"):     # the interpreter's words
        #                                             (interp/instructions.py)
            for place in places:
                if place.type not in ir.FLOAT_TYPES:
                    raise RlangTypeError(f"{name} needs float operands, got "
                                         f"{with_article(place.type)}", stmt.span)
            if places[0].type != places[1].type:
                raise RlangTypeError(f"{name} needs two operands of one type, got "
                                     f"{with_article(places[0].type)} and "
                                     f"{with_article(places[1].type)}", stmt.span)
        if name in ("ROT", "IROT"):
            angle = convert(self.expr(stmt.args[2]), places[0].type)
        if name == "SWAP" and places[0].type != places[1].type:
            raise RlangTypeError(f"SWAP needs two values of one type, got {places[0].type} "
                                 f"and {places[1].type}", stmt.span)
        alias = self.site("instr_alias", stmt.span,
                          (name, _text(stmt.args[0]), _text(stmt.args[1]))) \
            if count == 2 and all(isinstance(p, ir.ElemPlace) for p in places) \
            and places[0].var is places[1].var and places[0].field == places[1].field \
            else None                       # `zs[i].re` and `zs[i].im` never overlap
        if places[0].type == "complex":     # SWAP and NEG, part by part
            return [ir.Instr(name, tuple(part_place(p, field) for p in places), angle,
                             alias if field == 0 else None) for field in (0, 1)]
        return [ir.Instr(name, places, angle, alias)]

    def _alloc(self, stmt: ast.Alloc) -> list:
        value = stmt.value
        if is_stack_call(value) or names_stack(self, value):
            return stack_alloc(self, stmt)
        arrays = array_alloc(self, stmt)
        if arrays is not None:
            return arrays
        lowered = self.expr(value)
        if not isinstance(lowered.type, str):
            raise BackendUnsupported(f"allocating an ancilla from "
                                     f"{ir.type_text(lowered.type)} in compiled code", value.span)
        var = ir.Var(stmt.name, lowered.type)
        self.scope[stmt.name] = var
        return [ir.Alloc(var, complex_value(lowered))]

    def _dealloc(self, stmt: ast.Dealloc) -> list:
        var = self.scope.pop(stmt.name)
        if isinstance(var.type, ir.StackType):
            return stack_dealloc(self, stmt, var)
        if isinstance(var.type, ir.ArrayType):
            return array_dealloc(self, stmt, var)
        # the value is kept with the checks off too: gradients flow into it
        expected = self.expr(stmt.value, var.type if is_number_literal(stmt.value) else None)
        if isinstance(getattr(expected, "type", None), (ir.ArrayType, ir.StackType)):
            raise CompiledTypeError(f"`{stmt.name}` is {with_article(ir.type_text(var.type))} "
                                    f"and cannot be deallocated with "
                                    f"{with_article(ir.type_text(expected.type))}", stmt.span)
        if var.type in ("i32", "i64") and expected.type in ("f32", "f64"):
            # Note [Integers deallocated against floats]
            site = self.site("dealloc", stmt.span, (stmt.name, var.type, "f64"))
            if site is not None:
                refuse_unequal_literal(stmt, var)
            return [ir.Dealloc(var, convert(expected, "f64"), site)]
        site = self.site("dealloc", stmt.span, (stmt.name, var.type))
        if site is not None:        # (unchecked, the value is never compared)
            refuse_unequal_literal(stmt, var)
        if var.type == "complex":
            expected = complex_value(as_pair(expected, "a deallocation", stmt.span))
        elif var.type in SYSTEMS:
            expected = to_system(self, expected, var.type, stmt.value.span)
        else:
            expected = convert(expected, var.type)
        return [ir.Dealloc(var, expected, site)]

    # Note [Integers deallocated against floats]: `k → x` with an integer k and a
    # float x passes in the interpreter where |k − x| ≤ 1e-8, comparing in floats
    # (rlang/interp/comparisons.py `values_equal`).  Converting x to k's type would
    # truncate it (`k → 3.5` passed with k = 3, `k → 1e308` with k = 0: fuzz seed 5001
    # case 50325), so the Dealloc keeps the f64 value: the backends compare k as an
    # f64 and report k as an integer, x as a float (the site's third detail).

    def _zeros(self, stmt: ast.Zeros) -> list:
        t = stmt.type
        if t.ndim or t.is_stack:                # the interpreter's error
            raise RlangTypeError("@zeros allocates scalars; allocate arrays with "
                                 "`a ← zeros(T, n…)` and stacks with `s ← stack(T)`",
                                 t.span)
        if t.scalar not in SUPPORTED_SCALARS:
            raise BackendUnsupported(f"@zeros of {t.scalar} in the compiled backends", stmt.span)
        out = []
        for name in (reversed(stmt.names) if stmt.inverse else stmt.names):
            zero = _zero_of(t.scalar)
            if stmt.inverse:
                var = self.scope.pop(name)
                out.append(ir.Dealloc(var, zero, self.site("dealloc", stmt.span,
                                                          (name, t.scalar))))
            else:
                var = ir.Var(name, t.scalar)
                self.scope[name] = var
                out.append(ir.Alloc(var, zero))
        return out

    def _block(self, stmt: ast.Block) -> list:
        if stmt.inverse:
            return list(self.oriented_body(invert_body(stmt.body), not self.running_backward(),
                                           "`~begin … end`", stmt.span))
        return list(self.body(stmt.body))

    def _annotated(self, stmt: ast.Annotated) -> list:
        saved = self.checks, self.inbounds
        if stmt.annotation == "invcheckoff":
            self.checks = False
        else:
            self.inbounds = True
        try:
            return list(self.body((stmt.stmt,)))
        finally:
            self.checks, self.inbounds = saved

    def _safe(self, stmt: ast.Safe) -> list:
        if self.lowering.unit.dialect == "janus":
            return lower_janus_safe(self, stmt)
        if stmt.func == "assert":
            cond = self.cond(stmt.args[0])
            message = None
            if len(stmt.args) == 2:
                if not isinstance(stmt.args[1], ast.StrLit):
                    raise BackendUnsupported("assert messages must be strings in compiled "
                                             "code", stmt.args[1].span)
                message = stmt.args[1].value
            detail = (_text(stmt.args[0]), message)
            return [ir.Assert(cond, self.error_site("assert", stmt.span, detail))]
        args = []
        for arg in stmt.args:
            if isinstance(arg, ast.StrLit):
                args.append((arg.value, None))
            else:
                lowered = self.expr(arg)
                if isinstance(lowered.type, ir.ArrayType) and not isinstance(lowered, ir.Read):
                    raise BackendUnsupported("compiled print/show take arrays by name",
                                             arg.span)
                args.append((_text(arg), complex_value(lowered)))
        shape = tuple((text, None if value is None else value.type) for text, value in args)
        site = self.module.add_site(ir.Site("print", stmt.span, self.fn.name, self.inverse,
                                            (stmt.func, shape)))
        return [ir.Print(stmt.func, tuple(args), site)]

    # ----------------------------------------------------------- control flow
    def _if(self, stmt: ast.If) -> list:
        branches = []
        for k, branch in enumerate(stmt.branches):
            pre = self.cond(branch.pre)
            body = self.scoped_body(branch.body)
            post = self.cond(branch.post if branch.post is not None else branch.pre) \
                if self.checks else None
            branches.append(ir.Branch(pre, post, body))
        orelse = self.scoped_body(stmt.orelse or ())
        posts = tuple(((b.post is None), _text(b.pre if b.post is None else b.post))
                      for b in stmt.branches)
        site = None
        for k, b in enumerate(stmt.branches):     # one site per branch, consecutive
            post = b.pre if b.post is None else b.post
            branch_site = self.site("if", post.span, (k, posts))
            site = branch_site if k == 0 else site
        return [ir.If(tuple(branches), orelse, site)]

    def _while(self, stmt: ast.While) -> list:
        return [ir.While(self.cond(stmt.pre), self.cond(stmt.post),
                         self.scoped_body(stmt.body),
                         self.site("while", stmt.post.span, (_text(stmt.post),)))]

    def _from(self, stmt: ast.From) -> list:
        return [ir.From(self.cond(stmt.start), self.scoped_body(stmt.body),
                        self.scoped_body(stmt.step), self.cond(stmt.stop),
                        self.site("from", stmt.start.span, (_text(stmt.start),)))]

    def _for(self, stmt: ast.For) -> list:
        start, step, stop = (convert(self.int_expr(e), "i64")
                             for e in (stmt.start, stmt.step, stmt.stop))
        texts = tuple(_text(e) for e in (stmt.start, stmt.step, stmt.stop))
        step_site = self.error_site("for_zero_step", stmt.step.span)
        site = self.site("for", stmt.span, (stmt.var,))
        if site is not None:
            for k, expr in enumerate((stmt.start, stmt.step, stmt.stop)):
                self.error_site("for_bound", expr.span, (k, texts[k]))
        loop = self.parallel.enter(site, stmt.var, stmt.span, self.scope) \
            if stmt.parallel and site is not None else None
        var = ir.Var(stmt.var, "i64")
        outer = self.scope.get(stmt.var)
        self.scope[stmt.var] = var
        try:
            body = self.scoped_body(stmt.body)
        finally:
            if outer is None:
                del self.scope[stmt.var]
            else:
                self.scope[stmt.var] = outer
            if loop is not None:
                self.parallel.leave(loop)
        original = inverted_range(stmt.start, stmt.step, stmt.stop)
        reverse_of = None if original is None else \
            tuple(convert(self.int_expr(e), "i64") for e in original)
        return [ir.For(var, start, step, stop, body, site, step_site, stmt.parallel,
                       reverse_of)]

    def scoped_body(self, stmts) -> tuple:
        saved = dict(self.scope)
        try:
            return self.body(stmts)
        finally:
            self.scope = saved

    def const_array(self, node: ast.ArrayLit) -> ir.ConstArray:
        """An array literal whose elements are constants, evaluated now."""
        evaluator = Evaluator(dict(self.lowering.consts))
        try:
            array = evaluator.eval(node, {})
        except Exception:
            raise BackendUnsupported("array literals with variable elements in compiled "
                                     "code", node.span) from None
        elem = type_of_value(array).elem
        return ir.ConstArray(tuple(array.ravel().tolist()), array.shape, elem)

    # ------------------------------------------------------------------ calls
    def _callstmt(self, stmt: ast.CallStmt) -> list:
        before, args, after, types = self.call_arguments(stmt.func, stmt.args)
        symbol = self.lowering.specialise(stmt.func, tuple(types), stmt.inverse)
        written = self.lowering.written(stmt.func)
        alias = None
        if self.checks and any(i in written for i in range(len(args))):
            alias = self.site("call_alias", stmt.span, (
                stmt.func, tuple(sorted(written)),
                tuple(p.name for p in self.lowering.unit.functions[stmt.func].params),
                tuple(_text(a) for a in stmt.args)))
        call = ir.Call(symbol, tuple(args), self.call_site(
            stmt.span, (stmt.func, stmt.inverse)), alias)
        return before + [call] + after

    def _derivative(self, stmt: ast.Derivative) -> list:
        from .derivatives import lower_derivative

        return lower_derivative(self, stmt)

    def call_arguments(self, func: str, arguments: tuple) -> tuple:
        """(statements before, places, statements after, types) of the arguments of
        a call of `func`: views as places, other expressions in temporaries."""
        callee = self.lowering.unit.functions[func]
        stmt = ast.CallStmt(func, arguments)
        before, args, after, types = [], [], [], []
        for k, arg in enumerate(stmt.args):
            root = ast.view_root(arg)
            if root is not None and root.id in self.scope and ast.is_view(arg):
                place = self.place(arg)
                args.append(place)
                types.append(place.type)
                continue
            passed = array_argument(self, arg, k, callee, stmt.func)
            if passed is not None:
                before += passed[0]
                args.append(passed[1])
                types.append(passed[1].type)
                after += passed[2]
                continue
            value = self.expr(arg)
            if not isinstance(value.type, str):
                raise BackendUnsupported("array expressions as call arguments", arg.span)
            temp = ir.Var(f"{callee.params[k].name}·arg", value.type)
            value = complex_value(value)
            before.append(ir.Alloc(temp, value))
            args.append(ir.VarPlace(temp))
            types.append(value.type)
            after.append(ir.Dealloc(temp, value, self.site(
                "argument", arg.span, (stmt.func, k, callee.params[k].name, value.type))))
        return before, args, after, types

    # ----------------------------------------------------------------- views
    def place(self, view):
        if isinstance(view, ast.Field):
            base = self.place(view.base)
            if base.type != "complex" or view.name not in ("re", "im") or \
                    getattr(base, "field", None) is not None:
                raise RlangTypeError(f"`.{view.name}` needs a complex value, got "
                                     f"{ir.type_text(base.type)}", view.span)
            return part_place(base, 0 if view.name == "re" else 1)
        if isinstance(view, ast.Name):
            var = self.scope.get(view.id)
            if var is None:
                raise RlangTypeError(f"`{view.id}` cannot be updated here", view.span)
            return ir.VarPlace(var)
        if isinstance(view, ast.Index):
            var = self.array_var(view)
            return ir.ElemPlace(var, self.indices(view, var), self.bounds_site(view),
                                claims=self.parallel.claims(self, view, var))
        raise BackendUnsupported("the compiled backends do not handle this view yet",
                                 getattr(view, "span", None))

    def array_var(self, view: ast.Index) -> ir.Var:
        var = self.lookup_array(view.base.id) if isinstance(view.base, ast.Name) else None
        if var is None:
            raise BackendUnsupported("indexing something other than an array variable",
                                     view.span)
        if not isinstance(var.type, ir.ArrayType):
            raise RlangTypeError(f"cannot index {ir.type_text(var.type)}", view.base.span)
        return var

    def lookup_array(self, name: str) -> ir.Var | None:
        """The variable of `name`: a local, or a constant array (read only)."""
        if name in self.scope:
            return self.scope[name]
        value = self.lowering.consts.get(name)
        if not isinstance(value, np.ndarray):
            return None
        var = self.constants.get(name)
        if var is None:
            elem = type_of_value(value).elem
            var = ir.Var(name, ir.ArrayType(elem, value.ndim, unit_stride=True))
            self.constants[name] = var
            self.constant_values[var] = ir.ConstArray(tuple(value.ravel().tolist()),
                                                      value.shape, elem)
        return var

    def indices(self, view: ast.Index, var: ir.Var) -> tuple:
        if len(view.indices) != var.type.ndim:
            raise RlangTypeError(f"{var.type} needs {var.type.ndim} "
                                 f"ind{'ex' if var.type.ndim == 1 else 'ices'}, got "
                                 f"{len(view.indices)}", view.span)
        return tuple(self.index(i) for i in view.indices)

    def index(self, expr):
        return convert(self.int_expr(expr), "i64")

    def bounds_site(self, view: ast.Index):
        """The bounds check of `view`: the site of index k is the returned id + k.
        Only `@inbounds` turns it off (Note [Checks invcheck does not turn off])."""
        if self.inbounds:
            return None
        first = None
        for index in view.indices:
            site = self.error_site("bounds", index.span)
            first = site if first is None else first
        return first

    def int_expr(self, expr):
        value = self.bound(lambda: self.expr(expr))
        if value.type not in ("i32", "i64"):
            raise RlangTypeError(f"an index or range bound must be an integer, got "
                                 f"{ir.type_text(value.type)}", expr.span)
        return value

    def cond(self, expr):
        value = self.bound(lambda: self.expr(expr))
        if value.type != "bool":
            raise RlangTypeError(f"a condition must be a bool, got {ir.type_text(value.type)}; "
                                 "compare explicitly, e.g. `x != 0`", expr.span)
        return value

    # ------------------------------------------------------------ expressions
    def expr(self, node, literal_type: str | None = None):
        """The IR of an expression; a number literal takes `literal_type` if given."""
        return lower_expr(self, node, literal_type)


def _declared_type(param: ast.Param):
    if param.type is None:
        return None
    t = param.type
    if t.is_stack:
        return ir.StackType(t.scalar)
    return ir.ArrayType(t.scalar, t.ndim) if t.ndim else t.scalar


#: The AST statement classes the lowering handles, and its method for each (`@routine`
#: and `~@routine` are expanded by `body`, which pairs them).  Others are refused
#: with BackendUnsupported.
LOWERINGS: dict[type, str] = {
    ast.Update: "_update", ast.Instr: "_instr", ast.Alloc: "_alloc",
    ast.Dealloc: "_dealloc", ast.Zeros: "_zeros", ast.CallStmt: "_callstmt",
    ast.Derivative: "_derivative",
    ast.Block: "_block", ast.If: "_if", ast.While: "_while", ast.From: "_from",
    ast.For: "_for", ast.Annotated: "_annotated", ast.Safe: "_safe",
}

#: Statements that evaluate their expressions once, before they act: temporaries
#: can be made around them (`hoist`).
_HOISTING = (ast.Update, ast.Alloc, ast.Dealloc, ast.Instr, ast.CallStmt, ast.Derivative)

_ZERO = {"bool": False, "i32": 0, "i64": 0, "f32": 0.0, "f64": 0.0}


def _zero_of(t: str):
    if t == "complex":
        return ir.ComplexValue(ir.Const(0.0, "f64"), ir.Const(0.0, "f64"))
    return zero_or_one(t, False) if t in SYSTEMS else ir.Const(_ZERO[t], t)


def complex_value(value):
    """A lowered value as an IR value: a complex Pair becomes a ComplexValue."""
    return ir.ComplexValue(value.re, value.im) if isinstance(value, Pair) else value


def _text(node) -> str:
    from ..frontend.printer import format_expr

    return format_expr(node)
