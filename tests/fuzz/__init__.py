"""rlang's own fuzzer: malformed sources, generated programs, bad arguments and bad
command lines, each case run in a worker process under a timeout.

    python -m tests.fuzz --count 2000 --seed 7            # from the repository root
    python -m tests.fuzz --seed 7 --case 123              # rerun one case here, loudly

A *case* is (family, seed, index); everything it does follows from those three, so a
case found in a long run is reproduced by its number alone.  The families
(`FAMILIES` in cases.py):

- `source`   (mutate.py): a program from the corpus (examples/, std/, the golden
  tests, generated programs) mutated — tokens dropped, repeated, swapped or inserted,
  numbers at their extremes, deep nesting, long lines and names, invalid UTF-8, NUL
  bytes — then checked, inverted, formatted and run as `rlang` does from the command
  line.  Any outcome is fine except a traceback, an internal error, a crash or a hang.
- `program`  (programs.py): a generated *valid* program (tests/property/'s
  generators, driven by a seeded `random.Random`) run on the interpreter and on llvm:
  forward, inverse and, for float programs, the gradient; the two backends must agree
  (exactly on integers, bools and fixed point, to a tolerance on floats), the inverse
  must give the inputs back, and a gradient must leave the caller's arrays exactly as
  they were.
- `argument` (arguments.py): the Python API called with what NumPy, JAX and PyTorch
  users pass — subclasses, every dtype and byte order, 0-d and wrong-rank arrays,
  views, read-only and object arrays, None, strings, huge integers — on the
  interpreter and on llvm, for calls, inverses and gradients.  Each is a result or an
  `RlangError`, and both backends take or refuse the same arguments.
- `command`  (commands.py): command lines put together from rlang's own options,
  flags and literals, some of them wrong.
- `debugger` (debugger.py): `rlang debug` and `rlang run … --debug` sessions of random
  commands (motions both ways, breakpoints with conditions, watches, prints, junk).

The runner (runner.py) keeps a pool of worker processes (worker.py).  A worker that
dies in a case is a *crash*; a case that outlives `--timeout` is a *hang* (its worker
is killed); an exception that is not an `RlangError` is a *traceback*; backends that
differ are a *disagreement*.  Each defect is written to the report directory with a
reproducer.  tests/fuzz/test_fuzz.py runs a fixed-seed slice in CI and checks that the
runner does catch crashes, hangs and tracebacks.
"""
