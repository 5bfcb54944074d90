"""The typed reversible IR: what the compiled backends (llvm, cuda) generate code from.

`lower.statements.lower` produces it from the checked AST, one `Function` per
specialisation (function name, direction, argument types).  Everything the code
generators need is explicit here:

- every value has a type: a scalar type name (`SCALAR_TYPES`), an `ArrayType` or a
  `StackType`; operands of an operator already have the operator's type (the
  promotions and literal rules of LANGUAGE.md §3 were applied by the lowering);
- every variable is a `Var` object (compared by identity), so scoping is resolved;
- `@routine`, `~begin … end`, `@zeros`, calls with expression arguments and the
  post-condition defaults of `if` have been expanded into plain statements;
- every runtime check is a `site`: an index into `Module.sites`, where a `Site` says
  what is checked, where in the source and in which direction.  A statement carries
  `None` where the check is off (`@invcheckoff`, `invcheck=False`, `@inbounds`), so a
  generator emits exactly the checks it finds.

The IR is plain data (frozen dataclasses, made by `records.record`: Note [Records
compiled when first used]); passes build new trees.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..records import record
from ..span import Span

#: Scalar types, from the narrowest.
SCALAR_TYPES = ("bool", "i32", "i64", "f32", "f64", "fixed", "ulog", "complex")
INTEGER_TYPES = ("bool", "i32", "i64")
FLOAT_TYPES = ("f32", "f64")
#: The types whose values have gradients (f64 shadows in the derivative transforms).
DIFFERENTIABLE_TYPES = ("f32", "f64", "fixed", "ulog")
#: How the code generators hold a number system (Note [Number systems in the IR]);
#: a complex is two f64 (Note [Complex numbers in the IR]).
REPRESENTATION = {"fixed": "i64", "ulog": "f64"}


def representation(t: str) -> str:
    """The machine type that holds a value of scalar type `t` (`t` itself except for
    fixed and ulog)."""
    return REPRESENTATION.get(t, t)


# Note [Number systems in the IR]
# fixed and ulog are IR types of their own, so that the derivative transforms give
# them gradients and the boundaries (arguments, results, print, errors) know them,
# but code generators hold them as i64 and f64 (`representation`):
#
# - a fixed is its raw Q20.43 integer.  The IR keeps fixed arithmetic as operators
#   of type fixed (`+ -` wrap like i64; `* /` round to nearest, ties to even, as
#   rlang/numbers.py does; `/` has a division-by-zero site), comparisons compare the
#   raw values, and conversions to and from fixed are `Convert` nodes.
# - a ulog is the f64 of its logarithm, and the lowering expands every ulog
#   operation into f64 arithmetic on logarithms: `Reinterpret` moves between a ulog
#   and the f64 of its logarithm, `Convert` between a ulog and a real value (log and
#   exp, checked), and an `Update` of a ulog place adds or subtracts logarithms (the
#   source's `*=` and `/=`).  Gradients of ulog values are then log-space gradients,
#   ∂L/∂ℓ, as the interpreter keeps them (Note [Gradients of ulog values],
#   rlang/ad/gvar.py).

# Note [Complex numbers in the IR]
# A complex variable (or array element) is one place holding two f64, re then im,
# as NumPy's complex128 and C's `double _Complex` lay them out; a call passes the
# whole place.  Everything else reads and writes its parts: `Read`, `Load`,
# `VarPlace` and `ElemPlace` take a `field` (0: re, 1: im) and are then f64.  The
# lowering expands complex arithmetic into f64 arithmetic on the parts
# (rlang/lower/complex.py), so the derivative transforms see only real numbers and
# a complex gradient is the pair (∂L/∂re, ∂L/∂im), as the interpreter keeps it.  The
# `Alloc` and `Dealloc` of a complex scalar take `ComplexValue`s.

# Note [Stacks in the IR]
# A `stack{T}` variable (T any scalar type) is one place holding a growable buffer:
# `{data pointer, length, capacity}` (three machine words, `backends/llvm/stacks.py`),
# its items in T's storage (as an array element of T is stored), bottom first.
#
# - `Alloc` of a stack variable (no value) makes it empty, with no buffer yet;
#   `Dealloc` frees the buffer, and with a site first checks that the stack is empty
#   (`s → stack(T)`: the interpreter compares with an empty stack, item by item).
# - `Push(stack, place)` appends the place's value, growing the buffer by doubling
#   (realloc; a failed growth is the always-checked `memory_site`), then sets the
#   place to zero(T).  `Pop(stack, place)` moves the top item into the place.  A pop
#   from an empty stack is an error even with invcheck off (`empty_site`, always
#   there in lowered code: the interpreter raises a ReversibilityError with the
#   checks on, a RlangRuntimeError with them off), and with the checks on the place
#   must be zero before (`zero_site`).  `~PUSH` is `POP` and back, so the inverse of
#   a function needs nothing more.
# - A stack is passed to a callee as the place itself (a pointer to the three
#   words), so pushes and pops in the callee are seen by the caller, as the
#   interpreter passes the Stack object.  `Dim(s, None)` is its length.
# - Derivatives: the shadow of a stack of floats is a stack of f64 (of complex for a
#   complex stack), pushed and popped beside it (rlang/ad/shadow.py), so a gradient travels
#   with its value through the stack as the interpreter's GVar items do.  Shadow
#   pops carry no sites: they pop overwriting, exactly where the value pop was
#   checked.
# - Every ancilla that owns heap memory (stacks, arrays) is freed on the error
#   exits of the function that allocated it, so a failed check does not leak.


@record
class ArrayType:
    """An N-d array of `elem`.  `unit_stride`: a layout fact, not a type of the
    language (Note [Unit-stride arrays])."""

    elem: str
    ndim: int
    unit_stride: bool = False

    def __str__(self):
        return f"{self.elem}[{','.join(':' * self.ndim)}]"


# Note [Unit-stride arrays]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# An array's elements along its last axis are adjacent in most programs: NumPy's
# arrays are C-ordered, and every array ancilla, constant array and gradient buffer
# is made that way.  A specialisation whose array type says `unit_stride` indexes the
# last axis without multiplying by a stride read at run time, which lets loops over
# it vectorise without versioning and keeps index arithmetic out of short loops.
# The fact is part of the specialisation (its symbol and every cache key), decided
# per argument from the array itself (rlang/lower/argument_types.py `type_of_value`), and carried to
# callees and gradient shadows by the types; arrays that do not have it get the
# general code.  The language's type rules ignore it: compare with `kind(t)`.


def kind(t):
    """`t` without layout facts: what the language's type rules compare."""
    return ArrayType(t.elem, t.ndim) if isinstance(t, ArrayType) and t.unit_stride else t


@record
class StackType:
    elem: str

    def __str__(self):
        return f"stack{{{self.elem}}}"


def c_identifier(name: str) -> str:
    """A rev name as an identifier of generated code (C, LLVM): every character that
    is not a letter, a digit or `_` becomes `_` (`scale!` → `scale_`)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def symbol_of(name: str, arg_types: tuple, inverse: bool) -> str:
    """The generated-code name of a specialisation (a C identifier)."""
    safe = c_identifier(name)
    sig = "_".join(_type_code(t) for t in arg_types)
    return f"rev_{'inv_' if inverse else ''}{safe}__{sig}" if sig else \
        f"rev_{'inv_' if inverse else ''}{safe}"


def _type_code(t) -> str:
    if isinstance(t, ArrayType):
        return f"{t.elem}a{t.ndim}{'u' if t.unit_stride else ''}"
    if isinstance(t, StackType):
        return f"{t.elem}s"
    return str(t)


def type_text(t) -> str:
    return t if isinstance(t, str) else str(t)


class Var:
    """A variable of one function: a parameter or an ancilla.  Compared by identity."""

    __slots__ = ("name", "type", "is_param")

    def __init__(self, name: str, type_, is_param: bool = False):
        self.name, self.type, self.is_param = name, type_, is_param

    def __repr__(self):
        return f"Var({self.name}: {type_text(self.type)})"

    @property
    def is_made(self) -> bool:
        """Whether the lowering or a derivative transform made this variable (a
        temporary, a shadow, a gradient: its name holds `·`), not the program:
        error frames never show it, and only the sign of a zero of it may differ
        between backends."""
        return "·" in self.name


# ------------------------------------------------------------------- expressions

@record
class Const:
    value: object
    type: str


@record
class ConstArray:
    """An array literal with constant elements (C order), as an ancilla's value."""

    values: tuple
    shape: tuple
    elem: str

    @property
    def type(self):
        return ArrayType(self.elem, len(self.shape), unit_stride=True)


@record
class Read:
    """The value of a scalar variable (or the array/stack itself, as a call argument);
    with `field` (0: re, 1: im), that part of a complex variable, an f64."""

    var: Var
    field: int | None = None

    @property
    def type(self):
        return self.var.type if self.field is None else "f64"


@record
class Load:
    """An array element; `site` is the bounds check (None: unchecked); with `field`,
    that part of a complex element.  Of a stack (one index, read only): its item k
    from the bottom, `site` checking k against its length (Janus's `top`)."""

    var: Var
    indices: tuple
    site: int | None
    field: int | None = None

    @property
    def type(self):
        return self.var.type.elem if self.field is None else "f64"


@record
class Dim:
    """The extent of `var` along `axis` (axis None: the number of elements; of a
    stack, its length)."""

    var: Var
    axis: int | None
    type: str = "i64"


@record
class Unary:
    op: str                 # "-", "!", "~"
    operand: object
    type: str


@record
class Binary:
    """An arithmetic or bitwise operator with both operands of `type` (the result's
    type); `site` is the integer-division-by-zero check of `//` and `%`."""

    op: str
    left: object
    right: object
    type: str
    site: int | None = None


@record
class Compare:
    op: str
    left: object
    right: object
    type: str = "bool"


@record
class Logic:
    """Short-circuit `&&` / `||`."""

    op: str
    left: object
    right: object
    type: str = "bool"


@record
class Convert:
    """`type(operand)`; `site` checks a conversion that can fail (a float to an
    integer must be integral and in range, an integer to i32 in range, to bool 0 or 1)."""

    operand: object
    type: str
    site: int | None = None


@record
class ComplexValue:
    """The value of a complex allocation or deallocation: two f64 expressions."""

    re: object
    im: object
    type: str = "complex"


@record
class Let:
    """`body`, with `var` holding `value` (evaluated once, each time the Let is).

    Note [Lets in conditions]: a statement that evaluates its expressions once gets
    the temporaries its complex and number-system functions share (`hoist`,
    rlang/lower/statements.py) as ancillas around it.  Conditions, loop ranges,
    assertions and printed values are evaluated again and again (an `if`'s
    condition before and after, a loop's every pass), so there the temporaries are
    bound inside the expression instead: without them `abs(cos(sqrt(z)))` repeats
    its argument at every level, and took 12 s to compile (fuzz run, issue #23).
    Lets are never differentiated (conditions and ranges have no gradients); `var`
    is read only in `body`."""

    var: Var
    value: object
    body: object

    @property
    def type(self):
        return self.body.type


@record
class Reinterpret:
    """The representation of `operand` read as `type`: a ulog as the f64 of its
    logarithm, or such an f64 as a ulog (Note [Number systems in the IR])."""

    operand: object
    type: str


@record
class Checked:
    """`value`, once `cond` was found true; where it is false the check at `site`
    fails and reports `reported` (a number system's domain errors: ulog subtraction
    with a larger subtrahend, a negative value made a ulog, …)."""

    value: object
    cond: object
    site: int
    reported: tuple = ()

    @property
    def type(self):
        return self.value.type


@record
class Builtin:
    """A registry function (primitives.BUILTINS) with arguments of its type.
    `c_library`: computed by the C library's function of that name where a backend
    has a faster one of its own (the llvm backend's `exp`), as cmath's algorithms
    lowered to real arithmetic need (rlang/lower/complex_functions.py)."""

    name: str
    args: tuple
    type: str
    c_library: bool = False


@record
class Select:
    """`then` where `cond` holds, else `otherwise` (both computed; no side effects).
    Made by the derivative transforms (rlang/ad/symbolic.py), not by the lowering."""

    cond: object
    then: object
    otherwise: object
    type: str


@record
class Guarded:
    """`value`, or 0 where every one of `guards` is 0 (value not used there): a
    chain-rule product `seed · partial` that stays 0 for a zero seed even where the
    partial is infinite, as the interpreter skips zero seeds (rlang/ad/adjoint_ir.py)."""

    guards: tuple
    value: object
    type: str = "f64"


@record
class Nonzero:
    """Whether any of `values` (floats) is not zero (NaN is not zero): the condition
    of the `if` around the chain rule of one seed, which the interpreter skips when
    the seed is zero (Note [Zero seeds], rlang/ir/guards.py)."""

    values: tuple
    type: str = "bool"


# ------------------------------------------------------------------------ places

@record
class VarPlace:
    var: Var
    field: int | None = None        # 0 / 1: the re / im part of a complex variable

    @property
    def type(self):
        return self.var.type if self.field is None else "f64"


@record
class ElemPlace:
    """An array element.  `claims`: where the element is written inside checked
    `@parallel for` loops, a (loop's `For.site`, shared-write site) pair per loop,
    outermost first (Note [Shared writes in compiled parallel loops],
    backends/llvm/parallel.py); empty elsewhere."""

    var: Var
    indices: tuple
    site: int | None
    field: int | None = None
    claims: tuple = ()

    @property
    def type(self):
        return self.var.type.elem if self.field is None else "f64"


# -------------------------------------------------------------------- statements

@record
class Update:
    """`target op= value`.  `alias_checks` are (indices, site) pairs, one per read of
    the target's array by the value: at run time, those indices must not be the
    target's (LANGUAGE.md §5); empty when unchecked.  `reassociable`: a float sum
    whose terms may be added in any order (Note [Reassociable gradient sums],
    rlang/ad/adjoint_ir.py).  `onto_zero`: the target is known zero before, so the
    update may store its value (Note [Updates onto zeros], rlang/ir/onto_zeros.py);
    with `signed_zero` it stores 0 ± value, computed from a constant zero: the bits
    the update from memory gives (Note [Arrays written before they are read],
    rlang/ir/first_writes.py)."""

    target: object
    op: str
    value: object
    alias_checks: tuple = ()
    reassociable: bool = False
    onto_zero: bool = False
    signed_zero: bool = False


@record
class Push:
    """PUSH(stack, place) (Note [Stacks in the IR]): the place's value goes on top of
    the stack variable `stack`, and the place becomes zero.  `memory_site` reports
    a failed growth of the buffer (always checked)."""

    stack: Var
    place: object
    memory_site: int


@record
class Pop:
    """POP(stack, place): the top item of `stack` moves into the place.
    `empty_site`: the stack must not be empty (None only for shadow pops, which
    follow a checked one); `zero_site`: the place must be zero before (None:
    unchecked, and the place is overwritten)."""

    stack: Var
    place: object
    empty_site: int | None
    zero_site: int | None = None


@record
class Instr:
    """SWAP NEG INC DEC FLIP ROT IROT HADAMARD on places; `angle` for ROT/IROT;
    `alias_site` checks that the two places of SWAP/ROT/HADAMARD differ."""

    name: str
    places: tuple
    angle: object = None
    alias_site: int | None = None


@record
class Branch:
    pre: object
    post: object
    body: tuple


@record
class If:
    """The first branch whose `pre` holds runs; with `site`, after branch k its `post`
    must hold and no earlier `post` (after `orelse`: none)."""

    branches: tuple
    orelse: tuple
    site: int | None


@record
class While:
    pre: object
    post: object
    body: tuple
    site: int | None


@record
class From:
    start: object
    body: tuple
    step: tuple
    stop: object
    site: int | None


@record
class For:
    """`for var = start:step:stop` (inclusive).  With `site`, the body may change
    neither the index (`site`) nor the bounds (`site + 1` … `site + 3`).

    `reverse_of`, when set, is (a, s, b): the loop is the inverse of `for var = a:s:b`
    (start is `a + s * ((b - a) // s)`, Note [Loop inversion] in frontend/invert.py)
    and visits a:s:b backward, its trip count computed from a, s and b without
    overflow; start, step and stop are still what the range checks compare."""

    var: Var
    start: object
    step: object
    stop: object
    body: tuple
    site: int | None
    step_site: int                  # the step must not be zero (always checked)
    parallel: bool = False
    reverse_of: tuple | None = None


@record
class Call:
    """A call of the specialisation `callee` (a `Module.functions` key).  `args` are
    places or `Read`s of whole arrays; `alias_site` checks written arguments do not
    overlap; `site` is the call site (call chains, depth limit)."""

    callee: str
    args: tuple
    site: int
    alias_site: int | None = None


@record
class Alloc:
    """A new scalar ancilla with a value, a new array ancilla: of zeros (`dims`) or
    a copy of a `ConstArray` (`value`), or a new empty stack (no value).  `sites`,
    for `zeros(T, n…)` in the source: the site of a failed allocation (the call's
    span) and then one per dimension (its span, for a negative one); without them
    the backends report such failures without a source position.
    `written_first`: an array of zeros whose every element is written before it
    is read, so that a backend need not zero it (Note [Arrays written before they
    are read], rlang/ir/first_writes.py)."""

    var: Var
    value: object = None
    dims: tuple = ()
    sites: tuple = ()
    written_first: bool = False


@record
class Dealloc:
    """Free an ancilla; with `site`, its value must equal `value` (floats within the
    tolerance; arrays: a `ConstArray`, the `Read` of an array of the same type, or all
    zero when `value` is None, then of the extents `shape` where it is given: those of
    `a → zeros(T, n…)`; stacks: empty, `value` is None)."""

    var: Var
    value: object
    site: int | None
    shape: tuple = ()


@record
class Print:
    """`@safe print/show`: `args` are (text, expression) pairs."""

    kind: str
    args: tuple
    site: int


@record
class Assert:
    cond: object
    site: int


# ----------------------------------------------------------------- functions

#: The statement classes of the IR and the method that handles each in a statement
#: visitor (the llvm and cuda emitters, the derivative transforms of rlang/ad): the
#: one table they dispatch through (`visit`), which
#: tests/unit/ir/test_statement_visitors.py walks.
STATEMENT_VISITS: dict[type, str] = {
    Update: "_update", Push: "_push", Pop: "_pop", Instr: "_instr", If: "_if",
    While: "_while", From: "_from", For: "_for", Call: "_call", Alloc: "_alloc",
    Dealloc: "_dealloc", Print: "_print", Assert: "_assert",
}


def visit(visitor, stmt):
    """`visitor`'s method for `stmt` (STATEMENT_VISITS) applied to it."""
    return getattr(visitor, STATEMENT_VISITS[type(stmt)])(stmt)


@dataclass
class Function:
    """One specialisation: `symbol` is its name in generated code."""

    symbol: str
    name: str               # the rev name
    inverse: bool
    params: tuple           # of Var
    body: tuple
    span: Span | None = None
    results: tuple = ()     # `main`'s store: ancillas left allocated, in order
    constants: tuple = ()   # (Var, ConstArray) of the constant arrays the body reads
    # How a scalar parameter goes back to the caller (Note [Scalar parameters in
    # locals], backends/llvm/emit.py): the positions the function may write are
    # copied out; `accumulated` ones (gradients of read-only parameters, which a
    # caller may pass twice) are added back as the change; the others not at all.
    written: frozenset = frozenset()
    accumulated: frozenset = frozenset()
    inline: bool = False    # `@inline function`: inlined at its call sites (LANGUAGE.md §4)
    # A derivative function (`grad f(…) wrt … into …`, docs/nested.md): lowered with an
    # empty body that rlang/ad/nested_ir.py fills in; None for other functions.
    derivative: "DerivativeOf | None" = None
    # A derivative of another function that a derivative function calls, supplied on
    # demand by rlang/ad/nested_ir.py: never derived again as a whole module is.
    helper: bool = False
    # The parameters whose final values no caller reads: the primal arguments of a
    # gradient pass that Python runs (Note [Restoration nobody reads], ir/prune.py).
    final_unread: frozenset = frozenset()


@record
class DerivativeOf:
    """What a derivative function computes: its targets (the parameters after the
    arguments) += sign · ∂L/∂(argument k) for k in `wrt`, L the final value of the
    first parameter of the specialisation `forward` run on the arguments (`inverse`:
    the symbol of its inverse), by reverse mode (`mode` "grad") or forward mode
    ("fgrad").  `site`: the call site of the statement.  `hvp`: the function is the
    adjoint of one (rlang/ad/nested_ir.py), not to be differentiated again."""

    mode: str
    sign: float
    forward: str
    inverse: str
    wrt: tuple
    site: int
    hvp: bool = False


@record
class Site:
    """A runtime check or a call site: `kind` names the check (see
    backends/errors.py), `span` its source, `function` and `inverse` the frame."""

    kind: str
    span: Span | None
    function: str
    inverse: bool
    detail: tuple = ()      # what the error message needs (texts, types), by kind
    note: str | None = None     # where the site runs against its frame's direction


@dataclass
class Module:
    """The lowered program: the entry specialisation, every function it reaches, and
    the site table."""

    entry: str
    functions: dict = field(default_factory=dict)      # symbol → Function
    sites: list = field(default_factory=list)
    # The functions a derived module was derived from (symbol → Function), from
    # which rlang/ad/nested_ir.py derives what its derivative functions call.
    library: dict = field(default_factory=dict)

    def add_site(self, site: Site) -> int:
        self.sites.append(site)
        return len(self.sites) - 1

    def allocation_sites(self, stmt: "Alloc", fn: "Function") -> tuple:
        """The sites of an array allocation's failures (`Alloc.sites`): the source's
        for `zeros(T, n…)`, else new ones without a position (an array the compiled
        code makes for itself): a failed allocation, then each negative extent."""
        if stmt.sites:
            return stmt.sites
        memory = self.add_site(Site("memory", None, fn.name, fn.inverse, (stmt.var.name,)))
        extent = self.add_site(Site("zeros", None, fn.name, fn.inverse))
        return (memory,) + (extent,) * len(stmt.dims)


# ------------------------------------------------------- expression traversal

def operands(e) -> tuple:
    """The operand expressions of an expression node, in a fixed order (a Load's
    indices; a Select's condition first)."""
    kind = type(e)
    if kind is Binary or kind is Compare or kind is Logic:
        return (e.left, e.right)
    if kind is Unary or kind is Convert or kind is Reinterpret:
        return (e.operand,)
    if kind is Builtin:
        return e.args
    if kind is Checked:
        return (e.value, e.cond) + e.reported
    if kind is Load:
        return e.indices
    if kind is Select:
        return (e.cond, e.then, e.otherwise)
    if kind is Guarded:
        return e.guards + (e.value,)
    if kind is Nonzero:
        return e.values
    if kind is Let:
        return (e.value, e.body)
    return ()


def with_operands(e, new: tuple):
    """`e` with its operands (as `operands` lists them) replaced by `new`."""
    kind = type(e)
    if kind is Binary or kind is Compare or kind is Logic:
        return replace(e, left=new[0], right=new[1])
    if kind is Unary or kind is Convert or kind is Reinterpret:
        return replace(e, operand=new[0])
    if kind is Builtin:
        return replace(e, args=tuple(new))
    if kind is Checked:
        return replace(e, value=new[0], cond=new[1], reported=tuple(new[2:]))
    if kind is Load:
        return replace(e, indices=tuple(new))
    if kind is Select:
        return replace(e, cond=new[0], then=new[1], otherwise=new[2])
    if kind is Guarded:
        return replace(e, guards=tuple(new[:-1]), value=new[-1])
    if kind is Nonzero:
        return replace(e, values=tuple(new))
    if kind is Let:
        return replace(e, value=new[0], body=new[1])
    return e


def checks_peeled(e):
    """`e` without the checks wrapped around it (`Checked`), its operands as they
    are: for walks that look at one node at a time and peel each operand in turn
    (`unchecked` of every operand again would make a deep sum's walk quadratic)."""
    while type(e) is Checked:
        e = e.value
    return e


def unchecked(e):
    """`e` without its checks (bounds, integer division): for expressions the
    derivative transforms evaluate again after the original was checked."""
    if type(e) is Checked:
        return unchecked(e.value)
    new = tuple(unchecked(x) for x in operands(e))
    e = with_operands(e, new) if new else e
    return replace(e, site=None) if getattr(e, "site", None) is not None else e
