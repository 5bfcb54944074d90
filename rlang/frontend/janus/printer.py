"""rev's AST of a Janus unit → Janus source, laid out as jana prints programs.

`format_janus_program(program)` prints every procedure, then `main` (jana's order),
reading back the shapes of Note [Janus in rev's AST]: `x ← e … x → f` in one body is
`local … delocal`, main's allocations that are never freed are its declarations,
`length(s) == 0` is `empty(s)`, and so on.  Used by `rlang invert prog.ja` (jana's
`-i`); parsing the output gives the same AST again.  Unlike jana's printer it
parenthesises a right operand of the same precedence (`a - (b - c)`), so that the
text reads back as the tree it came from.
"""
from __future__ import annotations

from .. import ast

#: Janus operators and their precedence (tighter is higher), as jana's parser has them.
_PRECEDENCE = {"*": 4, "//": 4, "%": 4, "+": 3, "-": 3, "<=": 2, "<": 2, ">=": 2, ">": 2,
               "==": 2, "!=": 2, "&": 1, "|": 1, "^": 1, "&&": 0, "||": 0}
_SPELLING = {"==": "=", "//": "/"}
_INDENT = "    "


def format_janus_program(program: ast.Program) -> str:
    functions = [item for item in program.items if isinstance(item, ast.Function)]
    procs = [f for f in functions if f.name != "main"]
    mains = [f for f in functions if f.name == "main"]
    blocks = ["\n".join(_procedure(f)) for f in procs]
    text = "\n\n".join(blocks)
    for main in mains:
        text += ("\n\n" if text else "") + "\n".join(_main(main))
    return text + "\n"


def _procedure(fn: ast.Function) -> list:
    params = ", ".join(_param(p) for p in fn.params)
    return [f"procedure {fn.name}({params})", *_indent(_statements(fn.body, _stacks(fn)))]


def _stacks(fn: ast.Function) -> frozenset:
    """The names of `fn`'s stacks: `s[length(s) - 1]` is `top(s)` for them alone (an
    array's last element is written the same way)."""
    names = {p.name for p in fn.params if p.type is not None and p.type.is_stack}
    pending = list(fn.body)
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, ast.Alloc) and _local_type(stmt.value) == "stack":
            names.add(stmt.name)
        elif isinstance(stmt, ast.If):
            pending.extend(stmt.branches[0].body + (stmt.orelse or ()))
        elif isinstance(stmt, ast.From):
            pending.extend(stmt.body + stmt.step)
    return frozenset(names)


def _param(param: ast.Param) -> str:
    t = param.type
    if t is not None and t.is_stack:
        return f"stack {param.name}"
    if t is not None and t.ndim:
        return f"int {param.name}[]"
    return f"int {param.name}"


def _main(fn: ast.Function) -> list:
    body = list(fn.body)
    decls = []
    while body and isinstance(body[0], ast.Alloc) and _dealloc_of(body, 0) is None:
        decls.append(_declaration(body.pop(0)))
    return ["procedure main()", *_indent(decls + [""] + _statements(tuple(body), _stacks(fn)))]


def _declaration(alloc: ast.Alloc) -> str:
    value = alloc.value
    if isinstance(value, ast.Call) and value.func == "stack":
        return f"stack {alloc.name}"
    if isinstance(value, ast.Call) and value.func == "zeros":
        return f"int {alloc.name}[{_expr(value.args[1], frozenset())}]"
    return f"int {alloc.name}"


def _indent(lines: list) -> list:
    return [_INDENT + line if line else "" for line in lines]


def _dealloc_of(body, i: int):
    """The index of the deallocation closing the allocation body[i], or None."""
    name = body[i].name
    for j in range(i + 1, len(body)):
        if isinstance(body[j], ast.Dealloc) and body[j].name == name:
            return j
    return None


def _statements(body: tuple, stacks: frozenset) -> list:
    lines, i = [], 0
    while i < len(body):
        stmt = body[i]
        j = _dealloc_of(body, i) if isinstance(stmt, ast.Alloc) else None
        if j is not None:
            kind = _local_type(stmt.value)
            lines.append(f"local {kind} {stmt.name} = {_expr(stmt.value, stacks)}")
            lines.extend(_statements(body[i + 1:j], stacks))
            lines.append(f"delocal {kind} {stmt.name} = {_expr(body[j].value, stacks)}")
            i = j + 1
            continue
        lines.extend(_statement(stmt, stacks))
        i += 1
    return lines


def _local_type(value) -> str:
    return "stack" if isinstance(value, ast.Call) and value.func == "stack" else "int"


def _statement(stmt, stacks: frozenset) -> list:
    def expr(node) -> str:
        return _expr(node, stacks)

    def statements(body) -> list:
        return _indent(_statements(body, stacks))

    match stmt:
        case ast.Update(target=target, op=op, value=value):
            return [f"{expr(target)} {op} {expr(value)}"]
        case ast.If(branches=(branch,), orelse=orelse):
            lines = [f"if {expr(branch.pre)} then", *statements(branch.body)]
            if orelse:
                lines += ["else", *statements(orelse)]
            return lines + [f"fi {expr(branch.post)}"]
        case ast.From(start=start, body=body, step=step, stop=stop):
            return _from(start, body, step, stop, stacks)
        case ast.Instr(name="SWAP", args=(a, b)):
            return [f"{expr(a)} <=> {expr(b)}"]
        case ast.Instr(name=name, args=(s, x)):
            return [f"{name.lower()}({expr(x)}, {expr(s)})"]
        case ast.CallStmt(func=func, args=args, inverse=inverse):
            word = "uncall" if inverse else "call"
            return [f"{word} {func}({', '.join(expr(a) for a in args)})"]
        case ast.Block(body=()):
            return ["skip"]
        case ast.Safe(func="assert", args=(_, message)):
            return [f"error({_string(message.value)})"]
        case ast.Safe(func="print", args=(fmt,)):
            return [f"print({_string(fmt.value)})"]
        case ast.Safe(func="print", args=(fmt, *args)):
            return [f"printf({_string(fmt.value)}, {', '.join(expr(a) for a in args)})"]
        case ast.Safe(func="show", args=args):
            return [f"show({', '.join(expr(a) for a in args)})"]
    raise ValueError(f"{type(stmt).__name__} is not a Janus statement")


def _from(start, body, step, stop, stacks: frozenset) -> list:
    lines = [f"from {_expr(start, stacks)}" + (" do" if body else " loop" if step else "")]
    lines += _indent(_statements(body, stacks))
    if body and step:
        lines.append("loop")
    lines += _indent(_statements(step, stacks))
    return lines + [f"until {_expr(stop, stacks)}"]


def _string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") \
        .replace("\t", "\\t")
    return f"\"{escaped}\""


def _expr(expr, stacks: frozenset, outer: int = -1, right: bool = False) -> str:
    match expr:
        case ast.IntLit(value=value):
            return str(value)
        case ast.BoolLit(value=value):
            return "true" if value else "false"
        case ast.Name(id=name):
            return name
        case ast.Call(func="i32", args=(inner,)):
            return _expr(inner, stacks, outer, right)
        case ast.Call(func="stack"):
            return "nil"
        case ast.Call(func="length", args=(name,)):
            return f"size({_expr(name, stacks)})"
        case ast.Binary(op="==", left=ast.Call(func="length", args=(name,)),
                        right=ast.IntLit(value=0)):
            return f"empty({_expr(name, stacks)})"
        case ast.Index(base=base, indices=(ast.Binary(
                op="-", left=ast.Call(func="length", args=(inner,)),
                right=ast.IntLit(value=1)),)) if inner == base and base.id in stacks:
            return f"top({_expr(base, stacks)})"
        case ast.Index(base=base, indices=(index,)):
            return f"{_expr(base, stacks)}[{_expr(index, stacks)}]"
        case ast.Unary(op="!", operand=operand):
            return "!" + _expr(operand, stacks, 5)
        case ast.Binary(op=op, left=left, right=right_operand):
            level = _PRECEDENCE[op]
            text = f"{_expr(left, stacks, level)} {_SPELLING.get(op, op)} " \
                   f"{_expr(right_operand, stacks, level, True)}"
            return f"({text})" if level < outer or level == outer and right else text
    raise ValueError(f"{type(expr).__name__} is not a Janus expression")
