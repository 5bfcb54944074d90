"""Fenced code blocks of the documentation, and what their info strings say.

`blocks_of(path)` reads a Markdown file and returns its fenced blocks in order.  An
info string is a language followed by words: `rev file=hello.rev`, `rev fragment`,
`rev error`, `sh ignore`.  An ```output block belongs to the block just before it (a
rev or python block): it is that block's expected output, not a block of its own.
The convention is written down for authors in docs/index.md ("Testing the docs").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^(```+)\s*(.*?)\s*$")

#: Languages whose blocks are run or checked, and the ones that only show text.
RUNNABLE = ("rev", "python", "console", "c")
SHOWN = ("text",)
#: Blocks that may carry an ```output block after them.
WITH_OUTPUT = ("rev", "python")


@dataclass
class Block:
    doc: Path
    line: int                   # 1-based line of the opening fence
    lang: str
    words: tuple[str, ...]      # the info string after the language
    text: str
    output: "Block | None" = None
    problems: list[str] = field(default_factory=list)

    @property
    def flags(self) -> set[str]:
        return {word for word in self.words if "=" not in word}

    @property
    def options(self) -> dict[str, str]:
        return dict(word.split("=", 1) for word in self.words if "=" in word)

    @property
    def where(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of `path`, output blocks attached to their owners."""
    found = list(_fences(path))
    blocks: list[Block] = []
    for block in found:
        if block.lang == "output":
            owner = blocks[-1] if blocks else None
            if owner is None or owner.lang not in WITH_OUTPUT or owner.output is not None:
                block.problems.append("an ```output block must follow a rev or python block")
                blocks.append(block)
            else:
                owner.output = block
            continue
        if not block.lang:
            block.problems.append("a fenced block needs an info string (see docs/index.md)")
        elif block.lang not in RUNNABLE + SHOWN and "ignore" not in block.flags:
            block.problems.append(f"unknown info string {block.lang!r}: use one of "
                                  f"{', '.join(RUNNABLE + SHOWN)}, or mark it `ignore`")
        blocks.append(block)
    return blocks


def _fences(path: Path):
    """The fenced blocks of `path`, and a problem block for each indented one."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            if lines[i].startswith("    ") and i > 0 and not lines[i - 1].strip():
                yield Block(path, i + 1, "indented", (), lines[i] + "\n",
                            problems=["an indented code block: fence it, with an info string"])
            i += 1
            continue
        fence, info = opening.groups()
        body_start = i + 1
        end = body_start
        while end < len(lines) and lines[end].rstrip() != fence:
            end += 1
        lang, *words = info.split() or [""]
        yield Block(path, i + 1, lang, tuple(words), "\n".join(lines[body_start:end]) + "\n")
        i = end + 1
