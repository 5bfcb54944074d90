"""Defects the fuzzer (tests/fuzz/, issue #23) found on the llvm backend, each fixed:
a program runs the same on llvm as on the interpreter, or is refused cleanly."""
from __future__ import annotations

import dataclasses

import numpy as np

import pytest

import rlang
from rlang.lower.statements import lower, type_of_value
from rlang.numbers import ULog


def _tree_size(node, budget: list) -> None:
    """Count the nodes of an IR expression as a walk over it visits them (a shared
    node once per path to it), giving up past the budget."""
    budget[0] -= 1
    if budget[0] < 0:
        raise OverflowError("the tree is too large")
    if dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            _tree_size(getattr(node, field.name), budget)
    elif isinstance(node, (tuple, list)):
        for item in node:
            _tree_size(item, budget)


def _visits(source: str, name: str, args) -> int:
    unit = rlang.loads(source, backend="interp").unit
    module = lower(unit, name, tuple(type_of_value(a) for a in args), False, True)
    budget = [10 ** 6]
    for fn in module.functions.values():
        _tree_size(fn.body, budget)
    return 10 ** 6 - budget[0]


@pytest.mark.parametrize("expr, args", [
    (" + ".join(["l"] * 40), (0.0, ULog.from_value(2.0))),
    (" - ".join(["l"] * 40), (0.0, ULog.from_value(2.0))),
], ids=["ulog sum", "ulog difference"])
def test_a_long_ulog_expression_lowers_to_ir_of_linear_size(expr, args):
    """A ulog sum uses each operand three times: the IR of 40 terms was a tree of
    3^40 nodes (8 terms did not compile in minutes)."""
    source = f"function f(y: f64, l: ulog)\n    y += f64({expr})\nend\n"
    assert _visits(source, "f", args) < 20_000
    outcomes = []
    for backend in ("llvm", "interp"):
        try:
            outcomes.append(rlang.loads(source, backend=backend).f(*args))
        except rlang.RlangError as error:       # l - l - … is negative: both refuse it
            outcomes.append((type(error), error.message))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("op", ["*", "/"])
def test_a_long_complex_product_or_quotient_lowers_to_ir_of_linear_size(op):
    source = f"function f(y: complex, z: complex)\n    y += {f' {op} '.join(['z'] * 40)}\nend\n"
    assert _visits(source, "f", (0j, 1 + 0.1j)) < 100_000     # 6^40 before
    got = rlang.loads(source, backend="llvm").f(0j, 1 + 0.1j)[0]
    expected = rlang.loads(source, backend="interp").f(0j, 1 + 0.1j)[0]
    assert abs(got - expected) <= 1e-12 * abs(expected)


@pytest.mark.parametrize("expr", ["cos(sqrt(complex(x ** 2, x + 1.0)))",
                                  "exp(log(sin(sqrt(z)))) ** z", "tanh(cosh(asin(acos(z))))"])
def test_nested_complex_functions_lower_to_ir_of_linear_size(expr):
    """cmath's formulas use their argument's parts many times: as a tree, the IR of
    `cos(sqrt(…))` was 150,000 lines of LLVM IR and took minutes to compile (the CI
    fuzz slice's program seed 2026 case 203)."""
    source = f"function f(y: complex, z: complex, x: f64)\n    y += {expr}\nend\n"
    args = (0j, 0.3 + 0.4j, 0.7)
    assert _visits(source, "f", args) < 40_000             # 755,354 for the last before
    got = rlang.loads(source, backend="llvm").f(*args)[0]
    expected = rlang.loads(source, backend="interp").f(*args)[0]
    assert abs(got - expected) <= 1e-12 * abs(expected)


NESTED = "cos(sqrt(cos(sqrt(cos(sqrt(z))))))"
CONDITIONS = f"""
function branch(y, z: complex)
    if (abs({NESTED}) > 0.5, abs({NESTED}) > 0.5)
        y += 1.0
    else
        y -= 1.0
    end
end

function counted(y, z: complex)
    k ← 0
    from k == 0 do
        k += 1
        y += 1.0
    until abs({NESTED}) * 2.0 < f64(k)
    k → i64(floor(abs({NESTED}) * 2.0)) + 1
end

function ranged(y, z: complex, l: ulog)
    for i = 0:i64(floor(abs({NESTED}) * 3.0 + f64(l + l + l)))
        y += f64(i)
    end
end

function looped(y, z: complex)
    while (y < abs({NESTED}) * 3.0, y > 0.0)
        y += 1.0
    end
end
"""


@pytest.mark.parametrize("name, args", [
    ("branch", (0.0, 0.3 + 0.4j)), ("counted", (0.0, 0.3 + 0.4j)),
    ("ranged", (0.0, 0.3 + 0.4j, ULog.from_value(2.0))), ("looped", (0.0, 2.3 - 0.4j))])
def test_nested_functions_in_conditions_and_ranges_lower_to_ir_of_linear_size(name, args):
    """Note [Lets in conditions] (rlang/ir/nodes.py): where no ancilla can be made
    around the statement, the shared temporaries are Lets; `abs(cos(sqrt(z)))` in
    an `if` took 12 s to compile, three levels of it did not finish."""
    assert _visits(CONDITIONS, name, args) < 50_000          # over 10^6 before
    expected = rlang.loads(CONDITIONS, backend="interp")
    got = rlang.loads(CONDITIONS, backend="llvm")
    assert getattr(got, name)(*args) == getattr(expected, name)(*args)
    assert getattr(got, name)(*args)[0] != 0.0
    gradients = [rlang.gradient(getattr(m, name), list(args), loss=0) for m in (got, expected)]
    assert gradients[0] == gradients[1]


def test_f32_constants_round_as_at_run_time():
    """Folding f32(0.1) kept 0.1 unrounded: llvm printed f64(f32(0.1)) as 0.1."""
    source = """
    function main()
        c ← f32(0.1) + f64(0.2)
        h ← fixed(f32(0.1))
        a ← f64(f32(0.1))
    end
    """
    expected = rlang.loads(source, backend="interp").run_main()
    got = rlang.loads(source, backend="llvm").run_main()
    assert [(n, float(v)) for n, v in got] == [(n, float(v)) for n, v in expected]
    assert dict(got)["a"] == 0.10000000149011612


def test_adding_zero_to_negative_zero_gives_positive_zero():
    """IEEE: -0.0 + 0.0 is +0.0; the known-zeros pass dropped `w += 0.0`."""
    source = "function main()\n    w ← -0.0\n    w += 0.0\n    v ← -0.0\n    v -= 0.0\nend\n"
    got = dict(rlang.loads(source, backend="llvm").run_main())
    assert str(got["w"]) == "0.0" and str(got["v"]) == "-0.0"


def test_deallocating_a_scalar_with_an_array_is_refused_cleanly():
    """It reached LLVM as a comparison of an i64 with an array (an internal error)."""
    source = """
    function move_into(total, k)
        n ← k
        total += n
        n → total
    end
    function main()
        total ← 10
        ~move_into(total, [[1e0]])
    end
    """
    with pytest.raises(rlang.RlangError) as interp:
        rlang.loads(source, backend="interp").run_main()
    with pytest.raises(rlang.RlangTypeError, match="cannot be deallocated with an f64"):
        rlang.loads(source, backend="llvm").run_main()
    assert "deallocation check failed" in interp.value.message


@pytest.mark.parametrize("literal", ["-1e309", "2.5", "1e300"])
def test_an_integer_deallocated_against_a_float_no_integer_equals_is_refused(literal):
    """Converted to i64 the literal was truncated and the check could pass (llvm ran
    `k → -1e309` with k = 0; the interpreter's check fails)."""
    source = f"function main()\n    k ← 0\n    k → {literal}\nend\n"
    with pytest.raises(rlang.ReversibilityError, match="deallocation check failed"):
        rlang.loads(source, backend="interp").run_main()
    with pytest.raises(rlang.RlangTypeError, match="which no integer equals"):
        rlang.loads(source, backend="llvm").run_main()
    fine = "function main()\n    k ← 2\n    k → 2.0\nend\n"
    assert rlang.loads(fine, backend="llvm").run_main() == []


@pytest.mark.parametrize("unchecked", ["@invcheckoff k → 4.9e-324", "@invcheckoff k → 2.5"])
def test_an_unchecked_deallocation_against_such_a_float_runs(unchecked):
    """With the checks off the value is never compared: both backends run it (llvm
    refused it; fuzz seed 4001 case 14720)."""
    source = f"function main()\n    k ← 0\n    {unchecked}\n    y ← 1.5\nend\n"
    for backend in ("interp", "llvm"):
        assert rlang.loads(source, backend=backend).run_main() == [("y", 1.5)]


def test_zeros_of_something_that_is_not_a_type_is_the_interpreters_type_error():
    source = "function main()\n    m ← zeros(f64 + f64, 2)\n    m → zeros(f64 + f64, 2)\nend\n"
    _same_type_error_on_both(source)


def _same_type_error_on_both(source: str) -> str:
    """The message of the RlangTypeError both backends raise running `main`, which
    must be the same, at the same span."""
    errors = []
    for backend in ("interp", "llvm"):
        with pytest.raises(rlang.RlangTypeError) as error:
            rlang.loads(source, backend=backend).run_main()
        errors.append((error.value.message, error.value.span))
    assert errors[0] == errors[1]
    return errors[0][0]


@pytest.mark.parametrize("update, declaration", [
    ("h *= 9223372036854775808", "h ← ulog(2.0)"), ("x += 9223372036854775808", "x ← 0.0"),
    ("s += 9223372036854775808", "s ← f32(0.0)"), ("q += 9223372036854775808", "q ← fixed(0)")])
def test_an_integer_literal_past_i64_is_the_same_error_in_every_context(update, declaration):
    """The literal is an i64 before it adapts to its context: llvm ran `h *= 2^63` on
    a ulog (fuzz seed 4003 case 3956), where the interpreter refuses the literal."""
    source = f"function main()\n    {declaration}\n    {update}\nend\n"
    message = _same_type_error_on_both(source)
    assert "integer literal 9223372036854775808 is out of the range of i64" in message


F32_UPDATES = """
function add(x: f32, v)
    x += v
end

function sub(x: f32, v)
    x -= v
end

function add_int(x: f32, k: i64)
    x += k
end

function element(a: f32[:], v)
    a[0] += v * 1.0
end
"""


@pytest.mark.parametrize("name, x, v, expected", [
    ("add", 1.0, 2.0 ** -24 + 2.0 ** -50, 1.0 + 2.0 ** -23),
    ("sub", 1.0, -(2.0 ** -24 + 2.0 ** -50), 1.0 + 2.0 ** -23),
    ("add_int", 1.0, 2 ** 24 + 1, 2.0 ** 24 + 2),
])
def test_an_f32_update_by_a_wider_value_rounds_once(name, x, v, expected):
    """Note [f32 updates]: `x += v` on an f32 with an f64 or integer `v` is the f64
    sum rounded once (llvm rounded `v` to f32 first: fuzz seed 4001 case 70918)."""
    for backend in ("interp", "llvm"):
        m = rlang.loads(F32_UPDATES, backend=backend)
        got, _ = getattr(m, name)(np.float32(x), v)
        assert float(got) == expected, backend
    a = {backend: np.ones(1, dtype=np.float32) for backend in ("interp", "llvm")}
    for backend, array in a.items():
        rlang.loads(F32_UPDATES, backend=backend).element(array, 2.0 ** -24 + 2.0 ** -50)
    assert a["llvm"][0] == a["interp"][0] == np.float32(1.0 + 2.0 ** -23)


INTEGER_AGAINST_FLOAT = """
function g(k: i64, x)
    t ← k
    t → x
end

function take!(y!, x)
    t ← x
    y! += t
    t → y!
end

function main()
    y ← 0
    ~take!(y, 1e308)
end
"""


@pytest.mark.parametrize("x", [3.5, 1e308, -1e300, 3.000000001, 3.0, float("nan")])
def test_an_integer_deallocated_against_a_float_compares_as_floats(x):
    """Note [Integers deallocated against floats] (rlang/lower/statements.py): llvm
    converted the float to the integer's type and passed `t → 1e308` with t = 0
    (fuzz seed 5001 case 50325) and `t → 3.5` with t = 3."""
    outcomes = []
    for backend in ("interp", "llvm"):
        try:
            outcomes.append(rlang.loads(INTEGER_AGAINST_FLOAT, backend=backend).g(3, x))
        except rlang.RlangError as error:
            outcomes.append((type(error), error.message, error.span))
    assert outcomes[0] == outcomes[1]
    assert isinstance(outcomes[0], tuple) and (outcomes[0][0] is rlang.ReversibilityError) \
        == (abs(x - 3) > 1e-8 or x != x)
    expected = _error_of(rlang.loads(INTEGER_AGAINST_FLOAT, backend="interp").run_main)
    got = _error_of(rlang.loads(INTEGER_AGAINST_FLOAT, backend="llvm").run_main)
    assert got.render() == expected.render()
    assert "t = 0, expected 1e308" in got.message


def _error_of(run):
    with pytest.raises(rlang.RlangError) as error:
        run()
    return error.value


def test_the_cache_key_of_a_loaded_program_is_a_digest_of_its_files(tmp_path):
    """The repr of the AST was the key: 43 s for a 9 MB program of long names (fuzz
    seed 5001 case 31332).  The digest still tells programs, paths and included
    files apart."""
    from rlang.backends.llvm.backend import _unit_key

    (tmp_path / "lib.rev").write_text("function g(x)\n    x += 1.0\nend\n")
    main = "include \"lib.rev\"\nfunction f(x)\n    g(x)\nend\n"
    for name in ("a.rev", "b.rev"):
        (tmp_path / name).write_text(main)
    keys = {name: rlang.load(tmp_path / name, backend="llvm").compiled._source_key
            for name in ("a.rev", "b.rev")}
    assert keys["a.rev"] != keys["b.rev"] and len(keys["a.rev"]) == 64
    unit = rlang.load(tmp_path / "a.rev", backend="llvm").unit
    assert [file for file, _ in unit.sources] == [str(tmp_path / "a.rev"),
                                                  str(tmp_path / "lib.rev")]
    before = _unit_key(unit)
    (tmp_path / "lib.rev").write_text("function g(x)\n    x += 2.0\nend\n")
    changed = rlang.load(tmp_path / "a.rev", backend="llvm")
    assert _unit_key(changed.unit) != before
    assert changed.f(1.0) == (3.0,)


def test_deallocating_against_zeros_no_array_can_hold_fails_the_check():
    """`v → zeros(f64, 2^63 - 1)`: the interpreter made a view of that shape, which
    NumPy refuses (an internal error: fuzz seed 5001 case 78557)."""
    source = ("function f(x)\n    v ← zeros(f64, 3)\n    v[1] += x\n"
              "    v → zeros(f64, 9223372036854775807)\nend\n")
    messages = []
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        for run in (lambda: m.f(0.5), lambda: rlang.gradient(m.f, [0.0], loss="x")):
            messages.append(_error_of(run).message)
    assert len(set(messages)) == 2 and messages[0] == messages[2]
    assert messages[0].startswith("deallocation check failed: v = [0.0, 0.5, 0.0], expected "
                                  "[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, …] (f64[:], "
                                  "shape (9223372036854775807,))")


@pytest.mark.parametrize("source, args", [
    ("function g(x, y)\n    y += x\nend\n", (1j, np.array([]))),
    ("function g(x, y)\n    y += x\nend\n", (np.array([]), np.array([True, False]))),
    ("function g(x, y: f64[:])\n    x += 1.0\nend\n", (1, np.array([]))),
    ("function g(a: fixed, z: complex)\n    a += z\nend\n", (rlang.Fixed.from_value(1.0), 1j)),
])
def test_type_errors_of_updates_are_the_interpreters_in_calls_and_hessians(source, args):
    """A Hessian with no float input returned [] on the interpreter without running f,
    where llvm reported the program's type error, in words of its own (`Name(id='y')`
    is an array: fuzz seed 5003 cases 51178 and 59214)."""
    errors = []
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        for run in (lambda: m.g(*args), lambda: rlang.hessian(m.g, list(args), loss=1)):
            error = _error_of(run)
            errors.append((type(error), error.message, error.span, error.notes))
    assert len(set(errors)) == 1, errors
    assert "(loop over its elements)" in errors[0][1] or "would not fit" in errors[0][1]


def test_empty_arrays_passed_together_to_a_writing_call_are_not_the_same_memory():
    """Found by the generated parallel loops of tests/backends/llvm/test_llvm_threads.py:
    the gradient pass of `total` passes `y` and its shadow, both empty ancillas that
    sit at one address on the stack, to `kernel`'s gradient, whose alias check took
    them for one array (and its message then failed with an IndexError)."""
    source = """
function kernel(y: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        y[i] += x[i] * x[i]
    end
end

function total(s, x: f64[:])
    y ← zeros(f64, length(x))
    kernel(y, x)
    for i = 0:length(x) - 1
        s += y[i]
    end
    ~kernel(y, x)
    y → zeros(f64, length(x))
end
"""
    for n in (0, 3):
        args = (0.0, np.linspace(0.0, 1.0, n))
        expected = rlang.gradient(rlang.loads(source, backend="interp").total, args, loss="s")
        got = rlang.gradient(rlang.loads(source, backend="llvm").total, args, loss="s")
        assert got[0] == expected[0]
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-12)


def test_an_index_summed_from_thousands_of_terms_compiles_in_linear_work(monkeypatch):
    """The passes that compare indices (rlang/ir/affine.py, first_writes.py) took
    the checks off every subexpression again at each level of a sum: quadratic in
    its terms, and `x[j + j + … + j]` of 30,000 terms did not compile in five
    minutes (the fuzzer's source seed 42 case 2582)."""
    from rlang.ir import nodes as ir

    terms = 1000
    deep = " + ".join(["j"] * terms)
    source = (f"function f(y: f64, x: f64[:])\n    s ← zeros(f64, 1)\n"
              f"    for j = 0:0\n        s[{deep}] += y\n        x[{deep}] += s[0]\n"
              f"        s[{deep}] -= y\n    end\n    s → zeros(f64, 1)\nend\n")
    calls = [0]
    unchecked = ir.unchecked

    def counted(e):
        calls[0] += 1
        return unchecked(e)

    monkeypatch.setattr(ir, "unchecked", counted)
    got = rlang.loads(source, backend="llvm").f(1.5, np.array([0.25, 2.0]))
    assert calls[0] < 20 * terms
    monkeypatch.undo()
    expected = rlang.loads(source, backend="interp").f(1.5, np.array([0.25, 2.0]))
    assert np.array_equal(got[1], expected[1]) and got[1][0] == 1.75
