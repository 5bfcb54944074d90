"""JAX as every baseline here uses it: float64, one thread, synchronous dispatch.

Note [Timing JAX on one core]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
JAX dispatches asynchronously and XLA's CPU backend uses a thread pool; measured
that way a call's time is its dispatch time, on every core.  Before JAX is first
imported we ask XLA for one thread (unless the caller already set ``XLA_FLAGS``),
turn asynchronous dispatch off and enable float64, and every ``run()`` ends in
``block_until_ready()``.
"""

import os

os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)
jax.config.update("jax_platforms", "cpu")

__all__ = ["jax", "jnp"]
