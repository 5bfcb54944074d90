"""The frontend: source text → checked AST, and the inverter (docs/architecture.md).

Nothing is imported here: import the module you need."""
