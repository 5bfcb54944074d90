"""What the use of undeclared parameters says of their types (rlang/lower/parameter_use.py),
which `rlang compile` specialises generic functions for (#23)."""
from __future__ import annotations

from rlang.frontend.loader import loads_unit
from rlang.lower.parameter_use import array_ranks, integer_params


def ranks_of(source: str) -> dict:
    return array_ranks(loads_unit(source).functions)


def test_indices_length_and_size_give_the_rank():
    assert ranks_of("function f(s!, a, b, c, d)\n    s! += a[0, 1]\n"
                    "    s! += length(b)\n    s! += size(c, 2)\n    s! += d\nend\n") == \
        {"f": {"a": 2, "b": 1, "c": 3}}


def test_declared_parameters_are_left_as_declared():
    assert ranks_of("function f(s!: f64, a: f64[:,:])\n    s! += a[0, 1]\nend\n") == {"f": {}}


def test_the_largest_rank_of_disagreeing_uses_is_taken():
    assert ranks_of("function f(s!, a)\n    s! += a[0]\n    s! += a[0, 0]\nend\n") == \
        {"f": {"a": 2}}


def test_ranks_follow_calls_through_recursion():
    source = ("function g(s!, v, n)\n    if n > 0\n        h(s!, v, n)\n    end\nend\n"
              "function h(s!, w, n)\n    s! += w[n, 0]\n    g(s!, w, n - 1)\nend\n"
              "function top(s!, x: f64[:,:], n)\n    g(s!, x, n)\nend\n")
    assert ranks_of(source) == {"g": {"v": 2}, "h": {"w": 2}, "top": {}}


def test_indices_and_loop_bounds_are_integers():
    fn = loads_unit("function f(s!, a, i, n, y)\n    for k = 0:n - 1\n"
                    "        s! += a[i + 1] * y\n    end\nend\n").functions["f"]
    assert integer_params(fn) == {"i", "n"}
