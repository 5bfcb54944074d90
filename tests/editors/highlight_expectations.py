"""What each editor must show at each position of the annotated sample.

tests/editors/textmate/categories.rev is a vscode-tmgrammar-test file: code lines,
each followed by comment lines whose `^` (or `<-`) marks point at characters and
name the TextMate scope expected there.  The Vim and Emacs tests read the same
marks and translate each scope to the Vim syntax group and Emacs face of that
category (SCOPES below), so all three editors are checked on one sample.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from editor_support import SAMPLE

#: scope prefix -> (Vim syntax group, Emacs face); the longest matching prefix wins.
#: "" and "nil": no highlighting.
SCOPES = {
    "comment.line.number-sign": ("revComment", "font-lock-comment-face"),
    "punctuation.definition.comment": ("revComment", "font-lock-comment-delimiter-face"),
    "string.quoted.double": ("revString", "font-lock-string-face"),
    "constant.character.escape": ("revEscape", "font-lock-string-face"),
    "keyword.control.conditional": ("revConditional", "font-lock-keyword-face"),
    "keyword.control.loop": ("revRepeat", "font-lock-keyword-face"),
    "keyword.control.block": ("revKeyword", "font-lock-keyword-face"),
    "keyword.control.import": ("revInclude", "font-lock-keyword-face"),
    "storage.type.function": ("revKeyword", "font-lock-keyword-face"),
    "storage.modifier.const": ("revKeyword", "font-lock-keyword-face"),
    "keyword.other.derivative": ("revKeyword", "font-lock-keyword-face"),
    "storage.modifier.annotation": ("revAnnotation", "font-lock-preprocessor-face"),
    "invalid.illegal.annotation": ("revAnnotationError", "font-lock-warning-face"),
    "storage.type.primitive": ("revType", "font-lock-type-face"),
    "constant.language.boolean": ("revBoolean", "font-lock-constant-face"),
    "constant.language": ("revConstant", "font-lock-constant-face"),
    "constant.numeric": ("revNumber", "font-lock-constant-face"),
    "support.function.builtin": ("revBuiltin", "font-lock-builtin-face"),
    "support.function.instruction": ("revInstruction", "rev-instruction-face"),
    "entity.name.function.call": ("revFunctionCall", "rev-function-call-face"),
    "entity.name.function": ("revFunctionName", "font-lock-function-name-face"),
    "variable.other.mutated": ("revMutated", "rev-mutated-face"),
    "variable.other": ("", "nil"),
    "keyword.operator.assignment.swap": ("revReversibleOp", "rev-reversible-operator-face"),
    "keyword.operator.assignment.alloc": ("revReversibleOp", "rev-reversible-operator-face"),
    "keyword.operator.assignment.dealloc": ("revReversibleOp", "rev-reversible-operator-face"),
    "keyword.operator.assignment.update": ("revReversibleOp", "rev-reversible-operator-face"),
    "keyword.operator.inverse": ("revReversibleOp", "rev-reversible-operator-face"),
    "keyword.operator": ("revOperator", "rev-operator-face"),
}


@dataclass(frozen=True)
class Mark:
    """One marked character: 0-based line and column (in characters) of the sample."""

    line: int
    col: int
    scope: str
    text: str          # the marked character, for messages

    def translated(self) -> tuple[str, str]:
        return translate(self.scope)


def translate(scope: str) -> tuple[str, str]:
    """(Vim group, Emacs face) of the category of a TextMate scope."""
    prefixes = [p for p in SCOPES if scope == p or scope.startswith(p + ".")]
    if not prefixes:
        raise KeyError(f"no Vim/Emacs category for scope {scope}")
    return SCOPES[max(prefixes, key=len)]


_MARK = re.compile(r"^#(?:(?P<carets> *\^+)|(?P<start> <(?P<tildes>~*)(?P<dashes>-+)))"
                   r" +(?P<scopes>\S.*)$")


def sample_lines() -> list[str]:
    return SAMPLE.read_text(encoding="utf-8").split("\n")


def sample_marks() -> list[Mark]:
    """Every marked character of the sample, with the most specific scope asserted."""
    lines, marks, code_line = sample_lines(), [], None
    for index, line in enumerate(lines[1:], start=1):
        found = _MARK.match(line)
        if not found:
            code_line = index
            continue
        if found["carets"]:
            start = len(found["carets"]) - len(found["carets"].lstrip(" ")) + 1
            width = len(found["carets"].strip())
        else:
            start, width = len(found["tildes"]), len(found["dashes"])
        scope = found["scopes"].split(" - ")[0].split()[-1]     # " - x": not x
        for col in range(start, start + width):
            marks.append(Mark(code_line, col, scope, lines[code_line][col]))
    return marks


def assert_sample_highlighted(query, editor: int) -> None:
    """Ask an editor (`query(text, positions)` → one name per position) for the
    highlighting at every mark of the sample and compare it with the translated
    scopes; `editor` is 0 for Vim syntax groups, 1 for Emacs faces."""
    from editor_support import SAMPLE

    marks = sample_marks()
    got = query(SAMPLE, [(m.line, m.col) for m in marks])
    wrong = [f"line {m.line + 1} col {m.col}: {m.text!r} ({m.scope}) is {name!r},"
             f" expected {m.translated()[editor]!r}"
             for m, name in zip(marks, got) if name != m.translated()[editor]]
    assert not wrong, "\n".join(wrong)
