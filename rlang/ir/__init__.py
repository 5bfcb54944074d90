"""The typed reversible IR, its walks and its passes (docs/architecture.md).

Nothing is imported here: import the module you need."""
