"""The cuda backend: typed IR → Numba-CUDA kernels (docs/cuda.md).

Nothing is imported here: import the module you need."""
