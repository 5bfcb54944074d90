"""The pieces of a generated program (tests/property/generators.py) and of its inputs.

Kinds of values (`INT`, `BOOL`, `ARR`, `BARR`, stacks) and their types, AST helpers
that build nodes as the parser does (`lit`, `name`, `binary`, `length`), `names_in`
(what a node may read or write), the generation context `Ctx`, `Signature` and
`GeneratedProgram`; and the inputs: `argument(kind)` draws one value of a kind,
`arguments(gp, argument)` one per parameter of `gp.top`, `literal` writes a value as
a rev literal, `main_calling(gp, args)` a `main` that runs `gp.top` on `args`, and
`case_from_source` turns hand-written source into a case for `@example`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import numpy as np
from hypothesis import strategies as st

from rlang.frontend import ast

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

#: The test arrays have 1..MAX_LEN elements; ancilla arrays too.
MAX_LEN = 4
#: Upper bound on the statements one run of the top function executes (the functions
#: it may call get a fifth of it each, so that calling them is affordable).
COST_BUDGET = 3000
#: Deepest nesting of compound statements inside one function.
MAX_DEPTH = 3

INT, BOOL, ARR, BARR = "int", "bool", "arr", "barr"       # i64, bool, i64[:], bool[:]
STACK_INT, STACK_BOOL = "stack_int", "stack_bool"
ARRAY_OF = {INT: ARR, BOOL: BARR}
_TYPE_OF = {INT: ast.TypeRef("i64"), BOOL: ast.TypeRef("bool"), ARR: ast.TypeRef("i64", 1),
            BARR: ast.TypeRef("bool", 1)}


# ------------------------------------------------------------------------ choices

class HypothesisDraws:
    """The generator's choices made by Hypothesis (`draw` of an `@st.composite`), so
    that failing programs shrink."""

    def __init__(self, draw):
        self._draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self._draw(st.integers(lo, hi))

    def choice(self, options):
        return self._draw(st.sampled_from(list(options)))

    def permutation(self, items) -> list:
        return list(self._draw(st.permutations(list(items))))


class RandomDraws:
    """The same choices from a seeded `random.Random`: the fuzzer (tests/fuzz/) makes
    program number k of a run from its seed alone, with no Hypothesis engine."""

    def __init__(self, rng: random.Random):
        self._rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def choice(self, options):
        return self._rng.choice(list(options))

    def permutation(self, items) -> list:
        items = list(items)
        return self._rng.sample(items, len(items))


# --------------------------------------------------------------------- AST helpers

def lit(n: int):
    """An integer literal as the parser builds it (negative ones are `-n`)."""
    return ast.IntLit(n) if n >= 0 else ast.Unary("-", ast.IntLit(-n))


def name(n: str) -> ast.Name:
    return ast.Name(n)


def binary(op, left, right) -> ast.Binary:
    return ast.Binary(op, left, right)


def length(arr: str) -> ast.Call:
    return ast.Call("length", (name(arr),))


def stack_value(kind: str) -> ast.Call:
    scalar = "i64" if kind == STACK_INT else "bool"
    return ast.Call("stack", (ast.TypeExpr(ast.TypeRef(scalar)),))


def names_in(node) -> set[str]:
    """Every variable name used anywhere in a node or a tuple/list of nodes (an
    over-approximation of what it reads and writes)."""
    found: set[str] = set()
    work = [node]
    while work:
        item = work.pop()
        if isinstance(item, (tuple, list)):
            work.extend(item)
        elif isinstance(item, ast.Name):
            found.add(item.id)
        elif isinstance(item, (ast.Alloc, ast.Dealloc)):
            found.add(item.name)
            work.append(item.value)
        elif isinstance(item, ast.Zeros):
            found.update(item.names)
        elif isinstance(item, ast.For):
            found.add(item.var)
            work.extend((item.start, item.step, item.stop, item.body))
        elif hasattr(item, "__dataclass_fields__"):
            for field_name in item.__dataclass_fields__:
                if field_name != "span":
                    work.append(getattr(item, field_name))
    return found


# ------------------------------------------------------------------------- context

@dataclass(frozen=True)
class Ctx:
    """What the statement being generated may see and touch."""

    vars: dict                      # name -> INT | BOOL | ARR | STACK_*  (in scope)
    frozen: frozenset = frozenset()  # readable here, never written
    weight: int = 1                 # how many times a statement here may run at most
    depth: int = 0                  # nesting of compound statements

    def with_vars(self, **new) -> "Ctx":
        return replace(self, vars={**self.vars, **new})

    def freeze(self, names) -> "Ctx":
        return replace(self, frozen=self.frozen | frozenset(names))

    def inner(self, trips: int = 1) -> "Ctx":
        return replace(self, weight=self.weight * max(trips, 1), depth=self.depth + 1)

    def readable(self, kind: str, exclude=()) -> list[str]:
        return sorted(n for n, k in self.vars.items() if k == kind and n not in exclude)

    def writable(self, kind: str, exclude=()) -> list[str]:
        return [n for n in self.readable(kind, exclude) if n not in self.frozen]


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple       # of (param name, kind, read_only)
    cost: int


@dataclass
class GeneratedProgram:
    program: ast.Program
    source: str
    top: str
    signatures: dict = field(default_factory=dict)

    @property
    def top_signature(self) -> Signature:
        return self.signatures[self.top]


# ------------------------------------------------------------------------ arguments

def i64s() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(-20, 20), st.integers(I64_MIN, I64_MAX),
                     st.sampled_from([I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1]))


def argument(kind: str) -> st.SearchStrategy:
    if kind == INT:
        return i64s()
    if kind == BOOL:
        return st.booleans()
    if kind == BARR:
        return st.lists(st.booleans(), min_size=1, max_size=MAX_LEN).map(
            lambda xs: np.array(xs, dtype=np.bool_))
    return st.lists(i64s(), min_size=1, max_size=MAX_LEN).map(
        lambda xs: np.array(xs, dtype=np.int64))


def arguments(gp: GeneratedProgram, draw_argument=argument) -> st.SearchStrategy[tuple]:
    """Inputs for `gp.top`, one per parameter (`draw_argument(kind)` draws one)."""
    return st.tuples(*(draw_argument(kind) for _, kind, _ in gp.top_signature.params))


def literal(value):
    """A rev literal expression for an argument value (i64, bool or a 1-D array)."""
    if isinstance(value, np.ndarray):
        return ast.ArrayLit(tuple(literal(v.item()) for v in value))
    if isinstance(value, (bool, np.bool_)):
        return ast.BoolLit(bool(value))
    return lit(int(value))


def main_calling(gp: GeneratedProgram, args) -> ast.Function:
    """`function main()` that allocates `args` as its store and calls `gp.top` on them
    (its store is the top function's result)."""
    names = [f"v{k}" for k in range(len(args))]
    body = [ast.Alloc(n, literal(v)) for n, v in zip(names, args)]
    body.append(ast.CallStmt(gp.top, tuple(name(n) for n in names)))
    return ast.Function("main", (), tuple(body))


def case_from_source(source: str, top: str, args: tuple):
    """A hand-written case (for `@example`): the program parsed from `source`."""
    from rlang.frontend.parser import parse

    program = parse(source)
    kinds = {(t.scalar, t.ndim): kind for kind, t in _TYPE_OF.items()}
    signatures = {}
    for fn in program.functions:
        params = tuple((p.name, kinds.get((p.type.scalar, p.type.ndim), INT) if p.type else INT,
                        False) for p in fn.params)
        signatures[fn.name] = Signature(fn.name, params, 0)
    return GeneratedProgram(program, source, top, signatures), args
