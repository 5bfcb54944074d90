"""Compiled backends: llvm (llvmlite) and cuda (Numba-CUDA).  Nothing here is imported by
`import rlang`; rlang.api imports a backend when a module asks for it."""
