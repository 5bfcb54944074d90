"""How errors are shown (rlang/errors.py; LANGUAGE.md §8):

    examples/bad.rev:12:5: error: deallocation check failed: n = 0.25, expected 0.0
       12 |     n → 0.0
          |     ^^^^^^^
      in function logplus, called at examples/bad.rev:30:5 (running backward)

`file:line:col: error: message`, the source line behind a right-aligned line-number
gutter, a caret under the span, then the call chain with directions.
"""
from __future__ import annotations

import pytest

import rlang
from rlang.errors import (CheckError, CheckErrors, Frame, ParseError, ReversibilityError,
                          RlangError, RlangRuntimeError)
from rlang.span import Span, register_source

BAD = """\
# bad.rev: the error of LANGUAGE.md §8
function logplus(y!, x)
    # y! += log(x) without a clean uncomputation
    n ← 0.0
    n += x
    #
    #
    #
    y! += log(n)
    n -= x * 0.75
    # n is 0.25 * x here, not 0
    n → 0.0
end
#
#
#
#
#
#
#
#
#
#
#
#
#
function main()
    y ← 0.0
    x ← 1.0
    logplus(y, x)
end
function back()
    y ← 0.0
    x ← 1.0
    ~logplus(y, x)
    x → 1.0
    y → 0.0
end
"""


@pytest.fixture
def bad(tmp_path):
    path = tmp_path / "bad.rev"
    path.write_text(BAD, encoding="utf-8")
    return str(path)


def caught(fn, *args) -> RlangError:
    with pytest.raises(RlangError) as info:
        fn(*args)
    return info.value


def test_the_spec_example_forward(bad):
    error = caught(rlang.load(bad).run_main)
    lines = error.render().splitlines()
    assert lines[:4] == [
        f"{bad}:12:5: error: deallocation check failed: n = 0.25, expected 0.0",
        "   12 |     n → 0.0",
        "      |     ^^^^^^^",
        f"  in function logplus, called at {bad}:30:5 (running forward)",
    ]
    assert "  in function main (running forward)" in lines
    assert lines.index("  in function main (running forward)") > 3


def test_the_spec_example_backward(bad):
    error = caught(rlang.load(bad).back)
    lines = error.render().splitlines()
    # backward, `n ← 0.0` is the deallocation: the error points at the line as written
    assert lines[:4] == [
        f"{bad}:4:5: error: deallocation check failed: n = -0.25, expected 0.0",
        "    4 |     n ← 0.0",
        "      |     ^^^^^^^",
        f"  in function logplus, called at {bad}:35:5 (running backward)",
    ]
    assert "  in function back (running forward)" in lines


def test_the_command_line_prints_the_rendered_error(bad, cli):
    code, out, err = cli("run", bad)
    assert code == 1 and out == ""
    assert err == caught(rlang.load(bad).run_main).render() + "\n"


def test_frames_show_the_values_of_the_frames_variables(bad):
    lines = caught(rlang.load(bad).run_main).render().splitlines()
    frame = lines.index(f"  in function logplus, called at {bad}:30:5 (running forward)")
    assert lines[frame + 1].startswith("      with ")
    assert "n = 0.25" in lines[frame + 1] and "x = 1.0" in lines[frame + 1]


def test_str_is_location_and_message(bad):
    error = caught(rlang.load(bad).run_main)
    assert str(error) == f"{bad}:12:5: deallocation check failed: n = 0.25, expected 0.0"


def _render(source: str, line: int, col: int, end_col: int, message="boom", file=None,
            **kwargs) -> list[str]:
    file = file or f"<render-{line}-{col}-{end_col}-{len(source)}>"
    register_source(file, source)
    return RlangError(message, Span(file, line, col, line, end_col), **kwargs).render().splitlines()


def test_the_gutter_is_right_aligned_and_the_caret_follows_the_span():
    source = "\n".join(f"line{i}" for i in range(1, 200)) + "\n"
    source = source.replace("line7\n", "    x += y * z\n").replace("line123\n", "a[i] += b\n")
    assert _render(source, 7, 14, 15)[1:] == ["    7 |     x += y * z", "      |              ^"]
    assert _render(source, 7, 5, 15)[1:] == ["    7 |     x += y * z",
                                              "      |     ^^^^^^^^^^"]
    assert _render(source, 123, 1, 5)[1:] == ["  123 | a[i] += b", "      | ^^^^"]


def test_a_five_digit_line_number_still_lines_up():
    source = "\n" * 12344 + "SWAP(a, b)\n"
    lines = _render(source, 12345, 1, 11)
    assert lines[1] == "12345 | SWAP(a, b)"
    assert lines[2] == "      | ^^^^^^^^^^"
    assert lines[1].index("|") == lines[2].index("|")


def test_a_span_running_past_its_line_underlines_to_the_end_of_the_line():
    file = "<multi-line>"
    register_source(file, "if x\n    y += 1\nend\n")
    lines = RlangError("m", Span(file, 1, 1, 3, 4)).render().splitlines()
    assert lines[1:] == ["    1 | if x", "      | ^^^^"]


def test_tabs_are_shown_as_spaces_so_the_caret_lines_up():
    lines = _render("\tx += y\n", 1, 2, 3)
    assert lines[1:] == ["    1 |  x += y", "      |  ^"]


def test_notes_follow_the_quote():
    lines = _render("x *= 2.0\n", 1, 1, 9, message="`*=` is reversible only on ulog",
                    notes=("convert with ulog(x)",))
    assert lines[0].endswith(": error: `*=` is reversible only on ulog")
    assert lines[3] == "  note: convert with ulog(x)"


def test_an_error_without_a_span_is_just_the_message():
    assert RlangError("no such thing").render() == "error: no such thing"
    assert str(RlangError("no such thing")) == "no such thing"


def test_an_error_in_an_unknown_file_has_no_quote():
    error = RlangError("m", Span("<never-registered>", 3, 2, 3, 4))
    assert error.render() == "<never-registered>:3:2: error: m"


def test_call_chain_lines():
    error = RlangRuntimeError("x", None)
    error.add_frame(Frame("inner", Span("a.rev", 7, 5, 7, 10), True, "y! = 1"))
    error.add_frame(Frame("outer", None, False, ""))
    assert error.render().splitlines() == [
        "error: x",
        "  in function inner, called at a.rev:7:5 (running backward)",
        "      with y! = 1",
        "  in function outer (running forward)",
    ]


def test_a_long_call_chain_is_shown_with_its_middle_left_out():
    m = rlang.loads("function f(x!)\n    INC(x!)\n    f(x!)\nend\n", file="<deep>")
    error = caught(m.f, 0)
    assert isinstance(error, RlangRuntimeError)
    assert len(error.frames) > 10_000
    lines = error.render().splitlines()
    assert len(lines) < 100
    assert lines[0] == "<deep>:3:5: error: call depth exceeded the limit of 10000 " \
                       "(unbounded recursion?)"
    assert any("more calls" in line for line in lines)
    assert lines[-2] == "  in function f (running forward)"      # the outermost frame
    assert lines[3] == "  in function f, called at <deep>:3:5 (running forward)"


def test_check_errors_render_one_after_another():
    with pytest.raises(CheckErrors) as info:
        rlang.loads("function f(x!)\n    x! += x!\n    y → 1\nend\n", file="<two>")
    rendered = info.value.render()
    assert rendered == "\n".join(e.render() for e in info.value.errors)
    headers = [ln for ln in rendered.splitlines() if ": error: " in ln]
    assert [h.split(": error:")[0] for h in headers] == ["<two>:2:11", "<two>:3:5"]
    assert str(info.value).count("<two>:") == 2


def test_a_parse_error_says_what_was_expected():
    with pytest.raises(ParseError) as info:
        rlang.loads("function f(x!)\n    x! += (1 + \nend\n", file="<parse>")
    lines = info.value.render().splitlines()
    assert lines[0].startswith("<parse>:3:")
    assert "expected" in lines[0]
    assert lines[1] == "    3 | end"


def test_a_reversibility_error_backward_points_at_the_forward_source():
    m = rlang.loads("function f(x!)\n    if (x! > 0, x! > 5)\n        x! += 10\n    end\nend\n",
                    file="<if>")
    error = caught(~m.f, 7)
    assert isinstance(error, ReversibilityError)
    lines = error.render().splitlines()
    assert lines[1] == "    2 |     if (x! > 0, x! > 5)"
    assert lines[-2] == "  in function f (running backward)"


def test_the_kinds_of_errors():
    assert issubclass(CheckErrors, CheckError)
    for cls in (ParseError, CheckError, ReversibilityError, RlangRuntimeError):
        assert issubclass(cls, RlangError)
