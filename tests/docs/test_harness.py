"""The docs tests themselves: that they read blocks as docs/index.md says, and that a
wrong expected output fails them."""
from __future__ import annotations

import pytest

from markdown_blocks import blocks_of
from test_docs import assert_printed, console_steps, run_rev

PAGE = '''# a page

```rev file=a.rev
function main()
    x ← 1
end
```

```output
x = 1
```

```
untagged
```

    indented

```output
orphan
```

```console
$ rlang run a.rev
x = 1
$ echo $?
0
```
'''


def test_blocks_of_attaches_outputs_and_reports_problems(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE, encoding="utf-8")
    rev, untagged, indented, orphan, console = blocks_of(page)
    assert (rev.lang, rev.options, rev.output.text) == ("rev", {"file": "a.rev"}, "x = 1\n")
    assert untagged.problems and indented.problems and orphan.problems
    assert not console.problems
    assert console_steps(console.text) == [("rlang run a.rev", "x = 1"), ("echo $?", "0")]


@pytest.mark.parametrize("expected", ["a = 1\nb = 2", "a = …\nb = 2", "⋮\nb = 2", "a = 1\n⋮\nb = 2"])
def test_expected_text_matches(expected):
    assert_printed(expected, "a = 1\nb = 2\n")


@pytest.mark.parametrize("expected", ["a = 1", "a = 1\nb = 3", "a = 1\nb = 2\nc = 3", "…\nb = 2\n⋮\nc"])
def test_wrong_expected_text_fails(expected):
    with pytest.raises(AssertionError):
        assert_printed(expected, "a = 1\nb = 2\n")


def test_a_program_that_prints_otherwise_fails(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "page.md"
    page.write_text(PAGE.replace("```output\nx = 1", "```output\nx = 2"), encoding="utf-8")
    with pytest.raises(AssertionError):
        run_rev(blocks_of(page)[0])
