"""The reference interpreter: the checked AST run on Python values (docs/architecture.md).

Nothing is imported here: import the module you need."""
