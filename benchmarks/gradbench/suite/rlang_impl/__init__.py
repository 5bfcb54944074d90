"""The rlang tool: one module per eval, each with `prepare(function, input)`.

Every derivative is rlang's own (reverse mode by running inverses, or its
forward mode / forward-over-reverse); Python reads the input, calls compiled rev
code from `benchmarks/gradbench/evals/`, and shapes the output.
"""
