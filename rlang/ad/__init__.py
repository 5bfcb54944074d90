"""Reverse-mode AD by running inverses: drivers, the gradient interpreter, and the
adjoint and tangent transforms of the IR (docs/architecture.md).

Nothing is imported here: import the module you need."""
