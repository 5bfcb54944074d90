"""VS Code's indentation, modelled in Python on the rules of
editors/vscode/language-configuration.json.

`reindent` follows the algorithm of VS Code's "Reindent Lines" command
(getReindentEditOperations in vs/editor/contrib/indentation): the first line keeps
its indentation; a line matching decreaseIndentPattern is dedented one level; the
line after one matching increaseIndentPattern is indented one level more, after one
matching indentNextLinePattern only that next line is; lines matching
unIndentedLinePattern do not change the indentation of the lines below.  The rules
are JavaScript regular expressions; those used here mean the same in Python's `re`
with re.ASCII (JavaScript's \\w, \\b and \\s outside /u mode are ASCII-only).
"""
from __future__ import annotations

import json
import re

from editor_support import EDITORS

CONFIGURATION = EDITORS / "vscode" / "language-configuration.json"


def configuration() -> dict:
    return json.loads(CONFIGURATION.read_text(encoding="utf-8"))


def indentation_rules() -> dict[str, re.Pattern]:
    return {name: re.compile(pattern, re.ASCII)
            for name, pattern in configuration()["indentationRules"].items()}


def reindent(text: str, unit: str = "    ") -> str:
    """`text` re-indented as VS Code's Reindent Lines command does."""
    rules = indentation_rules()

    def test(rule, line):
        return rule in rules and rules[rule].search(line) is not None

    lines = text.split("\n")
    first = lines[0]
    global_indent = first[:len(first) - len(first.lstrip())]
    ideal = global_indent
    if test("increaseIndentPattern", first):
        global_indent = ideal = global_indent + unit
    elif test("indentNextLinePattern", first):
        ideal = global_indent + unit
    out = [first]
    for line in lines[1:]:
        content = line.lstrip()
        adjusted = ideal + content
        if test("decreaseIndentPattern", adjusted):
            ideal, global_indent = ideal[len(unit):], global_indent[len(unit):]
        out.append(ideal + content)
        if test("unIndentedLinePattern", line):
            continue
        if test("increaseIndentPattern", adjusted):
            global_indent = ideal = global_indent + unit
        elif test("indentNextLinePattern", adjusted):
            ideal = ideal + unit
        else:
            ideal = global_indent
    return "\n".join(out)
