"""Lowering of the number systems and of complex numbers to their representation
(rlang/lower/systems.py, rlang/lower/complex.py; Notes [Number systems in the IR] and
[Complex numbers in the IR], rlang/ir/nodes.py).

- fixed stays an IR type of its own, held as its raw Q20.43 integer: literals become
  raw constants, arithmetic stays fixed-typed, division is always checked;
- ulog is the f64 of its logarithm: `*=` and `/=` add and subtract logarithms, a
  product of ulogs adds the reinterpreted logarithms, a real made a ulog is a checked
  conversion;
- complex is two f64: an update is two updates of the parts, arithmetic is expanded
  on the parts, and an ancilla takes a `ComplexValue`.
"""
from __future__ import annotations

import math
import textwrap

import pytest

from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.ir import nodes as ir
from rlang.lower.statements import lower
from rlang.numbers import Fixed
from lowering_helpers import checked_unit, entry_of, lowered
from rlang.types_rules import BackendUnsupported

SOURCE = """
function grow(l!, m)
    l! *= m
    l! /= 2.0
end

function product(y!, a, b)
    y! += f64(a * b)
end

function to_log(l!, x)
    l! *= ulog(x)
end

function fixed_ops(q!, r)
    q! += r * 2
    q! += 1
    q! += r / r
end

function to_real(y!, q)
    y! += f64(q)
    y! += f64(i64(q))
end

function real_part(z!, x)
    z!.re += x
end

function cmul(z!, w)
    z! += w * w
end

function copy_complex(y!, w)
    t ← w
    y! += t.im
    t → w
end
"""


@pytest.fixture(scope="module")
def unit():
    return checked_unit(SOURCE, "systems.rev")


def test_the_representations():
    assert [ir.representation(t) for t in ("fixed", "ulog", "f32", "i64")] == \
        ["i64", "f64", "f32", "i64"]


def test_fixed_arithmetic_stays_fixed_on_raw_values(unit):
    module = lowered(unit, "fixed_ops", ("fixed", "fixed"))
    fn = entry_of(module)
    assert [p.type for p in fn.params] == ["fixed", "fixed"]
    times, plus_one, ratio = fn.body
    assert times.value == ir.Binary("*", ir.Read(fn.params[1]),
                                    ir.Const(Fixed.from_value(2).raw, "fixed"), "fixed")
    assert plus_one.value == ir.Const(1 << 43, "fixed")
    assert ratio.value.op == "/" and ratio.value.type == "fixed"
    assert module.sites[ratio.value.site].kind == "fixed_div"


def test_fixed_division_is_checked_without_invcheck(unit):
    fn = entry_of(lowered(unit, "fixed_ops", ("fixed", "fixed"), invcheck=False))
    assert fn.body[2].value.site is not None


def test_ulog_products_are_sums_of_logarithms(unit):
    """`l *= m; l /= 2.0`: add ℓm, subtract log 2 (checked not to be a division by
    zero); the inverse `l *= 2.0; l /= m` adds log 2 and subtracts ℓm, checked."""
    log2 = ir.Const(math.log(2.0), "ulog")
    forward = entry_of(lowered(unit, "grow", ("ulog", "ulog")))
    l, m = forward.params
    assert (l.type, m.type) == ("ulog", "ulog")
    assert all(s.target == ir.VarPlace(l) for s in forward.body)
    (plus, minus) = forward.body
    # `*= m` is checked not to be a multiplication by zero (it could not be undone)
    assert plus.op == "+=" and isinstance(plus.value, ir.Checked)
    assert plus.value.value == ir.Read(m)
    assert minus.op == "-=" and isinstance(minus.value, ir.Checked)
    assert minus.value.value == log2
    backward = entry_of(lowered(unit, "grow", ("ulog", "ulog"), True))
    (plus, minus) = backward.body
    assert (plus.op, plus.value) == ("+=", log2)
    assert minus.op == "-=" and isinstance(minus.value, ir.Checked)
    assert minus.value.value == ir.Read(backward.params[1])


def test_a_ulog_product_expression_adds_reinterpreted_logarithms(unit):
    fn = entry_of(lowered(unit, "product", ("f64", "ulog", "ulog")))
    (update,) = fn.body
    a, b = fn.params[1:]
    conversion = update.value
    assert isinstance(conversion, ir.Convert) and conversion.type == "f64"
    assert conversion.operand == ir.Reinterpret(ir.Binary(
        "+", ir.Reinterpret(ir.Read(a), "f64"), ir.Reinterpret(ir.Read(b), "f64"), "f64"),
        "ulog")


def test_a_real_made_a_ulog_is_a_checked_conversion(unit):
    module = lowered(unit, "to_log", ("ulog", "f64"), invcheck=False)
    (update,) = entry_of(module).body
    assert update.op == "+=" and isinstance(update.value, ir.Checked)     # not `*= 0`
    assert module.sites[update.value.site].kind == "ulog_mul_update"
    converted = update.value.value
    assert isinstance(converted, ir.Convert)
    assert converted.type == "ulog" and converted.operand.type == "f64"
    assert module.sites[converted.site].kind == "convert"


def test_fixed_to_real_conversions(unit):
    """A fixed read as f64 cannot fail; as i64 it is checked (through f64)."""
    module = lowered(unit, "to_real", ("f64", "fixed"), invcheck=False)
    fn = entry_of(module)
    q = fn.params[1]
    as_f64, through_i64 = fn.body
    assert as_f64.value == ir.Convert(ir.Read(q), "f64")
    integer = through_i64.value.operand
    assert integer.type == "i64" and integer.operand == ir.Convert(ir.Read(q), "f64")
    assert module.sites[integer.site].kind == "convert"


def test_a_complex_part_is_an_f64_view(unit):
    fn = entry_of(lowered(unit, "real_part", ("complex", "f64")))
    (update,) = fn.body
    assert update.target == ir.VarPlace(fn.params[0], 0) and update.target.type == "f64"
    assert update.value == ir.Read(fn.params[1])


def test_complex_updates_are_two_f64_updates(unit):
    fn = entry_of(lowered(unit, "cmul", ("complex", "complex")))
    re, im = fn.body
    z, w = fn.params
    assert (re.target, im.target) == (ir.VarPlace(z, 0), ir.VarPlace(z, 1))
    assert re.value.type == im.value.type == "f64"
    wr, wi = ir.Read(w, 0), ir.Read(w, 1)
    assert re.value == ir.Binary("-", ir.Binary("*", wr, wr, "f64"),
                                 ir.Binary("*", wi, wi, "f64"), "f64")
    assert im.value == ir.Binary("+", ir.Binary("*", wr, wi, "f64"),
                                 ir.Binary("*", wi, wr, "f64"), "f64")


def test_a_complex_ancilla_takes_complex_values(unit):
    fn = entry_of(lowered(unit, "copy_complex", ("f64", "complex")))
    alloc, update, dealloc = fn.body
    w = fn.params[1]
    assert alloc.value == ir.ComplexValue(ir.Read(w, 0), ir.Read(w, 1))
    assert dealloc.value == alloc.value
    assert update.value == ir.Read(alloc.var, 1) and update.value.type == "f64"


def test_ulog_array_literals_with_variables_are_unsupported():
    source = """
    function u(y!, l)
        a ← [l, ulog(1.0)]
        y! += f64(a[0])
        a → [l, ulog(1.0)]
    end
    """
    with pytest.raises(BackendUnsupported, match="ulog array literals") as raised:
        unit = loads_unit(textwrap.dedent(source).lstrip("\n"), "refused.rev")
        check(unit)
        lower(unit, "u", ("f64", "ulog"), False, True)
    assert raised.value.span.line == 2
