"""The `rlang` command (LANGUAGE.md §6, §8, §9).

    rlang run FILE [FUNCTION] [ARGS…] [--inverse] [--backend B] [--no-invcheck] [--json]
              [--sandbox [--time-limit S] [--memory-limit BYTES] [--depth-limit N]]
    rlang grad FILE FUNCTION ARGS… --loss VIEW [--hessian] [--backend B] [--no-invcheck]
               [--json] [--sandbox [--time-limit S] [--memory-limit BYTES] [--depth-limit N]]
    rlang compile FILE [--emit llvm|asm|obj|shared|ptx] [--cc X.Y] [-o OUT] [--no-invcheck]
                  [--signature 'NAME(T, …)']…
    rlang check FILE [--sandbox]
    rlang invert FILE [FUNCTION] [--sandbox]
    rlang [repl [--no-invcheck]]             (the REPL, rlang/repl; docs/repl.md)

A thin layer over the public API.  Exit status: 0 on success, 1 for an error in the
program (printed to stderr as LANGUAGE.md §8 shows), 2 for a bad command line, 130
when interrupted.  No input makes it print a Python traceback: anything unexpected
is reported as an internal error (exit 70).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .frontend import ast
from .ad.drivers import gradient, hessian
from .api import BACKENDS, Module
from .arguments import parse_argument
from .frontend.check import check
from .deep import run_deep
from .errors import CheckErrors, ParseError, RlangError
from .interp.limits import MAX_SANDBOX_DEPTH, Sandbox
from .frontend.invert import invert_program
from .frontend.janus.printer import format_janus_program
from .frontend.janus.values import format_janus_store
from .frontend.janus.wording import janus_wording
from .frontend.loader import load_unit
from .frontend.parser import parse_signature
from .frontend.printer import format_program
from .values import complex_pair, format_value, to_json

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"rlang: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="rlang", description="rev: a reversible programming language")
    parser.add_argument("--version", action="version", version=f"rlang {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="run a function (or main) and print the results")
    run.add_argument("file", metavar="FILE")
    run.add_argument("function", metavar="FUNCTION", nargs="?",
                     help="function to run (default: main)")
    run.add_argument("args", metavar="ARGS", nargs="*",
                     help="arguments as rev literals: 2, -1.5, true, '[1.0, 2.0]'")
    run.add_argument("--inverse", action="store_true", help="run the inverse of the function")
    run.add_argument("--backend", choices=BACKENDS, default="interp")
    run.add_argument("--no-invcheck", action="store_true",
                     help="skip the reversibility checks at run time")
    run.add_argument("--json", action="store_true", help="print one JSON object instead")
    run.add_argument("--debug", action="store_true",
                     help="on a failed check, enter the debugger where it failed (runs on "
                     "the interpreter)")
    _add_modular_option(run)
    _add_sandbox_options(run, limits=True)

    grad = commands.add_parser("grad", help="the gradient of a loss view with respect to "
                                "every float, fixed and complex parameter")
    grad.add_argument("file", metavar="FILE")
    grad.add_argument("function", metavar="FUNCTION")
    grad.add_argument("args", metavar="ARGS", nargs="*", help="arguments as rev literals")
    grad.add_argument("--loss", required=True, metavar="VIEW",
                      help="a parameter name, an element name[i] or a field name.re")
    grad.add_argument("--hessian", action="store_true",
                      help="also print the Hessian over the flattened float inputs")
    grad.add_argument("--backend", choices=BACKENDS, default="interp")
    grad.add_argument("--no-invcheck", action="store_true")
    grad.add_argument("--json", action="store_true", help="print one JSON object instead")
    _add_sandbox_options(grad, limits=True)

    compile_cmd = commands.add_parser("compile", help="compile a program with the llvm "
                                      "backend (LLVM IR, assembly, an object or a shared "
                                      "library with a C header) or its GPU code to PTX")
    compile_cmd.add_argument("file", metavar="FILE")
    compile_cmd.add_argument("--emit", choices=("llvm", "asm", "obj", "shared", "ptx"),
                             default="llvm")
    compile_cmd.add_argument("--cc", metavar="MAJOR.MINOR", default="7.5",
                             help="compute capability of the PTX (--emit ptx; default 7.5)")
    compile_cmd.add_argument("-o", dest="output", metavar="OUT",
                             help="output file (default: stdout for llvm/asm, FILE.o / "
                             "FILE.so for obj/shared)")
    compile_cmd.add_argument("--no-invcheck", action="store_true",
                             help="emit no reversibility checks")
    compile_cmd.add_argument("--signature", action="append", default=[],
                             metavar="'NAME(T, …)'",
                             help="the parameter types to compile a function for, e.g. "
                             "'norm(f64, f64[:])' (repeatable, one per function)")

    check_cmd = commands.add_parser("check", help="report every static error of a program")
    check_cmd.add_argument("file", metavar="FILE")
    _add_modular_option(check_cmd)
    _add_sandbox_options(check_cmd, limits=False)

    invert = commands.add_parser("invert", help="print the inverse program as rev source")
    invert.add_argument("file", metavar="FILE")
    invert.add_argument("function", metavar="FUNCTION", nargs="?")
    _add_modular_option(invert)
    _add_sandbox_options(invert, limits=False)

    debug = commands.add_parser("debug", help="the reverse-stepping debugger (on the "
                                "interpreter); --dap: a Debug Adapter Protocol server")
    debug.add_argument("file", metavar="FILE", nargs="?")
    debug.add_argument("function", metavar="FUNCTION", nargs="?",
                       help="function to debug (default: main)")
    debug.add_argument("args", metavar="ARGS", nargs="*", help="arguments as rev literals")
    debug.add_argument("--inverse", action="store_true", help="debug the inverse")
    debug.add_argument("--no-invcheck", action="store_true",
                       help="skip the reversibility checks at run time")
    debug.add_argument("--dap", action="store_true",
                       help="speak the Debug Adapter Protocol on standard input and output")
    _add_modular_option(debug)

    repl = commands.add_parser("repl", help="the interactive REPL (also: rlang with no "
                               "arguments); with standard input not a terminal, it runs "
                               "the statements it reads")
    repl.add_argument("--no-invcheck", action="store_true",
                      help="skip the reversibility checks at run time")
    return parser


def _add_modular_option(command) -> None:
    command.add_argument("--modular", action="store_true",
                         help="a Janus program (.ja) computes with 32-bit wrapping integers, "
                         "as jana -m")


def _add_sandbox_options(command, limits: bool) -> None:
    """--sandbox, and with `limits` the options that set its limits (docs/sandbox.md)."""
    command.add_argument("--sandbox", action="store_true",
                         help="run a program you did not write: includes only from its "
                         "directory and std/" + (", the interpreter only, limits on run "
                                                 "time, memory and call depth" if limits
                                                 else ""))
    if not limits:
        return
    defaults = Sandbox()
    command.add_argument("--time-limit", type=_seconds, metavar="SECONDS",
                         default=defaults.time, help=f"run time of a sandboxed run "
                         f"(default {defaults.time:g}; 'none' lifts it)")
    command.add_argument("--memory-limit", type=_bytes, metavar="BYTES",
                         default=defaults.memory, help="bytes of arrays and stacks of a "
                         "sandboxed run, e.g. 512M, 2G (default 1G; 'none' lifts it)")
    command.add_argument("--depth-limit", type=_depth, metavar="N", default=defaults.depth,
                         help=f"call depth of a sandboxed run (default {defaults.depth}, "
                         f"at most {MAX_SANDBOX_DEPTH})")


def _limit_text(text: str, what: str, read):
    if text.strip().lower() == "none":
        return None
    try:
        value = read(text.strip())
    except (ValueError, OverflowError):
        value = None
    if value is None or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what} (or 'none')")
    return value


def _seconds(text: str):
    return _limit_text(text, "a positive number of seconds",
                       lambda t: float(t) if float(t) < float("inf") else None)


_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(text: str):
    def read(t: str) -> int:
        t = t.upper().removesuffix("B").removesuffix("I")
        unit = t[-1:] if t[-1:] in _BYTE_UNITS else ""
        return int(float(t[:len(t) - len(unit)]) * _BYTE_UNITS[unit])
    return _limit_text(text, "a number of bytes such as 1000000, 512M or 2G", read)


def _depth(text: str):
    value = _limit_text(text, "a positive integer", int)
    if value is not None and value > MAX_SANDBOX_DEPTH:
        raise argparse.ArgumentTypeError(f"{text!r}: the call depth is at most "
                                         f"{MAX_SANDBOX_DEPTH}")
    return value


def _sandbox_of(options) -> Sandbox | None:
    """The sandbox a command asked for, or None."""
    if not getattr(options, "sandbox", False):
        return None
    return Sandbox(time=getattr(options, "time_limit", None),
                   memory=getattr(options, "memory_limit", None),
                   depth=getattr(options, "depth_limit", None))


def _limits_without_sandbox(tokens: list[str]) -> str | None:
    """The first limit option among the options of `tokens` (as `_options_first`
    orders them) given without --sandbox, or None."""
    options = tokens[:tokens.index("--")] if "--" in tokens else tokens
    if "--sandbox" in options:
        return None
    for token in options:
        name = token.split("=", 1)[0]
        if name in ("--time-limit", "--memory-limit", "--depth-limit"):
            return name
    return None


def entry() -> None:
    """The console script and `python -m rlang`: `main()`, then exit with its status
    without tearing the interpreter down (Note [Leaving without teardown])."""
    if not _in_repl(sys.argv[1:]):
        from .backends.llvm.tiers import quick_tier_by_default

        quick_tier_by_default(False)        # (see the Note)
    status = main()
    if _in_repl(sys.argv[1:]):
        sys.exit(status)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):       # a closed pipe, a closed stream
            status = status or EXIT_ERROR
    from .backends.llvm.tiers import finish_optimising

    finish_optimising()         # the optimised code into the disk cache (see the Note)
    os._exit(status)


# Note [Leaving without teardown]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When a command has done its work, Python's own shutdown (collecting every module,
# NumPy's and LLVM's objects, the compiled modules' JIT engines) took another 30-35
# ms of a 0.28 s `rlang run` from the cache.  The command line therefore leaves with
# `os._exit` once the output is flushed: every file a command writes is closed
# before it returns, and the disk cache is written with a rename before the call
# returns.  A one-shot command compiles big modules at O3 first, where
# RLANG_QUICK_FIRST_CALL is not set: the quick first tier (Note [A quick first
# call], backends/llvm/tiers.py) would show a program's output sooner but end the
# process later, as the O3 code is compiled for the disk cache all the same
# (`rlang run examples/leapfrog.rev` with an empty cache: 1.06 s, with the quick
# tier 1.20 s).  Where the variable asks for it, a module still being optimised
# is waited for after the output is flushed, so that its O3 code goes to the disk
# cache for the next command.  The REPL (prompt_toolkit's history, an interactive session) exits as
# Python does, and `main()` itself, which tests call in-process, returns.


def _in_repl(argv: list[str]) -> bool:
    return not argv or argv[0] == "repl"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the command line (see `entry`); returns the status."""
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    try:
        tokens = _options_first(argv or ["repl"])
        options = parser.parse_args(tokens)
        alone = _limits_without_sandbox(tokens)
        if alone is not None:
            parser.error(f"{alone} limits a sandboxed run: add --sandbox")
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if options.command == "repl":     # on the main thread: it takes Ctrl-C itself
        from .repl import start

        return start(invcheck=not options.no_invcheck)
    try:
        if options.command == "debug" or options.command == "run" and options.debug:
            return _command_debug(options)      # on the main thread: it takes Ctrl-C
        return run_deep(_COMMANDS[options.command], options)
    except RlangError as error:
        sys.stdout.flush()
        if str(getattr(options, "file", "")).endswith(".ja"):
            error = janus_wording(error)
        sys.stderr.write(error.render() + "\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("rlang: interrupted\n")
        return EXIT_INTERRUPTED
    except RecursionError:
        sys.stderr.write("rlang: error: the program is nested or recurses too deeply\n")
        return EXIT_ERROR
    except MemoryError:
        sys.stderr.write("rlang: error: out of memory\n")
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as error:  # a bug in rlang: say so, without a traceback
        sys.stderr.write(f"rlang: internal error: {type(error).__name__}: {error}\n"
                         "This is a bug in rlang; please report it with the program.\n")
        return EXIT_INTERNAL


def _options_first(argv: list[str]) -> list[str]:
    """Reorder `COMMAND [tokens…]` as `COMMAND options… -- positionals…`, so options may
    stand anywhere and arguments such as `-1.5` are never taken for options."""
    if not argv or argv[0].startswith("-"):
        return argv
    command, rest = argv[0], argv[1:]
    options, positionals = [], []
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            positionals.extend(rest[i + 1:])
            break
        if token.startswith("--") or token in ("-h", "-o"):
            options.append(token)
            if token in _VALUED_OPTIONS and i + 1 < len(rest):
                options.append(rest[i + 1])
                i += 1
        else:
            positionals.append(token)
        i += 1
    return [command, *options, "--", *positionals] if positionals else [command, *options]


#: The options that take a value (the next token), for `_options_first`.
_VALUED_OPTIONS = ("--backend", "--loss", "--emit", "--cc", "--signature", "-o",
                   "--time-limit", "--memory-limit", "--depth-limit")


def _load(options):
    """The unit of `options.file`, confined where --sandbox asks."""
    return load_unit(options.file, confine=bool(getattr(options, "sandbox", False)),
                     modular=getattr(options, "modular", False))


def _command_run(options) -> int:
    unit = _load(options)
    module = Module(unit, backend=options.backend, invcheck=not options.no_invcheck,
                    sandbox=_sandbox_of(options))
    if options.function is None or options.function == "main" and not options.inverse \
            and not options.args and "main" in unit.functions:     # main's store
        if options.inverse:
            raise RlangError("--inverse needs a FUNCTION: `main` takes no arguments to run "
                             "backward")
        results = module.run_main()
        if unit.dialect == "janus" and not options.json:     # as jana prints main's store
            print(format_janus_store(results))
            return 0
    else:
        fn = _function_named(module, unit, options)
        args = [parse_argument(text, i + 1) for i, text in enumerate(options.args)]
        if options.inverse:
            fn = ~fn
        _check_count(fn, args)
        results = list(zip(fn.params, fn(*args)))
    _print_results(results, options.json)
    return 0


def _command_debug(options) -> int:
    """`rlang debug` (LANGUAGE.md §15), and `rlang run … --debug`: run, and on a failed
    check enter the debugger at the failure."""
    from .debug.resume import session_at_failure
    from .debug.session import Session
    from .debug.terminal import run_terminal
    if options.command == "run":
        if options.sandbox:
            raise RlangError("--debug and --sandbox do not go together: the debugger runs "
                             "without the sandbox's limits")
        options.backend = "interp"          # the debugger steps the interpreter
        try:
            return run_deep(_command_run, options)
        except RlangError as error:
            if not error.trail:             # not a failure while a function ran
                raise
            sys.stdout.flush()
            run_terminal(session_at_failure(error))
            return EXIT_ERROR               # the run failed, whatever was looked at
    if options.dap:
        from .debug.dap import serve
        return serve(sys.stdin.buffer, sys.stdout.buffer)
    if options.file is None:
        raise RlangError("rlang debug needs a FILE (or --dap)")
    unit = _load(options)
    check(unit)
    args = [parse_argument(text, i + 1) for i, text in enumerate(options.args)]
    session = Session.start(unit, options.function, args, options.inverse,
                            not options.no_invcheck)
    return run_terminal(session)


def _command_grad(options) -> int:
    unit = _load(options)
    module = Module(unit, backend=options.backend, invcheck=not options.no_invcheck,
                    sandbox=_sandbox_of(options))
    fn = _function_named(module, unit, options)
    args = [parse_argument(text, i + 1) for i, text in enumerate(options.args)]
    _check_count(fn, args)
    grads = gradient(fn, args, options.loss)
    results = [(name, complex_pair(g)) for name, g in zip(fn.params, grads) if g is not None]
    if options.hessian:
        results.append(("hessian", hessian(fn, args, options.loss)))
    _print_results(results, options.json)
    return 0


def _function_named(module, unit, options):
    name = options.function
    if name not in unit.functions:
        raise RlangError(f"{options.file} has no function `{name}`; it defines "
                         f"{', '.join(unit.functions) or 'no functions'}")
    return module[name]


def _check_count(fn, args) -> None:
    if len(args) != len(fn.params):
        raise RlangError(f"`{fn.name}` takes {len(fn.params)} argument(s) "
                         f"({', '.join(fn.params)}), got {len(args)}")


def _print_results(results, as_json: bool) -> None:
    if as_json:
        print(json.dumps({name: to_json(value) for name, value in results}))
    else:
        for name, value in results:
            print(f"{name} = {format_value(value)}")


def _command_check(options) -> int:
    try:
        check(_load(options))       # a Janus program's static errors come with the load
    except CheckErrors as errors:
        if options.file.endswith(".ja"):
            janus_wording(errors)
        sys.stderr.write(errors.render() + "\n")
        count = len(errors.errors)
        sys.stderr.write(f"{count} error{'s' if count != 1 else ''} in {options.file}\n")
        return EXIT_ERROR
    print(f"{options.file}: ok")
    return 0


def _command_invert(options) -> int:
    unit = _load(options)
    check(unit)
    program = unit.program
    defined = {item.name for item in program.items if isinstance(item, ast.Function)}
    if options.function is not None:
        fn = unit.functions.get(options.function)     # its own or an included one
        if fn is None:
            raise RlangError(f"{options.file} has no function `{options.function}`")
        program = ast.Program((fn,), span=program.span)
    included = frozenset(unit.functions) - defined
    inverse = invert_program(program, options.function, included)
    sys.stdout.write(format_janus_program(inverse) if unit.dialect == "janus" else
                     format_program(inverse))
    return 0


def _command_compile(options) -> int:
    unit = load_unit(options.file)
    check(unit)
    try:
        signatures = _signatures(unit, options.signature)
    except _BadSignature as bad:
        sys.stderr.write(f"rlang: error: {bad}\n")
        return EXIT_USAGE
    invcheck = not options.no_invcheck
    stem = Path(options.file).with_suffix("")
    if options.emit == "ptx":
        return _emit_ptx(unit, options, invcheck, signatures)
    from .backends.llvm.aot import compile_file, write_shared   # imports llvmlite

    if options.emit == "shared":
        written, skipped = write_shared(unit, options.output or f"{stem}.so", invcheck,
                                        signatures)
        _report_left_out(skipped)
        for path in written:
            print(f"wrote {path}")
        return 0
    result, skipped = compile_file(unit, options.emit, invcheck, signatures)
    _report_left_out(skipped)
    if options.emit == "obj":
        output = options.output or f"{stem}.o"
        _write_output(output, result)
        print(f"wrote {output}")
    elif options.output:
        _write_output(options.output, result)
        print(f"wrote {options.output}")
    else:
        sys.stdout.write(result)
    return 0


class _BadSignature(Exception):
    """A `--signature` that cannot be used: the message names it and says why."""


def _signatures(unit, texts: list[str]) -> dict:
    """The `--signature 'NAME(T, …)'` options as function name → IR parameter types;
    _BadSignature for one that does not parse, names no function of the program,
    has the wrong number of types, or repeats a function."""
    from .lower.entries import ir_type

    signatures = {}
    for text in texts:
        try:
            name, types = parse_signature(text, "--signature")
        except ParseError as error:
            raise _BadSignature(f"--signature {text!r}: {error.message} (at column "
                                f"{error.span.col}); write it as NAME(T, …), e.g. "
                                "'norm(f64, f64[:])'") from None
        fn = unit.functions.get(name)
        if fn is None:
            raise _BadSignature(f"--signature {text!r}: {unit.file} has no "
                                f"function `{name}`; it defines "
                                f"{', '.join(unit.functions) or 'no functions'}")
        if name in signatures:
            raise _BadSignature(f"--signature {text!r}: `{name}` has a signature already; "
                                "give one per function")
        if len(types) != len(fn.params):
            raise _BadSignature(f"--signature {text!r}: `{name}` takes {len(fn.params)} "
                                f"parameter(s) ({', '.join(p.name for p in fn.params)}), "
                                f"the signature gives {len(types)}")
        signatures[name] = tuple(ir_type(t) for t in types)
    return signatures


def _report_left_out(skipped) -> None:
    """Name each function `rlang compile` left out, and why, on stderr."""
    for name, why in skipped:
        sys.stderr.write(f"rlang: warning: `{name}` is not compiled: {why}\n")
    if skipped:
        sys.stderr.write("rlang: (give a function's parameter types with "
                         "--signature 'NAME(T, …)', docs/cli.md)\n")


def _write_output(path: str, data: str | bytes) -> None:
    """Write `rlang compile`'s output to `path`; a path that cannot be written is the
    user's error, said so."""
    try:
        if isinstance(data, bytes):
            Path(path).write_bytes(data)
        else:
            Path(path).write_text(data)
    except OSError as error:
        raise RlangError(f"cannot write {path}: {error.strerror or error}") from None


def _emit_ptx(unit, options, invcheck: bool, signatures: dict) -> int:
    """`rlang compile FILE --emit ptx [--cc X.Y] [-o OUT]` (docs/cuda.md)."""
    try:
        cc = tuple(int(part) for part in options.cc.split("."))
    except ValueError:
        cc = ()
    if len(cc) != 2:
        raise RlangError(f"--cc {options.cc!r}: write the compute capability as MAJOR.MINOR, "
                         "e.g. 7.5")
    from .backends.cuda.ptx import ptx_text

    text, skipped = ptx_text(unit, invcheck, cc, signatures)
    _report_left_out(skipped)
    if options.output:
        _write_output(options.output, text)
        print(f"wrote {options.output}")
    else:
        sys.stdout.write(text)
    return 0


_COMMANDS = {
    "run": _command_run,
    "compile": _command_compile,
    "grad": _command_grad,
    "check": _command_check,
    "invert": _command_invert,
}


if __name__ == "__main__":
    entry()
