"""The `debugger` family: `rlang debug` (and `rlang run … --debug`) fed a random
session of commands on standard input.

`make` picks a program (examples, a failing program for the post-mortem, a Janus
program when one is there) and up to 40 command lines: motions in both directions,
breakpoints on random lines and functions with random conditions, watches, prints of
random expressions, and junk.  `run` runs the session in this process: any exit
status but 70, and no traceback.  Each motion ends (the programs end, and going back
ends at the start), so no time limit is needed.
"""
from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from .clirun import cli
from .outcome import Outcome

REPO = Path(__file__).resolve().parents[2]
FILES = ("examples/multiplier.rev", "examples/sqrt.rev", "examples/factor.rev",
         "examples/perm_to_code.rev", "examples/rle.rev", "examples/logplus.rev",
         "examples/affine.rev", "tests/debug/programs/sums.rev",
         "tests/debug/programs/leak.rev", "tests/unit/frontend/janus/programs/fib.ja",
         "tests/unit/frontend/janus/programs/stack-operations.ja",
         "tests/unit/frontend/janus/errors/delocal-value.ja")
MOTIONS = ("step", "s", "next", "n", "back", "b", "reverse-next", "rn", "continue", "c",
           "reverse-continue", "rc", "finish")
EXPRESSIONS = ("x", "y", "n", "i", "a[0]", "a[99]", "x + 1", "length(a)", "1 // 0", "sqrt(-1)",
               "x.re", "[1, 2]", "((", "", "y!", "main", "true && 1", "\u00e9", "9" * 40)
WORDS = ("locals", "where", "bt", "help", "delete", "delete 1", "delete 99", "delete x",
         "frobnicate", "", "   ", "break", "break if x", "break 0", "break -3", "q x",
         "print", "p", "watch", "watch 1 + 2", "\x00", "\t")


def make(rng) -> dict:
    commands = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if roll < 0.55:
            commands.append(rng.choice(MOTIONS))
        elif roll < 0.7:
            where = str(rng.randint(-1, 40)) if rng.random() < 0.7 else \
                rng.choice(("main", "f", "nosuch", "multiplier", "bump", "add_all"))
            condition = f" if {rng.choice(EXPRESSIONS)}" if rng.random() < 0.3 else ""
            commands.append(f"break {where}{condition}")
        elif roll < 0.8:
            commands.append(f"{rng.choice(('print', 'p'))} {rng.choice(EXPRESSIONS)}")
        elif roll < 0.87:
            commands.append(f"watch {rng.choice(EXPRESSIONS)}")
        else:
            commands.append(rng.choice(WORDS))
    file = rng.choice(FILES)
    argv = ["run", file, "--debug"] if rng.random() < 0.2 else ["debug", file]
    return {"argv": argv, "commands": commands}


def run(spec: dict) -> Outcome:
    saved = sys.stdin
    sys.stdin = io.StringIO("\n".join(spec["commands"]) + "\n")
    try:
        with tempfile.TemporaryDirectory(prefix="rlang-fuzz-"):
            return cli(*[str(REPO / a) if a.endswith((".rev", ".ja")) else a
                         for a in spec["argv"]])
    finally:
        sys.stdin = saved


def describe(spec: dict) -> str:
    commands = "\\n".join(spec["commands"])
    return f"printf {commands!r} | rlang {' '.join(spec['argv'])}"[:6000]
