"""rlang's run-time errors, worded as jana words them, for a Janus program.

`janus_wording(error)` returns `error` with its message replaced by jana's where the
check that failed is one jana makes (Note [Janus error wording]); its kind, span,
notes and call chain are kept, so it renders in LANGUAGE.md §8's layout.  An error
jana has no words for keeps rlang's.
"""
from __future__ import annotations

import re

from ...errors import RlangError

# Note [Janus error wording]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A Janus program runs on rev's interpreter, whose checks are the ones jana makes
# (a `fi` or `from` assertion, a `delocal` value, an alias, a pop, a division by
# zero, an index out of bounds).  Rather than teach the interpreter a second set of
# messages, the command line rewords the error leaving a Janus run: each pattern below
# matches one message of the interpreter (or the checker) and gives jana's words
# (mbudde/jana, src/Jana/ErrorMessages.hs).  The position is the interpreter's, which
# is jana's line: both point at the condition, the `delocal`, the statement.  A test
# runs one program per error kind (tests/unit/frontend/janus), so a changed message
# on either side shows up there.

_RULES = [
    (r"integer division by zero: .*", lambda m: "Division by zero"),
    (r"`(?P<a>[^`]+)` is read by the right-hand side of its own update \(the same "
     r"memory as `(?P<b>[^`]+)`\)",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['b'])}' are aliases"),
    (r"`(?P<a>[^`]+)` is updated and also read on its right-hand side.*",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['a'])}' are aliases"),
    (r"deallocation check failed: (?P<name>\S+) = (?P<got>.*), expected (?P<want>.*)",
     lambda m: f"Expected value to be `{m['want']}' for local variable `{m['name']}' "
               f"but actual value is `{m['got']}'"),
    (r"`if` (post)?condition .* is false after its branch ran.*",
     lambda m: "Assertion failed: should be true"),
    (r"`if` postcondition .* holds after .*", lambda m: "Assertion failed: should be false"),
    (r"`from` condition .* must hold when the loop starts",
     lambda m: "Assertion failed: should be true"),
    (r"`from` condition .* must be false after the first iteration",
     lambda m: "Assertion failed: should be false"),
    (r"index (?P<i>-?\d+) is out of bounds for an axis of length (?P<n>\d+).*",
     lambda m: f"Array index `{m['i']}' was out of bounds (array size was {m['n']})"),
    (r"POP from the empty stack .*", lambda m: "Can't pop from empty stack"),
    (r"POP into `(?P<x>[^`]+)` = .*, which must be zero",
     lambda m: f"Can't pop to non-zero variable `{m['x']}'"),
    (r"arguments `(?P<a>[^`]+)` and `(?P<b>[^`]+)` of `[^`]+` overlap",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['b'])}' are aliases"),
    (r"`(?P<a>[^`]+)` is read on the right-hand side of its own update",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['a'])}' are aliases"),
    (r"an index of `(?P<a>[^`]+)` reads `(?P<b>[^`]+)`, which this statement writes",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{m['b']}' are aliases"),
    (r"the right-hand side reads `(?P<b>[^`]+)`, which overlaps the target `(?P<a>[^`]+)`",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['b'])}' are aliases"),
    (r"(?P<what>SWAP|PUSH|POP) operands `(?P<a>[^`]+)` and `(?P<b>[^`]+)` are the same memory",
     lambda m: f"Identifiers `{_root(m['a'])}' and `{_root(m['b'])}' are aliases"),
    (r"assertion failed: false: (?P<msg>.*)", lambda m: f"User error: {m['msg']}"),
]


def _root(view: str) -> str:
    return view.split("[", 1)[0]


def janus_wording(error: RlangError) -> RlangError:
    for pattern, words in _RULES:
        match = re.fullmatch(pattern, error.message, flags=re.DOTALL)
        if match:
            error.message = words(match)
            error.args = (error.message,)
            break
    if hasattr(error, "errors"):                # CheckErrors: each one
        for inner in error.errors:
            janus_wording(inner)
    return error
