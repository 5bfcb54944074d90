"""Reading files and resolving `include`s (rlang/frontend/loader.py; LANGUAGE.md §2, §4, §11):
relative paths, nesting, each file once, cycles, `std/…`, and files that cannot be
read.  Every failure is a ParseError pointing at the include (or the file).
"""
from __future__ import annotations

import pytest

import rlang
from rlang.errors import ParseError
from rlang.frontend.loader import STD_DIR, load_unit, loads_unit


def test_relative_includes_resolve_against_the_including_file(tmp_path, write_rev):
    write_rev(tmp_path, "lib/inner/leaf.rev", """
        const LEAF = 1000
        function leaf(x!)
            x! += LEAF
        end
    """)
    write_rev(tmp_path, "lib/mid.rev", """
        include "inner/leaf.rev"
        function mid(x!)
            leaf(x!)
            x! += 10
        end
    """)
    main = write_rev(tmp_path, "app/main.rev", """
        include "../lib/mid.rev"
        function main()
            x ← 1
            mid(x)
        end
    """)
    m = rlang.load(main)
    assert m.run_main() == [("x", 1011)]
    assert set(m.functions) == {"main", "mid", "leaf"}


def test_a_file_included_twice_is_loaded_once(tmp_path, write_rev):
    write_rev(tmp_path, "shared.rev", """
        const K = 5
        function shared(x!)
            x! += K
        end
    """)
    write_rev(tmp_path, "a.rev", 'include "shared.rev"\nfunction fa(x!)\n    shared(x!)\nend\n')
    write_rev(tmp_path, "sub/b.rev", 'include "../shared.rev"\n'
                                     'function fb(x!)\n    shared(x!)\nend\n')
    main = write_rev(tmp_path, "main.rev", """
        include "a.rev"
        include "sub/b.rev"
        include "shared.rev"
        function main()
            x ← 0
            fa(x)
            fb(x)
        end
    """)
    unit = load_unit(str(main))
    assert len(unit.included_programs) == 3
    assert rlang.load(main).run_main() == [("x", 10)]


def test_two_files_defining_one_function_is_an_error(tmp_path, write_rev):
    write_rev(tmp_path, "one.rev", "function f(x!)\n    INC(x!)\nend\n")
    main = write_rev(tmp_path, "main.rev", 'include "one.rev"\n'
                                           'function f(x!)\n    DEC(x!)\nend\n')
    with pytest.raises(rlang.CheckErrors, match="defined twice"):
        rlang.load(main)


@pytest.mark.parametrize("files, start", [
    ({"self.rev": 'include "self.rev"\n'}, "self.rev"),
    ({"a.rev": 'include "b.rev"\n', "b.rev": 'include "a.rev"\n'}, "a.rev"),
    ({"a.rev": 'include "sub/b.rev"\n', "sub/b.rev": 'include "c.rev"\n',
      "sub/c.rev": 'include "../a.rev"\n'}, "a.rev"),
])
def test_include_cycles_are_parse_errors_at_the_closing_include(tmp_path, write_rev, files,
                                                                start):
    for name, text in files.items():
        write_rev(tmp_path, name, text)
    with pytest.raises(ParseError, match="include cycle") as info:
        rlang.load(tmp_path / start)
    assert info.value.span.line == 1
    assert info.value.render().splitlines()[1].startswith("    1 | include \"")


def test_std_includes_resolve_inside_the_package(tmp_path, write_rev):
    assert (STD_DIR / "blas.rev").is_file()
    # a local std/ folder next to the program does not shadow the standard library
    write_rev(tmp_path, "std/blas.rev", "function i_sum(x!)\n    INC(x!)\nend\n")
    main = write_rev(tmp_path, "main.rev", """
        include "std/blas.rev"
        function main()
            x ← [1.0, 2.0, 3.5]
            s ← 0.0
            i_sum(s, x)
        end
    """)
    store = dict(rlang.load(main).run_main())
    assert store["s"] == 6.5


def test_std_includes_from_source_text():
    m = rlang.loads('include "std/blas.rev"\n')
    assert "i_dot" in m.functions


def test_an_unknown_std_file_is_a_clean_error():
    with pytest.raises(ParseError, match="file not found"):
        rlang.loads('include "std/nope.rev"\n')


def test_a_missing_include_is_an_error_at_the_include(tmp_path, write_rev):
    main = write_rev(tmp_path, "main.rev", '# a comment\ninclude "gone.rev"\n')
    with pytest.raises(ParseError, match="file not found") as info:
        rlang.load(main)
    assert info.value.span.file == str(main) and info.value.span.line == 2
    assert "gone.rev" in info.value.message


def test_a_missing_file_is_a_parse_error(tmp_path):
    with pytest.raises(ParseError, match="file not found") as info:
        rlang.load(tmp_path / "missing.rev")
    assert str(tmp_path / "missing.rev") in info.value.message


def test_a_directory_is_not_a_program(tmp_path, write_rev):
    with pytest.raises(ParseError, match="directory"):
        rlang.load(tmp_path)
    (tmp_path / "folder").mkdir()
    main = write_rev(tmp_path, "main.rev", 'include "folder"\n')
    with pytest.raises(ParseError, match="directory") as info:
        rlang.load(main)
    assert info.value.span.line == 1


@pytest.mark.parametrize("data, line", [
    (b"\xff\xfe function", 1),
    (b"function f(x!)\n    INC(x!)\n# caf\xe9\nend\n", 3),
])
def test_a_file_that_is_not_utf8_is_a_parse_error(tmp_path, data, line):
    path = tmp_path / "latin1.rev"
    path.write_bytes(data)
    with pytest.raises(ParseError, match="not UTF-8") as info:
        rlang.load(path)
    assert info.value.span.line == line
    assert "Traceback" not in info.value.render()


def test_an_included_file_that_is_not_utf8(tmp_path, write_rev):
    (tmp_path / "bad.rev").write_bytes(b"\x80\x81")
    main = write_rev(tmp_path, "main.rev", 'include "bad.rev"\n')
    with pytest.raises(ParseError, match="not UTF-8"):
        rlang.load(main)


def test_a_file_with_a_nul_byte_is_a_parse_error(tmp_path):
    path = tmp_path / "nul.rev"
    path.write_bytes(b"function f(x!)\n\x00\nend\n")
    with pytest.raises(ParseError) as info:
        rlang.load(path)
    assert info.value.span.line == 2


def test_utf8_source_with_greek_names_and_unicode_operators(tmp_path, write_rev):
    path = write_rev(tmp_path, "greek.rev", """
        # Unicode identifiers and operators (LANGUAGE.md §2)
        function rot(a!, b!, θ)
            ROT(a!, b!, θ)
        end
        function main()
            α ← 1.0
            β ← 0.0
            rot(α, β, 0.0)
            t ← 1
            t → 1
        end
    """)
    assert rlang.load(path).run_main() == [("α", 1.0), ("β", 0.0)]


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "crlf.rev"
    path.write_bytes(b"function main()\r\n    x \xe2\x86\x90 2\r\nend\r\n")
    assert rlang.load(path).run_main() == [("x", 2)]


def test_loads_unit_keeps_the_given_file_name():
    unit = loads_unit("function f(x!)\n    INC(x!)\nend\n", "virtual.rev")
    assert unit.file == "virtual.rev"
    assert unit.functions["f"].span.file == "virtual.rev"


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.rev"
    path.write_bytes(b"\xef\xbb\xbffunction main()\n    x \xe2\x86\x90 2\nend\n")
    assert rlang.load(path).run_main() == [("x", 2)]


def test_a_missing_file_has_a_span_naming_it(tmp_path, monkeypatch):
    # #23: `rlang.load("nonexistent.rev")` said "file not found" with no span at all
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParseError) as info:
        rlang.load("nonexistent.rev")
    assert info.value.span.file == "nonexistent.rev"
    assert str(info.value) == "nonexistent.rev: file not found: nonexistent.rev"
    assert info.value.render().splitlines() == [
        "nonexistent.rev: error: file not found: nonexistent.rev",
        f"  note: a relative path is taken from the current directory, {tmp_path}"]


def test_a_missing_include_says_where_it_was_looked_for(tmp_path, write_rev):
    (tmp_path / "lib").mkdir()
    main = write_rev(tmp_path / "lib", "main.rev", 'include "gone.rev"\n')
    with pytest.raises(ParseError) as info:
        rlang.load(main)
    assert info.value.span.line == 1
    assert info.value.notes == (f"an include's path is taken from the directory of the "
                                f"including file (here {tmp_path / 'lib'}/)",)
    with pytest.raises(ParseError) as info:
        rlang.loads('include "std/nope.rev"\n')
    assert info.value.message == "file not found: std/nope.rev"
    assert "std/blas.rev" in info.value.notes[0]
