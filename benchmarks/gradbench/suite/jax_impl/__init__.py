"""The JAX baseline: one module per eval, each with `prepare(function, input)`.

Written here, idiomatic JAX (`jax.jit` of `jax.grad`/`jax.jacrev`/`jax.jvp`).
"""
