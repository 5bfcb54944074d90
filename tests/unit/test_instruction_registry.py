"""Each instruction's meaning is written once, in the registry, and every consumer has
a rule for every entry (Note [Instruction rules], rlang/primitives.py).

The consumers: the interpreter (`interp.instructions.INSTRUCTION_HANDLERS`), the
gradient interpreter (`ad.gradient_interpreter.ADJOINT_HANDLERS`), the derivative
transforms of the IR (`ad.shadow.ShadowFunction._instr`, by the rule's `gradient`),
and both emitters (`emit_instr`, `write_instr`), which run the forward rule.  The
registry's rules themselves are checked against their mathematics; the consumers
against each other by running every instruction on every backend.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.ad.gradient_interpreter import ADJOINT_HANDLERS
from rlang.interp.instructions import INSTRUCTION_HANDLERS, PLAIN
from rlang.primitives import BUILTINS, GRADIENT_KINDS, INSTRUCTION_TABLE

NAMES = sorted(INSTRUCTION_TABLE)


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_states_its_rules(name):
    rule = INSTRUCTION_TABLE[name]
    assert rule.gradient in GRADIENT_KINDS
    assert INSTRUCTION_TABLE[rule.inverse].inverse == name
    assert (rule.forward is None) == (rule.gradient == "moves")
    reads = rule.arity - len(rule.written)
    assert (rule.read_gradient is not None) == (reads > 0 and rule.gradient == "linear")


@pytest.mark.parametrize("table", [INSTRUCTION_HANDLERS, ADJOINT_HANDLERS],
                         ids=["interpreter", "gradient interpreter"])
def test_every_interpreter_has_a_handler_for_every_entry(table):
    assert sorted(table) == NAMES
    assert all(callable(handler) for handler in table.values())


def _float_operands(rule, rng):
    values = list(rng.normal(size=len(rule.written)))
    return values, values + [float(rng.uniform(-3, 3))] * (rule.arity - len(rule.written))


LINEAR = [n for n in NAMES if INSTRUCTION_TABLE[n].gradient == "linear" and n != "CONJ"]


@pytest.mark.parametrize("name", [n for n in NAMES if INSTRUCTION_TABLE[n].forward])
def test_an_instruction_and_its_inverse_undo_each_other(name):
    rule, inverse = INSTRUCTION_TABLE[name], INSTRUCTION_TABLE[INSTRUCTION_TABLE[name].inverse]
    if name == "FLIP":
        assert inverse.apply(PLAIN, *rule.apply(PLAIN, True)) == (True,)
        return
    if name == "CONJ":
        assert inverse.apply(PLAIN, *rule.apply(PLAIN, 1 + 2j)) == ((1 + 2j),)
        return
    values, operands = _float_operands(rule, np.random.default_rng(1))
    new = rule.apply(PLAIN, *operands)
    back = inverse.apply(PLAIN, *new, *operands[len(values):])
    assert np.allclose(back, values, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", LINEAR)
def test_a_linear_rule_is_orthogonal(name):
    # "linear": the gradient pass moves gradients by the rule itself, which is right
    # only for maps that are their own inverse transpose (orthogonal ones)
    rule = INSTRUCTION_TABLE[name]
    rng = np.random.default_rng(2)
    x, operands = _float_operands(rule, rng)
    g = list(rng.normal(size=len(x)))
    read = operands[len(x):]
    assert math.isclose(np.dot(rule.apply(PLAIN, *g, *read), rule.apply(PLAIN, *x, *read)),
                        np.dot(g, x), rel_tol=1e-12)


@pytest.mark.parametrize("name", ["ROT", "IROT"])
def test_the_angle_gradient_is_the_derivative_of_the_forward_run(name):
    # the gradient pass runs `name` where the program ran its inverse J: the angle's
    # gradient is d/dθ of g · J(a0, b0, θ), with (a0, b0) what `name` gives back
    rule, forward = INSTRUCTION_TABLE[name], INSTRUCTION_TABLE[INSTRUCTION_TABLE[name].inverse]
    a, b, theta, ga, gb = 0.3, -1.2, 0.7, 0.9, 0.4
    a0, b0 = rule.apply(PLAIN, a, b, theta)

    def loss(t):
        new_a, new_b = forward.apply(PLAIN, a0, b0, t)
        return ga * new_a + gb * new_b

    h = 1e-6
    numeric = (loss(theta + h) - loss(theta - h)) / (2 * h)
    assert math.isclose(rule.read_gradient((a, b), (ga, gb)), numeric, rel_tol=1e-8)


#: A program per instruction: its operands come in as arguments (k, an integer, for
#: INC and DEC; PUSH and POP: a stack that is pushed and popped back, so the
#: arguments come back unchanged).
_PROGRAMS = {
    "SWAP": "SWAP(a, b)",
    "NEG": "NEG(a)",
    "INC": "INC(k)",
    "DEC": "DEC(k)",
    "FLIP": "FLIP(f)",
    "CONJ": "CONJ(z)",
    "ROT": "ROT(a, b, t * 0.5)",
    "IROT": "IROT(a, b, t * 0.5)",
    "HADAMARD": "HADAMARD(a, b)",
    "PUSH": "s ← stack(f64)\n    PUSH(s, a)\n    b += t\n    POP(s, a)\n    s → stack(f64)",
    "POP": "s ← stack(f64)\n    PUSH(s, b)\n    POP(s, b)\n    s → stack(f64)",
}


def _source(name: str) -> str:
    return f"""
function run!(a, b, t, f, z, k)
    {_PROGRAMS[name]}
    a += b * t
end
"""


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", ["llvm", "cuda"])
def test_every_backend_runs_every_instruction_as_the_interpreter(name, backend):
    pytest.importorskip("llvmlite" if backend == "llvm" else "numba")
    args = [0.75, -1.5, 1.25, True, 1.0 + 2.0j, 3]
    reference = rlang.loads(_source(name), backend="interp")
    compiled = rlang.loads(_source(name), backend=backend)
    assert compiled.compiled is not None
    if backend == "cuda" and INSTRUCTION_TABLE[name].gradient == "moves":
        with pytest.raises(rlang.RlangError, match="does not handle stack"):
            compiled["run!"](*args)             # stacks are the llvm backend's only
        return
    expected = reference["run!"](*args)
    assert compiled["run!"](*args) == expected
    assert (~compiled["run!"])(*expected) == (~reference["run!"])(*expected)
    expected_grad = rlang.gradient(reference["run!"], args, "a")
    grad = rlang.gradient(compiled["run!"], args, "a")
    assert [g for g in grad] == [g for g in expected_grad]


def test_every_builtin_has_code_on_each_backend():
    from rlang.backends.llvm.arith import FLOAT_BUILTINS, INT_BUILTINS

    assert sorted(set(BUILTINS) - set(FLOAT_BUILTINS)) == []
    int_preserving = {n for n, b in BUILTINS.items() if b.int_preserving}
    assert sorted(int_preserving - set(INT_BUILTINS)) == []
    device = pytest.importorskip("rlang.backends.cuda.device")
    assert [n for n in BUILTINS if not callable(getattr(device, "b_" + n, None))] == []


# ------------------------------------------------------------------ update operators

def test_every_update_operator_of_the_grammar_is_in_the_registry():
    from rlang.frontend import ast
    from rlang.primitives import UPDATE_TABLE

    grammar = (Path(rlang.__file__).resolve().parents[1] / "grammar" / "rev.lark").read_text()
    written = {op for op in ("+=", "-=", "*=", "/=", "^=") if f'"{op}"' in grammar
               or op in grammar}
    assert written == set(UPDATE_TABLE)
    assert ast.UPDATE_OPS == {op: rule.inverse for op, rule in UPDATE_TABLE.items()}


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "^="])
def test_an_update_operator_and_its_inverse_mirror_each_other(op):
    from rlang.primitives import UPDATE_TABLE

    rule = UPDATE_TABLE[op]
    inverse = UPDATE_TABLE[rule.inverse]
    assert inverse.inverse == op
    assert inverse.seed_sign == -rule.seed_sign
    assert (inverse.differentiable, inverse.log_space) == (rule.differentiable, rule.log_space)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("op, start", [("+=", 0.25), ("-=", 0.25), ("*=", "ulog"),
                                       ("/=", "ulog")])
def test_the_gradient_rule_of_an_update_matches_finite_differences(op, start, backend):
    # the seed sign and the log-space division of the registry, on both AD drivers:
    # one update of the loss itself, so that no second sign can cancel a wrong one
    source = f"""
function f!(y!, x)
    y! {op} x * x + 1.0
end
"""
    m = rlang.loads(source, backend=backend)
    y = rlang.ULog(0.5) if start == "ulog" else start
    rlang.check_grad(m["f!"], [y, 0.7], "y!")
    if backend == "llvm":
        assert m.compiled is not None
