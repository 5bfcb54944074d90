"""Every fenced code block of docs/*.md and README.md is tested (docs/index.md, "Testing
the docs", is the convention authors follow):

- ```rev: a whole program.  With a `main` it is run (`rlang run FILE`), else checked
  (`rlang check FILE`); it must succeed, and print what a following ```output block
  shows.  `rev error`: it must fail with an rlang error (exit status 1, no internal
  error), printing what the ```output block shows.  `rev fragment`: statements or
  functions shown out of context; they must parse.  `file=NAME` saves the program as
  NAME in the page's working directory, where the page's console and python blocks
  find it.
- ```console: each `$ rlang …` line is run and what it prints (stdout and stderr, as
  a terminal shows them) must be the lines below it; `$ echo $?` prints the exit status
  of the command before.
- ```python: run; written as a doctest (`>>>`) its outputs are compared, otherwise a
  following ```output block is compared with what it prints.
- ```c: must compile (`gcc -fsyntax-only`, with <stdint.h>).
- ```text: shown, not run.  Any block marked `ignore` is not run; there may be only a few.

Expected text may use `…` for "any text on this line" and a line `⋮` for "any
number of lines".  Each page runs in its own temporary directory with `examples/`
linked into it.
"""
from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from markdown_blocks import RUNNABLE, Block, blocks_of
from rlang import primitives
from rlang.cli import main as rlang_main
from rlang.errors import ParseError
from rlang.frontend.parser import parse

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
BLOCKS = [block for page in PAGES for block in blocks_of(page)]
RUN = [b for b in BLOCKS if b.lang in RUNNABLE and "ignore" not in b.flags and not b.problems]
MAX_IGNORED = 4
#: Pages whose blocks run on the backend a user gets ("auto": llvm), not on the
#: interpreter the tests default to (tests/conftest.py): interop.md trains models
#: for 500 steps, 50 s a block on the interpreter and about 1 s compiled.
USERS_BACKEND = {"interop.md"}


@pytest.fixture(scope="session")
def workdirs(tmp_path_factory):
    """page -> a directory holding its `file=` programs and a link to examples/."""
    made: dict[Path, Path] = {}

    def workdir(page: Path) -> Path:
        if page not in made:
            directory = tmp_path_factory.mktemp(page.stem)
            (directory / "examples").symlink_to(REPO / "examples")
            for block in blocks_of(page):
                if "file" in block.options:
                    (directory / block.options["file"]).write_text(block.text, encoding="utf-8")
            made[page] = directory
        return made[page]

    return workdir


@pytest.mark.parametrize("block", RUN, ids=[f"{b.where}-{b.lang}" for b in RUN])
def test_block(block, workdirs, monkeypatch):
    monkeypatch.chdir(workdirs(block.doc))
    if block.doc.name in USERS_BACKEND:
        monkeypatch.setenv("RLANG_BACKEND", "auto")
    monkeypatch.setenv("COLUMNS", "80")         # argparse wraps usage to the terminal
    RUNNERS[block.lang](block)


def test_every_block_has_a_known_info_string():
    problems = [f"{b.where}: {problem}" for b in BLOCKS for problem in b.problems]
    assert not problems, "\n".join(problems)


def test_the_index_links_every_page():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    pages = [page.name for page in PAGES if page.parent.name == "docs"]
    unlinked = [name for name in pages if name != "index.md" and f"]({name})" not in index]
    assert not unlinked, f"docs/index.md does not link {unlinked}"


def test_the_reference_names_every_primitive():
    """Each built-in function, conversion, constant and instruction of the registry
    appears in a `code span` of docs/reference.md."""
    text = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)     # prose only
    documented = {word for span in re.findall(r"`([^`]+)`", text)
                  for word in re.findall(r"\w+", span)}
    registry = [*primitives.BUILTINS, *primitives.STRUCTURAL_BUILTINS,
                *primitives.CONVERSIONS, *primitives.CONSTANTS,
                *primitives.INSTRUCTION_TABLE]
    assert [name for name in registry if name not in documented] == []


def test_few_blocks_are_ignored():
    ignored = [b.where for b in BLOCKS if "ignore" in b.flags]
    assert len(ignored) <= MAX_IGNORED, f"too many blocks marked ignore: {ignored}"


# ------------------------------------------------------------------- runners

def rlang(*args: str) -> tuple[int, str]:
    """`rlang ARGS…` in this process: exit status and what it printed (stdout + stderr)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = rlang_main(list(args))
    return code, printed.getvalue()


def run_rev(block: Block) -> None:
    if "fragment" in block.flags:
        return parse_fragment(block)
    path = block.options.get("file", f"block_{block.line}.rev")
    Path(path).write_text(block.text, encoding="utf-8")
    has_main = re.search(r"^\s*function\s+main\s*\(", block.text, re.MULTILINE)
    code, printed = rlang("run", path) if has_main else rlang("check", path)
    assert "internal error" not in printed, printed
    assert code == (1 if "error" in block.flags else 0), printed
    if block.output is not None:
        assert_printed(block.output.text, printed)


def parse_fragment(block: Block) -> None:
    """Functions or items parse as a program; statements parse as a function body."""
    try:
        parse(block.text, block.where)
    except ParseError:
        parse(f"function fragment()\n{block.text}end\n", block.where)


def run_console(block: Block) -> None:
    last_code = 0
    for command, expected in console_steps(block.text):
        words = shlex.split(command)
        if words == ["echo", "$?"]:
            printed = f"{last_code}\n"
        else:
            assert words[0] == "rlang", f"only rlang commands run in docs: {command}"
            last_code, printed = rlang(*words[1:])
            assert "internal error" not in printed, printed
        assert_printed(expected, printed, command)


def console_steps(text: str) -> list[tuple[str, str]]:
    """(command, expected output) for each `$ ` line of a console block."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            assert steps, f"console output before any `$ ` command: {line!r}"
            steps[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in steps]


def run_python(block: Block) -> None:
    if ">>>" in block.text:
        return run_doctest(block)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.text, block.where, "exec"), {"__name__": "__docs__"})
    if block.output is not None:
        assert_printed(block.output.text, printed.getvalue())


def run_doctest(block: Block) -> None:
    test = doctest.DocTestParser().get_doctest(block.text, {}, block.where, block.where, 0)
    for example in test.examples:
        example.want = example.want.replace("…", "...")
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()


def run_c(block: Block) -> None:
    done = subprocess.run(["gcc", "-fsyntax-only", "-include", "stdint.h", "-x", "c", "-"],
                          input=block.text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


RUNNERS = {"rev": run_rev, "console": run_console, "python": run_python, "c": run_c}


def assert_printed(expected: str, printed: str, command: str = "") -> None:
    """`printed` is `expected` line by line, where `…` stands for any text on its line
    and a line `⋮` for any number of lines."""
    got = "".join(line.rstrip() + "\n" for line in printed.rstrip("\n").splitlines())
    pattern = "".join(r"(?:.*\n)*?" if line.strip() == "⋮" else
                      re.escape(line.rstrip()).replace("…", ".*?") + "\n"
                      for line in expected.rstrip("\n").splitlines())
    assert re.fullmatch(pattern, got), (f"{command}\n--- expected\n{expected.rstrip()}\n"
                                        f"--- printed\n{printed.rstrip()}")
