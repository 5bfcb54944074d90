"""The `with …` lines of compiled errors (Note [Frame variables in compiled errors],
rlang/backends/llvm/report.py): every frame lists its variables at the failure as the
interpreter's does, for every kind of check, every value type, forward and backward;
derivative passes list none."""
import numpy as np
import pytest

import rlang

SOURCE = """
function inner!(y!: f64, x: f64[:], k: i64)
    s ← 0.5
    for i = 0:k
        t ← 1.0
        y! += x[i + 1] * t
        t → 1.0
    end
    s → 0.5
end

function outer!(y!: f64, x: f64[:], k: i64)
    u ← [1, 2, 3]
    inner!(y!, x, k)
    u → [1, 2, 3]
end

function kinds!(a!: fixed, b!: ulog, c!: complex, d!: bool, e!: i32, f!: f32, n: i64)
    st ← stack(f64)
    v ← 2.5
    PUSH(st, v)
    w ← zeros(f64, n)
    w[n - 1] += 1.0
    POP(st, v)
    v → 2.5
    w[n - 1] -= 1.0
    w[n] += 1.0
    w → zeros(f64, n)
    st → stack(f64)
end

function branch!(y!: f64, x: f64)
    t ← x * 2.0
    y! += t * t
    if (y! > 100.0, y! > 100.5)
        y! += 1.0
    end
    t → x * 2.0
end

function down!(y!: f64, n: i64)
    if n > 0
        m ← n - 1
        down!(y!, m)
        m → n - 1
    else
        z ← 1 // n
        z → 1 // n
    end
end

# forward, t is freed unchecked; backward, `t ← 5.0` then `t → x` fails
function unchecked!(y!: f64, x: f64)
    t ← x
    y! += t * x
    @invcheckoff t → 5.0
end

function split!(y!: f64, k: i64)
    q ← 10 // k
    y! += f64(q)
    q → 10 // k
end
"""


def rendered(module, name, args, inverse=False) -> tuple:
    function = ~module[name] if inverse else module[name]
    with pytest.raises(rlang.RlangError) as caught:
        function(*args)
    return type(caught.value).__name__, caught.value.render()


def same(name, args, inverse=False) -> str:
    expected = rendered(rlang.loads(SOURCE, backend="interp"), name, args, inverse)
    got = rendered(rlang.loads(SOURCE, backend="llvm"), name, args, inverse)
    assert got == expected
    return got[1]


def test_a_bounds_check_in_a_loop_of_a_callee():
    text = same("outer!", [0.0, np.array([0.5, 1.0, 2.0]), 2])
    assert "with y! = 3.0, x = [0.5, 1.0, 2.0], k = 2, s = 0.5, t = 1.0" in text
    assert "with y! = 0.0, x = [0.5, 1.0, 2.0], k = 2, u = [1, 2, 3]" in text


def test_every_kind_of_value():
    from rlang import Fixed, ULog

    args = [Fixed.from_value(1.25), ULog.from_value(2.0), 1.0 - 2.0j, True, rlang.I32(7),
            rlang.F32(0.1), 12]
    text = same("kinds!", args)
    assert "a! = 1.25, b! = 2.0, c! = 1.0 - 2.0im, d! = true, e! = 7, f! = 0.1" in text
    assert "st = [], w = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, …]" in text


def test_a_postcondition_in_the_backward_run():
    text = same("branch!", [101.0, 0.1], inverse=True)
    assert "running backward" in text and "with y! = 100.0, x = 0.1, t = 0.2" in text


def test_a_deep_recursion_lists_every_recorded_frame():
    text = same("down!", [0.0, 5])
    assert text.count("with y! = 0.0") == 6 and text.count(", m = ") == 5
    assert "with y! = 0.0, n = 0\n" in text


@pytest.mark.parametrize("depth", [63, 64, 65, 200])
def test_deep_chains_show_both_ends_and_the_true_count(depth):
    """Note [Deep call chains] (rlang/backends/abi.py): the innermost frames, a ring
    of the outermost ones, and the number left out between them."""
    text = same("down!", [0.0, depth])
    assert text.count("  in function down!") == min(depth + 1, 15)
    if depth + 1 > 15:
        assert f"… {depth + 1 - 15} more calls …" in text
        assert f"with y! = 0.0, n = {depth}, m = {depth - 1}" in text     # outermost


def test_unbounded_recursion_reports_the_depth_limit_as_the_interpreter_does():
    source = SOURCE + """
function forever!(y!: f64, n: i64)
    m ← n + 1
    forever!(y!, m)
    m → n + 1
end
"""
    errors = [rendered(rlang.loads(source, backend=b), "forever!", [0.0, 0])
              for b in ("interp", "llvm")]
    assert errors[0] == errors[1] and "call depth exceeded" in errors[1][1]
    assert "… 9986 more calls …" in errors[1][1]


def test_an_integer_division_while_allocating():
    text = same("split!", [0.0, 0])
    assert "with y! = 0.0, k = 0" in text


def test_gradient_passes_list_no_variables():
    m = rlang.loads(SOURCE, backend="llvm")
    with pytest.raises(rlang.RlangError) as caught:
        rlang.gradient(m["unchecked!"], [0.0, 2.0], "y!")
    assert "running backward" in caught.value.render()
    assert "with " not in caught.value.render()


def test_reports_pass_array_addresses_uncaptured():
    """Note [Reports do not capture] (backends/llvm/report.py): the addresses of the arrays and
    stacks a report shows go to `rev_report_N` as uncaptured arguments; the reporting
    function itself turns no pointer into an integer, so LLVM can still tell its
    ancillas' memory from the parameters'."""
    from rlang.backends.llvm.emit import emit_module
    from rlang.backends.llvm.report import _NO_CAPTURE
    from rlang.ir.nodes import ArrayType
    from rlang.lower.statements import lower

    unit = rlang.loads(SOURCE).unit
    module = emit_module(lower(unit, "kinds!", ("fixed", "ulog", "complex", "bool", "i32",
                                                "f32", "i64"), False, True))
    helpers = [fn for fn in module.functions if fn.name.startswith("rev_report_")]
    assert helpers and all(fn.linkage == "internal" for fn in helpers)
    for fn in helpers:
        assert all(_NO_CAPTURE in str(arg.attributes) for arg in fn.args[4::2])
    reporting = [fn for fn in module.functions if fn.name.startswith("rev_kinds")
                 and not fn.name.endswith("_pyentry")]      # (it checks data alignment)
    assert reporting and all("ptrtoint" not in str(fn) for fn in reporting)
    assert any("rev_report_" in str(fn) for fn in reporting)               # called
    outer = emit_module(lower(unit, "outer!", ("f64", ArrayType("f64", 1), "i64"), False,
                              True))
    assert "ptrtoint" not in "".join(str(fn) for fn in outer.functions
                                     if not fn.name.startswith("rev_report_")
                                     and not fn.name.endswith("_pyentry"))
