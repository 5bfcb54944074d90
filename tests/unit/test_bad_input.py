"""Inputs that ended in an internal error (exit 70, a foreign exception) and are the
caller's mistakes: each is now an RlangError saying so, the same on every backend."""
from __future__ import annotations

import pytest

import rlang

SOURCE = """
function f(y!, a)
    y! += a * a
end
function main()
    x ← 2.0
    y ← 0.0
    f(y, x)
end
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("loss, message", [
    ("a.im", "`.im` needs a complex value, got an f64"),
    ("y!.re", "`.re` needs a complex value, got an f64"),
])
def test_a_field_of_a_real_loss_is_the_same_type_error_on_every_backend(backend, loss,
                                                                        message):
    m = rlang.loads(SOURCE, backend=backend)
    for driver in (rlang.gradient, rlang.hessian):
        with pytest.raises(rlang.RlangTypeError, match=message.replace(".", r"\.")):
            driver(m.f, [1.0, 2.0], loss)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_loss_that_names_no_parameter_is_refused_before_compiling(backend):
    m = rlang.loads(SOURCE, backend=backend)
    with pytest.raises(rlang.RlangError, match="`x` is not a parameter of `main`; it has "
                                               "no parameters"):
        rlang.gradient(m.main, [], "x")


def test_long_identifiers_compile(tmp_path):
    # LLVM cuts local names at 1,024 characters: two 2,000-character ancillas were one
    long = "v" * 2000
    source = (f"function f(y!, a)\n    {long}1 ← a\n    {long}2 ← a * 2.0\n"
              f"    y! += {long}1 * {long}2\n    {long}2 → a * 2.0\n    {long}1 → a\nend\n")
    expected = rlang.loads(source, backend="interp").f(1.0, 3.0)
    compiled = rlang.loads(source, backend="llvm")
    assert compiled.f(1.0, 3.0) == expected == (19.0, 3.0)
    assert rlang.gradient(compiled.f, [1.0, 3.0], "y!") == (1.0, 12.0)


def test_long_parameter_names_compile():
    """Parameters are LLVM arguments: two 2,000-character ones were one too (fuzz
    seed 5001 case 39548), and the C header of `rlang compile` names them in full."""
    long = "v" * 2000
    source = f"function f(y!, {long}1, {long}2)\n    y! += {long}1 * {long}2\nend\n"
    compiled = rlang.loads(source, backend="llvm")
    assert compiled.f(1.0, 3.0, 2.0) == (7.0, 3.0, 2.0)
    assert (~compiled.f)(7.0, 3.0, 2.0) == (1.0, 3.0, 2.0)


def test_compile_to_a_path_that_cannot_be_written_is_an_error(cli, tmp_path):
    source = tmp_path / "f.rev"
    source.write_text(SOURCE)
    code, out, err = cli("compile", str(source), "--emit", "obj", "-o",
                         str(tmp_path / "no" / "such" / "dir" / "f.o"))
    assert code == 1 and "cannot write" in err and "No such file or directory" in err
    assert "internal error" not in err


@pytest.mark.parametrize("args", [None, 5, "ab", {"a": 1.0}])
@pytest.mark.parametrize("driver", ["gradient", "hessian", "check_grad", "jacobian"])
def test_arguments_that_are_not_a_sequence_are_refused(driver, args):
    m = rlang.loads(SOURCE, backend="interp")
    call = getattr(rlang, driver)
    extra = () if driver == "jacobian" else ("y!",)
    with pytest.raises(rlang.RlangTypeError, match=f"rlang.{driver} takes the arguments"):
        call(m.f, args, *extra)
    with pytest.raises(rlang.RlangTypeError, match="takes a function of a loaded program"):
        call(len, [1.0, 2.0], *extra)


def test_loads_takes_text_and_a_file_name_or_none():
    with pytest.raises(rlang.RlangError, match="takes the program's text as a str, got bytes"):
        rlang.loads(SOURCE.encode())
    assert rlang.loads(SOURCE, file=None).f(0.0, 2.0) == (4.0, 2.0)


def test_a_missing_function_is_a_rlang_error_that_names_the_functions():
    m = rlang.loads(SOURCE, backend="interp")
    with pytest.raises(AttributeError) as attribute:
        m.nosuch
    with pytest.raises(KeyError) as key:
        m["nosuch"]
    for error in (attribute.value, key.value):
        assert isinstance(error, rlang.RlangError)
        assert str(error) == "the program has no function `nosuch`; its functions: `f`, `main`"
    assert not hasattr(m, "nosuch") and hasattr(m, "f")


def test_version(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"rlang {rlang.__version__}"


# ---------------------------------------------------------------- limits (docs/language-decisions.md)

def test_a_statement_past_the_token_limit_is_a_parse_error_at_its_place():
    from rlang.frontend.parser import MAX_STATEMENT_TOKENS

    terms = MAX_STATEMENT_TOKENS // 2 + 1
    source = "function f(x, y)\n    x += " + " + ".join(["y"] * terms) + "\nend\n"
    with pytest.raises(rlang.ParseError, match="a statement of more than 250,000 tokens") as e:
        rlang.loads(source, backend="interp")
    assert e.value.span.line == 2


def test_a_name_past_the_length_limit_is_a_parse_error_at_its_place():
    source = "function f(y)\n    y += " + "v" * 4097 + "\nend\n"
    with pytest.raises(rlang.ParseError, match="a name longer than 4,096 characters") as e:
        rlang.loads(source, backend="interp")
    assert (e.value.span.line, e.value.span.col) == (2, 10)
    fine = "function f(" + "v" * 4096 + ", y)\n    y += " + "v" * 4096 + "\nend\n"
    assert rlang.loads(fine, backend="interp").f(1.5, 1.0) == (1.5, 2.5)


def test_a_check_past_its_time_limit_stops_with_an_error_at_a_statement(monkeypatch):
    from rlang.frontend import check

    monkeypatch.setattr(check, "MAX_CHECK_SECONDS", -1.0)
    with pytest.raises(rlang.CheckError, match="the static check was stopped after") as e:
        rlang.loads("function f(x)\n    x += 1\nend\n", backend="interp")
    assert e.value.span.line == 2


def test_tokens_are_not_looked_up_one_by_one_while_building_the_tree(monkeypatch):
    """Each token lark looks up by name and misses raises an AttributeError whose cost
    grows with the depth of the transform (a 40,000-term sum took 3.6 s to build, the
    check was quadratic): the tree builder takes tokens as they are."""
    from rlang.frontend import parser

    looked_up = []
    monkeypatch.setattr(parser._ToAst, "__default_token__",
                        lambda self, token: looked_up.append(token) or token, raising=False)
    parser.parse("function f(x, y)\n    x += " + " + ".join(["y"] * 100) + "\nend\n")
    assert looked_up == []


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_an_array_literal_past_numpys_rank_is_refused_alike_on_every_backend(backend):
    """70 nested brackets were NumPy's error on the interpreter and ran on llvm."""
    def program(n):
        literal = "[" * n + "1.0" + "]" * n
        return f"function main()\n    a ← {literal}\n    a → {literal}\nend\n"

    assert rlang.loads(program(64), backend=backend).run_main() == []
    for n in (65, 70):
        with pytest.raises(rlang.ParseError, match="arrays have at most 64"):
            rlang.loads(program(n), backend=backend)


def test_an_array_type_past_numpys_rank_is_refused():
    with pytest.raises(rlang.ParseError, match="an array type of 65 dimensions") as e:
        rlang.loads("function f(a: f64[" + ":, " * 64 + ":])\nend\n")
    assert e.value.span.line == 1


def test_no_thread_for_the_deep_stack_is_a_clear_error(monkeypatch):
    """Under memory pressure `Thread.start` fails ("can't start new thread": fuzz
    seed 5003 case 39302, while CI ran beside the fuzzer): an RlangError, not a
    traceback."""
    import threading

    from rlang import deep

    def refuse(self):
        raise RuntimeError("can't start new thread")

    m = rlang.loads("function f(x)\n    x += 1.0\nend\n", backend="interp")
    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(rlang.RlangRuntimeError, match="could not start its worker thread"):
        deep.run_deep(m.interpreter.call, "f", [1.0], False)
