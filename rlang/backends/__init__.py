"""Compiled backends: llvm (llvmlite) and, later, cuda.  Nothing here is imported by
`import rlang`; rlang.api imports a backend when a module asks for it."""
