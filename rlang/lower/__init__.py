"""Lowering: checked AST → typed reversible IR, specialised per argument types
(docs/architecture.md).

Nothing is imported here: import the module you need."""
