"""`records.record` behaves as `dataclass(frozen=True)` (Note [Records compiled when first
used]): each class here is defined twice, once by each, and their instances are
compared."""
from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import ClassVar

import pytest

from rlang.records import record
from rlang.span import NO_SPAN, Span


def _both(body):
    """The class `body` makes, as a record and as a frozen dataclass."""
    return record(body()), dataclasses.dataclass(frozen=True)(body())


def _node():
    class Node:
        """A node."""

        op: str
        operand: object = None
        children: tuple = dataclasses.field(default_factory=tuple)
        span: Span = dataclasses.field(default=NO_SPAN, compare=False, repr=False,
                                       kw_only=True)

        def doubled(self):
            return self.op * 2

    return Node


def _empty():
    class Empty:
        pass

    return Empty


def _single():
    class Single:
        value: float

    return Single


def test_instances_agree_with_a_frozen_dataclass():
    ours, theirs = _both(_node)
    at = Span("f.rev", 1, 2, 1, 3)
    for args, kwargs in [(("+",), {}), (("-", 1.5), {}), (("*", None, (1, 2)), {}),
                         (("/",), {"span": at}), ((), {"op": "%", "children": ("x",)})]:
        a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(a).replace("Node", "") == repr(b).replace("Node", "")
        assert hash(a) == hash(b)
        assert a == ours(*args, **kwargs) and hash(a) == hash(ours(*args, **kwargs))
        assert a != b           # (different classes, as two dataclasses would be)
        assert [f.name for f in dataclasses.fields(a)] == ["op", "operand", "children",
                                                           "span"]
    assert ours("+", span=at) == ours("+")          # span is not compared
    assert ours("+") != ours("-") and ours("+", 1) != ours("+", 2)
    assert ours.__match_args__ == theirs.__match_args__ == ("op", "operand", "children")
    assert ours("+").doubled() == "++"
    assert ours.__doc__ == "A node."


def test_defaults_keywords_and_errors_of_init():
    ours, theirs = _both(_node)
    assert ours("+").children == () and ours("+").children is not None
    for bad in [lambda cls: cls(), lambda cls: cls("+", 1, (), NO_SPAN),
                lambda cls: cls("+", nothing=1)]:
        with pytest.raises(TypeError):
            bad(ours)
        with pytest.raises(TypeError):
            bad(theirs)


def test_records_are_frozen_and_work_with_dataclasses_functions():
    Node = record(_node())
    node = Node("+", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.op = "-"
    with pytest.raises(dataclasses.FrozenInstanceError):
        del node.op
    assert dataclasses.is_dataclass(node)
    changed = dataclasses.replace(node, operand=2)
    assert changed == Node("+", 2) and node.operand == 1
    from rlang.frontend import ast                # (a local class does not pickle)

    literal = ast.Binary("+", ast.IntLit(1), ast.Name("x"), span=Span("f.rev", 1, 1, 1, 6))
    assert pickle.loads(pickle.dumps(literal)) == literal
    assert pickle.loads(pickle.dumps(literal)).span == literal.span
    assert copy.deepcopy(node) == node and copy.copy(node) == node
    match node:
        case Node("+", 1):
            pass
        case _:
            pytest.fail("a record matches its fields by position")


def test_classes_with_no_field_or_one():
    empty, empty_dc = _both(_empty)
    assert empty() == empty() and hash(empty()) == hash(empty_dc())
    assert repr(empty()) == repr(empty_dc()) == "_empty.<locals>.Empty()"
    single, single_dc = _both(_single)
    assert single(1.0) == single(1.0) != single(2.0)
    assert hash(single(1.0)) == hash(single_dc(1.0))
    assert repr(single(1.0)) == repr(single_dc(1.0))


def test_post_init_runs_and_field_order_is_checked():
    @record
    class Positive:
        value: int

        def __post_init__(self):
            if self.value <= 0:
                raise ValueError("not positive")

    assert Positive(1).value == 1
    with pytest.raises(ValueError):
        Positive(0)
    with pytest.raises(TypeError, match="non-default argument 'b'"):
        @record
        class Bad:
            a: int = 0
            b: int


def test_a_subclass_that_is_no_record_builds_as_its_base():
    Node = record(_node())

    class Marked(Node):
        pass

    marked = Marked("+", 1)
    assert (marked.op, marked.operand) == ("+", 1) and marked != Node("+", 1)


def _field_facts(cls) -> list:
    return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash,
             f.compare, f.kw_only, dict(f.metadata)) for f in dataclasses.fields(cls)]


def test_fields_are_those_dataclass_records():
    ours, theirs = _both(_node)
    assert _field_facts(ours) == _field_facts(theirs)
    assert ours.operand is None and "children" not in ours.__dict__     # (as dataclass
    assert theirs.operand is None and "children" not in theirs.__dict__  # leaves them)

    def _derived():
        class Derived(record(_node())):
            extra: int = 3
            op: str = "="           # (a base field redefined keeps its place)

        return Derived

    ours, theirs = record(_derived()), dataclasses.dataclass(frozen=True)(_derived())
    assert _field_facts(ours) == _field_facts(theirs)
    assert ours.__match_args__ == theirs.__match_args__ == ("op", "operand", "children",
                                                           "extra")
    assert ours().op == "=" and ours(extra=4).extra == 4


def _counted():
    class Counted:
        value: float
        count: ClassVar[int] = 0
        _: dataclasses.KW_ONLY
        step: int = 1

    return Counted


def test_special_annotations_and_bad_fields_are_dataclass_s():
    ours, theirs = _both(_counted)
    assert _field_facts(ours) == _field_facts(theirs)
    assert [f.name for f in dataclasses.fields(ours)] == ["value", "step"]
    assert ours(1.0, step=2).step == 2 and ours.count == 0
    with pytest.raises(ValueError, match="mutable default"):
        @record
        class Mutable:
            items: list = []
    with pytest.raises(TypeError, match="no type annotation"):
        @record
        class Unannotated:
            value = dataclasses.field(default=1)
