"""The llvm backend: typed IR → native code with llvmlite (docs/backends.md).

Nothing is imported here: import the module you need."""
