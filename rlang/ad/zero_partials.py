"""Which partial derivatives are zero by their rule, as the compiled passes see them.

Note [Partials zero by rule]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A chain-rule term whose partial derivative is zero by its rule adds nothing to a
gradient, even when the seed is infinite or nan: `floor`, `ceil`, `round`, `sign`
and `//` (piecewise constant), `imag` and `angle` of a real, and a product whose
other factor is the constant 0 (`x * 0.0`).  The compiled passes generate no code
for such a term (rlang/ad/symbolic.py recognises the constant zero when it traces
the rule), as JAX's symbolic zeros and PyTorch's zero gradients do; so
`floor(x)` passes a nan seed on to nobody, and x's gradient stays 0.  A partial
that is zero only at the run's values (`x * y` at y = 0) multiplies the seed as
IEEE 754 says, nan · 0 = nan, on every backend.

The interpreter computes partials as numbers, and a number does not say whether it
is zero by rule.  So where a zero partial meets a seed that is not finite (the
only case in which dropping the term and adding seed · 0 differ, other than the sign
of a zero gradient, which Note [Known zeros] allows to differ), `zero_by_rule`
runs the operator's rule once more on the operands as the compiled pass traces
them: the program's f64 constants as IR constants, everything else as opaque
symbols.  Both backends then drop the same terms, and an ordinary run pays one
comparison per term.  (The fuzzer found the difference: a nan seed through
`floor(qs[i])` made qs's gradient nan on the interpreter and 0 compiled.)
"""
from __future__ import annotations

from ..frontend import ast
from ..primitives import BUILTINS, CONSTANTS, CONVERSIONS, OPERATOR_PARTIALS


def zero_by_rule(node, k: int, operand_values, consts: dict) -> bool:
    """Whether the partial derivative of the AST `node` (a binary operator or a
    built-in call) with respect to its operand `k` is the constant zero for the
    compiled passes.  `operand_values`: the operands' values in this run (an f64
    node's constant operands are IR constants, as lowering folds them); `consts`:
    the program's constants by name."""
    from ..ir import nodes as ir        # rare: only for a zero partial and a non-finite seed
    from .symbolic import Sym, is_zero, lift_value
    if type(node) is ast.Binary:
        rule, operands = OPERATOR_PARTIALS[node.op], (node.left, node.right)
    else:
        rule, operands = BUILTINS[node.func].partials, node.args
    folds = all(type(v) in (int, float) for v in operand_values)     # an f64 node
    symbols = []
    for i, (operand, value) in enumerate(zip(operands, operand_values)):
        if folds and _lowered_constant(operand, consts):
            symbols.append(Sym(ir.Const(float(value), "f64")))
        else:
            symbols.append(Sym(ir.Read(ir.Var(f"operand{i}", "f64"))))
    found = rule(*symbols)
    found = found if type(found) is tuple else (found,)
    return is_zero(lift_value(found[k]))


def _lowered_constant(node, consts: dict) -> bool:
    """Whether lowering makes `node` an IR constant: a number literal, a named
    constant, or a conversion of one."""
    if ast.is_number_literal(node):
        return True
    if type(node) is ast.Name:
        return node.id in CONSTANTS or (node.id in consts and
                                         isinstance(consts[node.id], (int, float)))
    return type(node) is ast.Call and node.func in CONVERSIONS and len(node.args) == 1 \
        and _lowered_constant(node.args[0], consts)
