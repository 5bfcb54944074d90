"""The `command` family: command lines put together from rlang's own vocabulary.

`make` picks a subcommand, a file (an example, a missing path, a directory, a
non-rev file, a fresh mutated copy) and a handful of tokens — options of every
subcommand, function names, rev literals good and bad, losses — in random order.
`run` runs `rlang ARGV…` in this process: any exit status but 70, and no traceback.
(The files are the project's own, whose functions all end, so no time limit is
needed.)
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from .clirun import cli
from .outcome import Outcome

REPO = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("run", "grad", "check", "invert", "compile", "repl", "nosuch", "--version",
               "--help", "")
FILES = ("examples/multiplier.rev", "examples/logplus.rev", "examples/petersen.rev",
         "examples/qr.rev", "examples/sqrt.rev", "examples/fibonacci.rev", "examples/rle.rev",
         "examples/unitary.rev", "rlang/std/blas.rev", "/nonexistent/x.rev", ".", "README.md",
         "/dev/null", "examples", "-", "")
TOKENS = ("--inverse", "--backend", "interp", "llvm", "cuda", "auto", "--no-invcheck", "--json",
          "--loss", "--hessian", "--emit", "llvm", "asm", "obj", "shared", "ptx", "-o",
          "/nonexistent/out.o", "--cc", "7.5", "99", "--", "-x", "--backend=llvm",
          "main", "multiplier", "logplus", "f", "nosuch", "y!", "y!.re", "x[0]", "x[99]",
          "2", "-1.5", "true", "[1.0, 2.0]", "[[1.0], [2.0, 3.0]]", "1.0+2.0im", "stack[1.0]",
          "stack{f64}[]", "1e999", "nan", "9223372036854775808", "'", "\"", "[", "((1",
          "\u00e9", "\x00", "-" * 3, "x" * 5000)


def make(rng) -> dict:
    command = rng.choice(SUBCOMMANDS)
    file = rng.choice(FILES)
    tokens = [rng.choice(TOKENS) for _ in range(rng.randint(0, 6))]
    return {"argv": [t for t in (command, file, *tokens) if t != ""]}


def run(spec: dict) -> Outcome:
    argv = list(spec["argv"])
    if argv and argv[0] == "repl":          # the REPL would wait for a terminal
        argv[0] = "check"
    with tempfile.TemporaryDirectory(prefix="rlang-fuzz-") as folder:
        argv = [str(Path(folder) / "out") if a == "/nonexistent/out.o" else a for a in argv]
        return cli(*argv)


def describe(spec: dict) -> str:
    return "rlang " + " ".join(repr(a) if not a.isprintable() or " " in a else a
                               for a in spec["argv"])[:6000]
