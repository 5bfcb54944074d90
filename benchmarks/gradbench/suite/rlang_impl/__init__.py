"""The rlang tool: one module per eval, each with `prepare(function, input)`.

Every derivative is rlang's own (reverse mode by running inverses, or its
forward mode / forward-over-reverse); Python reads the input, calls compiled rev
code from `benchmarks/gradbench/evals/`, and shapes the output.
"""


def warm_up(run) -> None:
    """Call `run` twice before it is timed: the first call compiles (a big module
    quickly, Note [A quick first call] in rlang/backends/llvm/jit.py) and the second
    waits for the optimised code that every timed run then runs."""
    run()
    run()
