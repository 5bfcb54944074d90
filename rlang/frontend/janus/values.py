"""Values and stores as jana prints them.

`format_janus_value(v)` gives an int as `5`, an array as `{1, 2, 3}`, a stack top first
as `<3, 2, 1]` or `nil` when empty; `format_janus_binding(name, v)` gives `x = 5` or,
for an array, `a[3] = {1, 2, 3}`; `format_janus_store(pairs)` gives main's store,
sorted by name, one binding a line (what `rlang run prog.ja` prints).
`render_printf(fmt, args)` fills a printf format (`%d` int, `%a` array, `%b` bool,
`%t` stack, `%%` a percent sign) from (text, type name) pairs, or raises ValueError
with jana's message.  Values are rlang's run-time values (int, I32, NumPy arrays,
`Stack`).
"""
from __future__ import annotations

import numpy as np

from ...values import Stack

_SPECIFIERS = {"d": "int", "a": "array", "b": "bool", "t": "stack"}


def format_janus_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, np.ndarray):
        return "{" + ", ".join(str(int(x)) for x in value.reshape(-1)) + "}"
    if isinstance(value, Stack):
        if not value.items:
            return "nil"
        return "<" + ", ".join(str(int(x)) for x in reversed(value.items)) + "]"
    return str(int(value))


def janus_type_name(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, Stack):
        return "stack"
    return "int"


def format_janus_binding(name: str, value) -> str:
    if isinstance(value, np.ndarray):
        return f"{name}[{value.size}] = {format_janus_value(value)}"
    return f"{name} = {format_janus_value(value)}"


def format_janus_store(pairs) -> str:
    return "\n".join(format_janus_binding(name, value) for name, value in sorted(pairs))


def render_printf(fmt: str, args: list) -> str:
    """`fmt` with its specifiers replaced by `args`, (text, type name) pairs in order.
    With no arguments jana prints the format as it is, specifiers included."""
    if not args:
        return fmt
    out, i, pending = [], 0, list(args)
    while i < len(fmt):
        char = fmt[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        spec = fmt[i + 1] if i + 1 < len(fmt) else ""
        if spec == "%":
            out.append("%")
        elif spec in _SPECIFIERS:
            if not pending:
                raise ValueError("Not enough arguments for format string")
            text, kind = pending.pop(0)
            if kind != _SPECIFIERS[spec]:
                raise ValueError(f"Type mismatch for `%{spec}' format specifier; expected "
                                 f"argument of type `{_SPECIFIERS[spec]}' but actual type "
                                 f"was `{kind}'")
            out.append(text)
        else:
            raise ValueError(f"Unrecognized format specifier: `%{spec}'")
        i += 2
    if pending:
        raise ValueError("Not all arguments where used during string formatting")
    return "".join(out)
