"""rlang: the rev reversible programming language (see LANGUAGE.md)."""
