"""Bridges to other AD systems (LANGUAGE.md §13): `rlang.jax` (bridges/jax.py),
loaded on first use of `rlang.jax`; importing rlang never imports JAX."""
