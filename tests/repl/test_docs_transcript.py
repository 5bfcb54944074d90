"""The transcripts of docs/repl.md are what the REPL prints: the first ```text block
(a session at the prompt) is replayed in process, the `$ printf … | rlang` one in a
subprocess."""
from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "repl.md"
PROMPT, CONTINUATION = "rev> ", ".... "


def text_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def exchanges(block: str) -> list[tuple[str, str]]:
    """(input, what it prints) pairs of a prompt transcript."""
    pairs: list[list[str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith(PROMPT):
            pairs.append([line[len(PROMPT):], ""])
        elif line.startswith(CONTINUATION):
            pairs[-1][0] += line[len(CONTINUATION):]
        else:
            pairs[-1][1] += line
    return [(text, shown) for text, shown in pairs]


def test_the_session_transcript(repl):
    pairs = exchanges(text_blocks()[0])
    assert len(pairs) >= 10
    for text, shown in pairs:
        out, err = repl(text)
        assert out + err == shown, text


def test_the_script_transcript(run_repl):
    block = next(b for b in text_blocks() if b.startswith("$ printf"))
    command, *shown = block.splitlines()
    stdin = re.fullmatch(r"\$ printf '(.*)' \| rlang", command).group(1).replace("\\n", "\n")
    code, out, err = run_repl(stdin)
    printed = shown[:shown.index("$ echo $?")]
    errors = [line for line in printed if line.startswith("<repl ")]
    assert out.splitlines() == [line for line in printed if line not in errors + ["…"]]
    assert errors and all(line in err.splitlines() for line in errors)
    assert str(code) == shown[-1]
