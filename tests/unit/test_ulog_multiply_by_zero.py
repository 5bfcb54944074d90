"""`l *= 0` on a ulog cannot be undone (log l would become -inf, and `/=` by zero is
an error): refused at run time on every backend, with the same error (#23 item 8;
it ran forward and failed only backward before)."""
from __future__ import annotations

import pytest

import rlang
from rlang.numbers import ULog

SOURCE = """
function f(y!: ulog, x: f64)
    y! *= x
end
function g(y!: ulog)
    y! *= 0.0
end
function h(y!: ulog, l: ulog)
    y! *= l
end
"""


def _error(backend, name, *args):
    with pytest.raises(rlang.ReversibilityError) as info:
        rlang.loads(SOURCE, backend=backend)[name](*args)
    return info.value.message, info.value.span


@pytest.mark.parametrize("name, args", [("f", (ULog.from_value(2.0), 0.0)),
                                        ("g", (ULog.from_value(2.0),)),
                                        ("h", (ULog.from_value(2.0), ULog.from_value(0.0))),
                                        ("h", (ULog.from_value(0.0), ULog.from_value(0.0)))])
def test_multiplying_a_ulog_by_zero_is_refused_alike(name, args):
    expected = _error("interp", name, *args)
    assert "*= 0` cannot be undone" in expected[0]
    assert _error("llvm", name, *args) == expected


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_multiplying_by_a_nonzero_still_runs_both_ways(backend):
    m = rlang.loads(SOURCE, backend=backend)
    y, x = m.f(ULog.from_value(2.0), 3.0)
    assert float(y) == pytest.approx(6.0)
    assert float((~m.f)(y, x)[0]) == pytest.approx(2.0)
