"""The `:` commands of the REPL (LANGUAGE.md §12).

In: a `reader.Command` (name and the rest of the line) and the `Session`.  Out: text
written to the session's output; an `RlangError` for a bad use (the session renders
it); `run_command` returns False for `:quit`.  A command may be shortened to any
prefix that names only it (`:q`, `:inv`).

Each command reuses the piece of rlang that the command line uses for the same job:
`:inverse` the inverter and the printer (`rlang invert`), `:grad` `rlang.gradient`
and the rows of `rlang grad`, `:llvm` the llvm backend's ahead-of-time lowering
(`rlang compile --emit llvm`), `:load` the loader and the checker.
"""
from __future__ import annotations

import difflib
import re

from ..frontend import ast
from ..errors import RlangError
from ..frontend.invert import invert_program
from ..frontend.loader import load_unit
from ..frontend.printer import format_body, format_function, format_program
from ..values import format_value, type_name
from .reader import Statements, read
from .toplevel import callees


def run_command(session, command, file: str) -> bool:
    """Run `:name argument`; False when the session should end."""
    name = _resolve(command.name)
    if name == "quit":
        return False
    handler, _, _ = COMMANDS[name]
    handler(session, command.argument, file)
    return True


def _resolve(name: str) -> str:
    if name in COMMANDS:
        return name
    matches = [full for full in COMMANDS if full.startswith(name)] if name else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise RlangError(f"`:{name}` is ambiguous: it could be "
                         + ", ".join(f":{m}" for m in matches))
    raise RlangError(f"unknown command `:{name}`; :help lists the commands")


def _usage(name: str) -> RlangError:
    return RlangError(f"usage: {COMMANDS[name][1]}")


def _function(session, name: str, command: str) -> ast.Function:
    if not name:
        raise _usage(command)
    fn = session.functions.get(name)
    if fn is None:
        close = difflib.get_close_matches(name, list(session.functions), n=1)
        hint = f"; did you mean `{close[0]}`?" if close else \
            "" if session.functions else "; define one with `function … end` or :load a file"
        raise RlangError(f"no function named `{name}`{hint}")
    return fn


# ---------------------------------------------------------------- the commands

def _help(session, argument: str, file: str) -> None:
    width = max(len(usage) for _, usage, _ in COMMANDS.values())
    lines = ["Statements run on the session variables: `x ← 2.0` allocates one, `x += 1.5`",
             "updates it, a bare expression prints its value, `function … end` defines a",
             "function and `f(x, y)` / `~f(x, y)` runs it (or its inverse) on the variables.",
             "An unfinished input continues on the next line; Ctrl-C abandons it, or",
             "interrupts a running statement.  Commands:", ""]
    lines += [f"  {usage:<{width}}  {text}" for _, usage, text in COMMANDS.values()]
    session.write("\n".join(lines))


def _load(session, argument: str, file: str) -> None:
    if not argument:
        raise _usage("load")
    path = argument.strip().strip('"')
    names = session.define(load_unit(path))
    session.write(f"loaded {path}: " + (", ".join(names) if names else "nothing to define"))


def _vars(session, argument: str, file: str) -> None:
    if not session.store:
        session.write("no session variables; allocate one with `x ← 2.0`")
        return
    session.write("\n".join(f"{name}: {type_name(value)} = {format_value(value)}"
                            for name, value in session.store.items()))


def _functions(session, argument: str, file: str) -> None:
    if not session.functions:
        session.write("no functions; define one with `function … end` or :load a file")
        return
    session.write("\n".join(format_function(fn).splitlines()[0]
                            for fn in session.functions.values()))


def _inverse(session, argument: str, file: str) -> None:
    fn = _function(session, argument, "inverse")
    session.write(format_program(invert_program(ast.Program((fn,)), fn.name)))


def _undo(session, argument: str, file: str) -> None:
    if argument:
        raise _usage("undo")
    undone = format_body(session.undo(), 1)
    session.write("undone:" + ("\n" if "\n" in undone else " ") +
                  (undone if "\n" in undone else undone.strip()))


def _grad(session, argument: str, file: str) -> None:
    from ..ad.drivers import gradient
    from ..api import Function, Module
    from ..values import complex_pair

    call_text, loss = _split_loss(argument)
    call = _call_of(call_text, file, session)
    fn = _function(session, call.func, "grad")
    args = [session.evaluate(arg, file) for arg in call.args]
    reached = {fn.name: fn, **callees(fn.body, session.functions)}
    module = Module(session.unit_of(reached, file), backend="interp",   # the REPL's
                    invcheck=session.invcheck)                         # reference
    grads = gradient(Function(module, fn.name, call.inverse), args, _loss_of(loss, fn, call))
    rows = [f"{param.name} = {format_value(complex_pair(g))}"
            for param, g in zip(fn.params, grads) if g is not None]
    session.write("\n".join(rows))     # never empty: the loss itself has a gradient


def _split_loss(argument: str) -> tuple[str, str]:
    match = re.fullmatch(r"(.*?)\s*--loss(?:\s+|=)(\S.*)", argument.strip())
    if match is None or not match.group(1):
        raise _usage("grad")
    return match.group(1), match.group(2).strip()


def _call_of(text: str, file: str, session) -> ast.CallStmt:
    item = read(text, file, session.functions)
    if not isinstance(item, Statements) or len(item.stmts) != 1 or \
            not isinstance(item.stmts[0], ast.CallStmt):
        raise RlangError(f"`:grad` differentiates a call such as `f(x, y)`, not `{text}`")
    return item.stmts[0]


def _loss_of(loss: str, fn: ast.Function, call: ast.CallStmt) -> str:
    """The loss as `rlang.gradient` takes it: a view of a parameter.  A session
    variable passed as an argument may stand for its parameter (`y` for `y!`)."""
    root = re.match(r"[^\[.\s]+", loss)
    params = [param.name for param in fn.params]
    if root is None or root.group(0) in params:
        return loss
    for param, arg in zip(params, call.args):
        if isinstance(arg, ast.Name) and arg.id == root.group(0):
            return param + loss[root.end():]
    return loss


def _llvm(session, argument: str, file: str) -> None:
    from ..backends.llvm.aot import compiled_module     # imports llvmlite: only here
    from ..types_rules import BackendUnsupported

    fn = _function(session, argument, "llvm")
    reached = {fn.name: fn, **callees(fn.body, session.functions)}
    _, llvm_module, _, skipped = compiled_module(session.unit_of(reached, f"{fn.name}.rev"),
                                                 session.invcheck)
    for name, why in skipped:
        if name == fn.name:
            raise BackendUnsupported(f"the llvm backend cannot compile `{name}`: {why}")
    session.write(str(llvm_module))


#: name → (handler, usage, what it does), in the order :help lists them.
COMMANDS = {
    "help": (_help, ":help", "this text"),
    "load": (_load, ":load FILE", "define the functions and constants of a .rev file"),
    "vars": (_vars, ":vars", "the session variables, their types and values"),
    "functions": (_functions, ":functions", "the functions defined in the session"),
    "inverse": (_inverse, ":inverse NAME", "the source of the inverse of a function"),
    "grad": (_grad, ":grad CALL --loss VIEW",
             "the gradient of VIEW after CALL, e.g. :grad f(y, x) --loss y"),
    "llvm": (_llvm, ":llvm NAME", "the LLVM IR the llvm backend generates for a function"),
    "undo": (_undo, ":undo", "step back: run the inverse of the last statement that "
             "changed the variables"),
    "quit": (None, ":quit", "leave (so does Ctrl-D)"),
}
