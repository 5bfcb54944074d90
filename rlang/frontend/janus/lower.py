"""A Janus parse tree (`JProgram`) → rev's AST, in a `Unit` every consumer takes.

`lower_janus(program, text, modular)` returns a `Unit` whose functions are the Janus
procedures written in rev's AST (Note [Janus in rev's AST]), with `dialect="janus"`
and `integers` saying how the interpreter treats i64 overflow (Note [Janus
integers]).  The static errors jana reports (a missing or second `main`, a procedure
defined twice, an undeclared variable, a call of an undefined procedure or of `main`,
a wrong argument count, a `delocal` that does not match its `local`, …) are raised
here as one `CheckErrors`, worded as jana words them, at the position jana reports.
"""
from __future__ import annotations

import re

from lark import Token, Tree

from .. import ast
from ...errors import CheckError, CheckErrors, ParseError
from ...span import Span, file_span
from ..unit import Unit
from .parser import JDecl, JProc, JProgram, int_value, token_span, tree_span
from .types import expect, lookup_type, mismatch, var_type

# Note [Janus in rev's AST]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Janus is rev with other spellings, so a Janus program becomes an ordinary rev AST and
# the one checker, inverter, interpreter and backends serve it:
#   procedure p(int x, int a[], stack s)   function p(x: i64, a: i64[:], s: stack{i64})
#   main's `int x` / `int a[n]` / `stack s` x ← 0 / a ← zeros(i64, n) / s ← stack(i64),
#                                          never deallocated: main's store
#   local int x = e  S  delocal int x = f  x ← e; S; x → f   (flat, in the same body)
#   call p(…) / uncall p(…)                p(…) / ~p(…)
#   if e1 then A else B fi e2              if (e1, e2) A else B end
#   from e1 do A loop B until e2           the same From node
#   push(x, s) / pop(x, s) / x <=> y       PUSH(s, x) / POP(s, x) / SWAP(x, y)
#   skip                                   an empty `begin end` block
#   print("…") / printf("…", x…) / show(x…) @safe print("…", x…) / @safe show(x…)
#   error("m")                             @safe assert(false, "m")
#   a = b, a / b                           a == b, a // b (jana's `div` floors)
#   empty(s), size(x), top(s)              length(s) == 0, length(x), s[length(s) - 1]
#   nil                                    stack(i64)
# The Janus printer (janus/printer.py) reads these shapes back, so `rlang invert` prints
# Janus and inverting twice gives the same AST.  Under --modular every i64 above is
# i32 and every literal is taken modulo 2^32 (jana's -m reduces each expression's value
# so); the interpreter then wraps as i32 arithmetic does.

# Note [Janus integers]
# ~~~~~~~~~~~~~~~~~~~~~
# jana's integers are unbounded.  A Janus int is rev's i64 in the AST, and the unit
# says `integers == "unbounded"`: the interpreter then lets an integer result leave
# i64 and keeps it exact (a Python int; values.UNBOUNDED_INTEGERS, read only once a
# result is out of range, so rev's arithmetic pays nothing), in variables and
# stacks; an array element stays an i64, and storing a larger value in one is an
# error.  Compiled code cannot follow: it computes in i64 and checks every `+ - *`
# and `+= -=` for overflow (lower/expressions.py, lower/updates.py), reporting an
# error where the interpreter would go on -- never a wrapped, wrong answer.  Every
# Janus program we know stays within i64 and gets jana's results on both.  With
# --modular (`integers == "wrap"`) Janus ints are rev i32 values, which wrap as
# jana -m's do.

_OPS = {"=": "==", "/": "//"}


class _Lowering:
    """One program's lowering: the procedures by name (for the checks of calls), the
    Janus int's rev type, and the static errors found so far."""

    def __init__(self, program: JProgram, modular: bool):
        self.file = program.file
        self.int_type = "i32" if modular else "i64"
        self.modular = modular
        self.errors: list[CheckError] = []
        self.procs: dict[str, JProc] = {}

    # ------------------------------------------------------------ helpers
    def fail(self, message: str, span: Span) -> None:
        self.errors.append(CheckError(message, span))

    def span(self, node) -> Span:
        return tree_span(self.file, node)

    def type_ref(self, kind: str, span: Span | None = None) -> ast.TypeRef:
        span = span or Span(self.file, 0, 0, 0, 0)
        return ast.TypeRef(self.int_type, ndim=1 if kind == "array" else 0,
                           is_stack=kind == "stack", span=span)

    def type_expr(self, span: Span) -> ast.TypeExpr:
        return ast.TypeExpr(self.type_ref("int", span), span=span)

    def as_int(self, expr, span: Span):
        """`expr` as a Janus int of this unit (an i32 conversion under --modular)."""
        if not self.modular:
            return expr
        return ast.Call("i32", (expr,), span=span)

    # ------------------------------------------------------------ program
    def program(self, program: JProgram) -> list:
        mains = [p for p in program.procs if p.name == "main"]
        for proc in program.procs:
            if proc.name == "main":
                continue
            if proc.name in self.procs:
                self.fail(f"Procedure `{proc.name}' is already defined", proc.span)
                continue
            names = [d.name for d in proc.params]
            if len(set(names)) != len(names):
                self.fail(f"Procedure `{proc.name}' has duplicate arguments", proc.span)
            for decl in proc.decls:
                raise ParseError(f"Unexpected declaration of `{decl.name}'; expecting "
                                 "statement (only main declares variables)", decl.span)
            self.procs[proc.name] = proc
        if not mains:
            self.fail("No main procedure has been defined", file_span(self.file))
        elif len(mains) > 1:
            self.fail("Multiple main procedures has been defined", file_span(self.file))
        items = []
        for proc in program.procs:
            if proc.name == "main":
                if proc is mains[0]:
                    items.append(self.main(proc))
            elif self.procs.get(proc.name) is proc:
                items.append(self.procedure(proc))
        return items

    def main(self, proc: JProc) -> ast.Function:
        if proc.params:
            raise ParseError(f"Unexpected parameter `{proc.params[0].name}'; expecting \")\" "
                             "(main takes no parameters)", proc.params[0].span)
        scope: dict = {}
        body = []
        for decl in proc.decls:
            if decl.name in scope:
                self.fail(f"Variable name `{decl.name}' is already bound", decl.span)
                continue
            scope[decl.name] = decl
            body.append(self.declaration(decl))
        body.extend(self.statements(proc.body, scope))
        return ast.Function("main", (), tuple(body), span=proc.span)

    def declaration(self, decl: JDecl) -> ast.Alloc:
        span = decl.span
        if decl.kind == "int":
            value = self.as_int(ast.IntLit(0, span=span), span)
        elif decl.kind == "stack":
            value = ast.Call("stack", (self.type_expr(span),), span=span)
        else:
            if decl.size is None:
                self.fail(f"Array size missing for variable `{decl.name}'", span)
            elif decl.size < 1:
                self.fail("Array size must be greater than or equal to one", span)
            value = ast.Call("zeros", (self.type_expr(span), ast.IntLit(decl.size or 1, span=span)),
                             span=span)
        return ast.Alloc(decl.name, value, span=span)

    def procedure(self, proc: JProc) -> ast.Function:
        params = tuple(ast.Param(d.name, self.type_ref(d.kind, d.span), span=d.span)
                       for d in proc.params)
        body = self.statements(proc.body, {d.name: d for d in proc.params})
        return ast.Function(proc.name, params, tuple(body), span=proc.span)

    # ------------------------------------------------------------ statements
    def expect(self, node, wanted: str, scope: dict) -> None:
        expect(node, wanted, scope, self.fail, self.file)

    def statements(self, nodes, scope: dict) -> list:
        out = []
        for node in nodes:
            out.extend(self.statement(node, scope))
        return out

    def body(self, node, scope: dict) -> tuple:
        return () if node is None else tuple(self.statements(node.children, scope))

    def statement(self, node: Tree, scope: dict) -> list:
        kind, ch, span = node.data, node.children, self.span(node)
        if kind == "assign":
            target, op, value = ch
            self.check_target(target, value, scope)
            self.expect(value, "int", scope)
            return [ast.Update(self.expr(target, scope), str(op), self.expr(value, scope),
                               span=span)]
        if kind == "if_stmt":
            pre, then, orelse, post = ch
            self.expect(pre, "bool", scope)
            self.expect(post, "bool", scope)
            branch = ast.IfBranch(self.expr(pre, scope), self.expr(post, scope),
                                  self.body(then, scope), span=span)
            return [ast.If((branch,), None if orelse is None else self.body(orelse, scope),
                           span=span)]
        if kind == "from_stmt":
            start, _, do, _, loop, stop = ch
            self.expect(start, "bool", scope)
            self.expect(stop, "bool", scope)
            return [ast.From(self.expr(start, scope), self.body(do, scope),
                             self.body(loop, scope), self.expr(stop, scope), span=span)]
        if kind in ("push", "pop", "swap"):
            first, second = (self.name(t, scope) for t in ch)
            self.check_operands(kind, ch, scope, span)
            if kind == "swap":
                return [ast.Instr("SWAP", (first, second), span=span)]
            return [ast.Instr(kind.upper(), (second, first), span=span)]
        if kind == "local":
            return self.local(ch, scope, span)
        if kind in ("call", "uncall"):
            return [self.call(ch[0], [t for t in ch[1:] if t is not None], kind == "uncall",
                              scope, span)]
        if kind == "error":
            return [ast.Safe("assert", (ast.BoolLit(False, span=span),
                                        self.string(ch[0])), span=span)]
        if kind in ("print", "printf"):
            args = [self.name(t, scope) for t in ch[1:]]
            return [ast.Safe("print", (self.string(ch[0]), *args), span=span)]
        if kind == "show":
            return [ast.Safe("show", tuple(self.name(t, scope) for t in ch), span=span)]
        return [ast.Block((), span=span)]                    # skip

    def local(self, ch, scope: dict, span: Span) -> list:
        type1, name1, value1, body, type2, name2, value2 = ch
        where = token_span(self.file, name2)
        if str(name1) != str(name2):
            self.fail(f"Variable names does not match in local declaration: `{name1}' in "
                      f"`local', `{name2}' in `delocal'; `delocal' statements must come in "
                      f"reverse order of the `local' statments", where)
        elif str(type1) != str(type2):
            self.fail(f"Type of variable `{name1}' does not match local declaration: "
                      f"`{type1}' in `local', `{type2}' in `delocal'", where)
        name = str(name1)
        first = self.expr(value1, scope)
        self.expect(value1, str(type1), scope)
        if name in scope:
            self.fail(f"Variable name `{name}' is already bound", token_span(self.file, name1))
        inner = scope | {name: JDecl(str(type1), name, None, token_span(self.file, name1))}
        self.expect(value2, str(type1), inner)
        statements = self.statements(body.children, inner)
        last = self.expr(value2, inner)
        if str(type1) == "int":
            first = self.as_int(first, first.span)
            last = self.as_int(last, last.span)
        return [ast.Alloc(name, first, span=token_span(self.file, name1)), *statements,
                ast.Dealloc(name, last, span=where)]

    def call(self, name: Token, args: list, inverse: bool, scope: dict, span: Span):
        callee = str(name)
        where = token_span(self.file, name)
        arguments = tuple(self.name(t, scope) for t in args)
        if callee == "main":
            self.fail("It is not allowed to call the `main' procedure", where)
        elif callee not in self.procs:
            self.fail(f"Procedure `{callee}' is not defined", where)
        elif len(self.procs[callee].params) != len(args):
            proc = self.procs[callee]
            self.fail(f"Procedure `{callee}' expects {len(proc.params)} argument(s) but got "
                      f"{len(args)}", proc.span)
        else:
            for param, arg in zip(self.procs[callee].params, args):
                self.check_argument(param, scope.get(str(arg)))
        return ast.CallStmt(callee, arguments, inverse, span=span)

    def check_target(self, target: Tree, value: Tree, scope: dict) -> None:
        """The target of `+=`, `-=`, `^=` is an int variable or an array element."""
        if target.data == "lookup":
            lookup_type(target, scope, self.fail, self.file)
            return
        actual = var_type(target.children[0], scope)
        if actual is not None and actual != "int":
            self.fail(mismatch(["int"], actual), self.span(value))

    def check_operands(self, kind: str, names: list, scope: dict, span: Span) -> None:
        """push(x, s) and pop(x, s) take an int and a stack; `<=>` two of one type."""
        first, second = (var_type(t, scope) for t in names)
        if first is None or second is None:
            return
        if kind == "swap":
            if first != second:
                self.fail(f"Can't swap variables of type `{first}' and `{second}'", span)
        elif first != "int":
            self.fail(mismatch(["int"], first), span)
        elif second != "stack":
            self.fail(mismatch(["stack"], second), span)

    def check_argument(self, param: JDecl, arg: JDecl | None) -> None:
        """An argument has its parameter's type (and an array its declared size)."""
        if arg is None:
            return
        if arg.kind != param.kind:
            self.fail(mismatch([param.kind], arg.kind), param.span)
        elif param.size is not None and arg.size is not None and param.size != arg.size:
            self.fail(f"Expecting array of size {param.size} but got size {arg.size}",
                      param.span)

    # ------------------------------------------------------------ expressions
    def name(self, token: Token, scope: dict) -> ast.Name:
        span = token_span(self.file, token)
        if str(token) not in scope:
            self.fail(f"Variable `{token}' has not been declared", span)
        return ast.Name(str(token), span=span)

    def string(self, token: Token) -> ast.StrLit:
        return ast.StrLit(_unquote(str(token)), span=token_span(self.file, token))

    def length(self, token: Token, scope: dict, span: Span) -> ast.Call:
        return ast.Call("length", (self.name(token, scope),), span=span)

    def expr(self, node, scope: dict):
        span = self.span(node)
        kind = node.data
        ch = node.children
        if kind == "binary":
            left, op, right = ch
            return ast.Binary(_OPS.get(str(op), str(op)), self.expr(left, scope),
                              self.expr(right, scope), span=span)
        if kind == "not_":
            return ast.Unary("!", self.expr(ch[0], scope), span=span)
        if kind == "number":
            sign, digits = ch
            value = int_value(str(digits)) * (-1 if sign is not None and str(sign) == "-" else 1)
            if self.modular:
                value = ((value + (1 << 31)) % (1 << 32)) - (1 << 31)
            return ast.IntLit(value, span=span)
        if kind in ("true", "false"):
            return ast.BoolLit(kind == "true", span=span)
        if kind == "var":
            return self.name(ch[0], scope)
        if kind == "lookup":
            return ast.Index(self.name(ch[0], scope), (self.expr(ch[1], scope),), span=span)
        if kind == "empty":
            return ast.Binary("==", self.length(ch[0], scope, span), ast.IntLit(0, span=span),
                              span=span)
        if kind == "size":
            return self.length(ch[0], scope, span)
        if kind == "top":
            last = ast.Binary("-", self.length(ch[0], scope, span), ast.IntLit(1, span=span),
                              span=span)
            return ast.Index(self.name(ch[0], scope), (last,), span=span)
        return ast.Call("stack", (self.type_expr(span),), span=span)      # nil


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _unquote(text: str) -> str:
    """The value of a string literal: a backslash before n, t, r or 0 is that control
    character (as in Haskell); before any other character, that character."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), text[1:-1], flags=re.S)


def lower_janus(program: JProgram, text: str, modular: bool = False) -> Unit:
    """The unit of a parsed Janus program (CheckErrors with jana's wording if jana
    would refuse it before running)."""
    lowering = _Lowering(program, modular)
    items = lowering.program(program)
    if lowering.errors:
        raise CheckErrors(sorted(lowering.errors, key=lambda e: (e.span.line, e.span.col)))
    prog = ast.Program(tuple(items), span=file_span(program.file))
    unit = Unit(program=prog, file=program.file, sources=[(program.file, text)],
                dialect="janus", integers="wrap" if modular else "unbounded")
    for item in items:
        unit.functions[item.name] = item
    return unit
