"""The `argument` family: the Python API called with what Python users pass.

`make` picks a function of `PROGRAM`, an operation (a call, an inverse, a gradient,
a Hessian, a Jacobian, a gradient check, with losses good and bad) and arguments:
values of the right type with one or two replaced from `ZOO` — NumPy subclasses,
every dtype, byte order and rank, views, read-only, object and string arrays, 0-d
arrays, None, strings, huge integers, JAX arrays.  `run` does it on the interpreter
and on llvm: each backend gives a result or an `RlangError`, and they agree on which
(and on the result, when both give one).
"""
from __future__ import annotations

import cmath

import functools
import io
from contextlib import redirect_stdout
from fractions import Fraction

import numpy as np

from .compare import same_values
from .outcome import Disagreement, Outcome, guarded

PROGRAM = """
function sq(x: f64, y: f64)
    y += x * x
end
function norm(a: f64[:], y: f64)
    for i = 0:length(a) - 1
        y += a[i] * a[i]
    end
end
function scale!(a: f64[:], s: f64)
    for i = 0:length(a) - 1
        a[i] += s
    end
end
function corner(m: f64[:, :], y: f64)
    y += m[0, 0] * 2.0
end
function count(k: i64, a: i64[:])
    for i = 0:length(a) - 1
        a[i] += k
    end
end
function rot(z: complex, w: complex)
    w += z * z
end
function flip(p: bool, q: bool)
    q ^= p
end
function generic(x, y)
    y += x
end
function fixed_add(q: fixed, r: fixed)
    r += q
end
function ulog_mul(l: ulog, r: ulog)
    r *= l
end
function push_one(s: stack{f64}, x: f64)
    PUSH(s, x)
    x += 1.0
    POP(s, x)
end
"""
#: function -> (the kind of each parameter, loss views good and bad)
FUNCTIONS = {
    "sq": (("f64", "f64"), ("y", 1, "x")),
    "norm": (("f64[:]", "f64"), ("y", ("a", 0), "a[0]", ("a", 99))),
    "scale!": (("f64[:]", "f64"), (("a", 0), "s", "a[1]")),
    "corner": (("f64[:,:]", "f64"), ("y", ("m", (0, 0)))),
    "count": (("i64", "i64[:]"), ("k",)),
    "rot": (("complex", "complex"), ("w.re", "w.im", "w")),
    "flip": (("bool", "bool"), ("q",)),
    "generic": (("f64", "f64"), ("y",)),
    "fixed_add": (("fixed", "fixed"), ("r",)),
    "ulog_mul": (("ulog", "ulog"), ("r",)),
    "push_one": (("stack", "f64"), ("x",)),
}
BAD_LOSSES = (None, 99, -1, "nosuch", "", ("y", 10 ** 20), 1.5, ("a", "x"), b"y", ["y"],
              "y[", "y.re.im", ("a", (0, 0, 0)), "a[-1]")
OPERATIONS = ("call", "call", "inverse", "gradient", "gradient", "hessian", "jacobian",
              "check_grad")


def good(kind: str, rng):
    """A value of the parameter's kind."""
    from rlang.numbers import Fixed, ULog
    from rlang.values import Stack

    n = rng.randint(1, 4)
    return {"f64": lambda: rng.uniform(-2, 2), "f64[:]": lambda: np.array(
        [rng.uniform(-2, 2) for _ in range(n)]),
        "f64[:,:]": lambda: np.arange(float(n * 2)).reshape(n, 2),
        "i64": lambda: rng.randint(-5, 5), "i64[:]": lambda: np.arange(n, dtype=np.int64),
        "complex": lambda: complex(rng.uniform(-1, 1), rng.uniform(-1, 1)),
        "bool": lambda: rng.random() < 0.5, "fixed": lambda: Fixed.from_value(rng.uniform(-2, 2)),
        "ulog": lambda: ULog.from_value(rng.uniform(0.1, 3)),
        "stack": lambda: Stack("f64", [1.0] * rng.randint(0, 2))}[kind]()


@functools.lru_cache(maxsize=1)
def _jax_numpy():
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
        import jax.numpy as jnp
        return jnp
    except Exception:  # noqa: BLE001 - JAX is optional
        return None


def zoo(rng):
    """One strange value."""
    a = np.array([1.0, -2.0, 3.0])
    makers = [
        lambda: None, lambda: "1.0", lambda: b"\x00", lambda: [], lambda: [1.0, "x"],
        lambda: [[1.0], [2.0, 3.0]], lambda: {"a": 1}, lambda: 2 ** 64, lambda: -2 ** 63 - 1,
        lambda: 10 ** 400, lambda: float("nan"), lambda: float("inf"), lambda: -0.0,
        lambda: True, lambda: np.bool_(True), lambda: np.float32(1.5), lambda: np.int8(-3),
        lambda: np.uint64(2 ** 64 - 1), lambda: np.float16(2.0), lambda: np.complex64(1j),
        lambda: np.longdouble(1.25), lambda: Fraction(1, 3), lambda: 1 + 0j,
        lambda: np.matrix([[1.0, 2.0]]), lambda: np.ma.masked_array(a, [0, 1, 0]),
        lambda: np.array(2.5), lambda: np.array([[1.0]]), lambda: np.zeros((2, 2, 2)),
        lambda: np.array([], dtype=np.float64), lambda: np.zeros((0, 3)),
        lambda: a.astype(np.float32), lambda: a.astype(np.int64), lambda: a.astype(np.int32),
        lambda: a.astype(np.uint8), lambda: a.astype(np.complex128), lambda: a.astype(">f8"),
        lambda: a.astype(object), lambda: np.array(["a", "b"]), lambda: np.array([b"x"]),
        lambda: a[::2], lambda: a[::-1], lambda: np.broadcast_to(a, (3,)),
        lambda: _read_only(a.copy()), lambda: np.asfortranarray(np.ones((2, 3))),
        lambda: np.ones((3, 2)).T, lambda: np.array([1, 2], dtype="datetime64[D]"),
        lambda: np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
        lambda: np.array([True, False]), lambda: np.array([2 ** 62, -5]),
        lambda: np.full(3, np.nan), lambda: np.array([1e308, 1e308]),
        lambda: memoryview(b"abc"), lambda: range(3), lambda: iter([1.0]), lambda: object(),
        lambda: np.float64, lambda: (1.0, 2.0), lambda: _jax_array(), lambda: _torch_tensor(False),
        lambda: _torch_tensor(True),
    ]
    return rng.choice(makers)()


@functools.lru_cache(maxsize=1)
def _torch():
    try:
        import torch
        return torch
    except Exception:  # noqa: BLE001 - PyTorch is optional
        return None


def _torch_tensor(requires_grad: bool):
    """A float64 tensor, or an array when PyTorch is not installed."""
    torch = _torch()
    if torch is None:
        return np.array([1.0, 2.0])
    return torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=requires_grad)


def start_frameworks() -> None:
    """Load PyTorch and JAX, where installed, and make one value of each (their
    thread pools start then); fuzz workers do this before capping their memory."""
    _torch_tensor(False)
    _jax_array()


def _read_only(array):
    array.flags.writeable = False
    return array


def _jax_array():
    jnp = _jax_numpy()
    return np.array([1.0, 2.0]) if jnp is None else jnp.asarray([1.0, 2.0])


def make(rng) -> dict:
    name = rng.choice(tuple(FUNCTIONS))
    kinds, losses = FUNCTIONS[name]
    operation = rng.choice(OPERATIONS)
    strange = {rng.randrange(len(kinds))} if rng.random() < 0.8 else set()
    if rng.random() < 0.2:
        strange.add(rng.randrange(len(kinds)))
    seed = rng.randrange(1 << 30)
    loss = rng.choice(losses) if rng.random() < 0.75 else rng.choice(BAD_LOSSES)
    extra = rng.random() < 0.05                     # one argument too many or too few
    return {"function": name, "operation": operation, "strange": sorted(strange),
            "seed": seed, "loss": loss, "extra": extra}


def _arguments(spec: dict) -> list:
    """The case's arguments, made afresh (each backend gets its own)."""
    import random

    rng = random.Random(spec["seed"])
    kinds = FUNCTIONS[spec["function"]][0]
    args = [zoo(rng) if k in spec["strange"] else good(kind, rng)
            for k, kind in enumerate(kinds)]
    if spec["extra"]:
        args = args + [1.0] if rng.random() < 0.5 else args[:-1]
    return args


def _operate(spec: dict, module):
    import rlang

    fn = module[spec["function"]]
    args = _arguments(spec)
    operation = spec["operation"]
    with redirect_stdout(io.StringIO()):
        if operation == "call":
            return fn(*args)
        if operation == "inverse":
            return (~fn)(*args)
        if operation == "jacobian":
            return rlang.jacobian(fn, args)
        if operation == "check_grad":
            return rlang.check_grad(fn, args, loss=spec["loss"], rtol=1.0, atol=1.0)
        return getattr(rlang, operation)(fn, args, loss=spec["loss"])


@functools.lru_cache(maxsize=None)
def _module(backend: str):
    import rlang

    return rlang.loads(PROGRAM, backend=backend)


def run(spec: dict) -> Outcome:
    got = {}
    for backend in ("interp", "llvm"):
        outcome = guarded(lambda: _operate(spec, _module(backend)))
        if outcome.is_defect:
            return Outcome(outcome.kind, f"on {backend}:\n{outcome.detail}")
        got[backend] = outcome
    a, b = got["interp"], got["llvm"]
    if b.kind == "unsupported":
        return b
    if a.kind == "error" and "not supported yet" in a.detail:
        return Outcome("unsupported", a.detail)     # the interpreter's documented gaps
    if a.kind != b.kind:
        return Outcome("disagree", f"interp: {a.kind} {a.detail[:1500]}\n"
                                   f"llvm: {b.kind} {b.detail[:1500]}")
    if a.kind == "ok" and not _same(a.value, b.value, _non_finite_gradient(spec)):
        return Outcome("disagree", f"interp gave {a.value!r}\nllvm gave {b.value!r}")
    return b


def _non_finite_gradient(spec: dict) -> bool:
    """A derivative at an argument that is infinite or nan (see
    compare.same_values: only complex parts are let differ)."""
    return spec["operation"] not in ("call", "inverse") and any(
        isinstance(a, (float, complex)) and not cmath.isfinite(a) for a in _arguments(spec))


def _same(a, b, nan_parts: bool = False) -> bool:
    try:
        return same_values(_plain(a), _plain(b), nan_parts)
    except Disagreement:
        return False


def _plain(value):
    from rlang.values import Stack

    if isinstance(value, Stack):
        return list(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def describe(spec: dict) -> str:
    kinds = FUNCTIONS[spec["function"]][0]
    shown = [f"{'STRANGE ' if k in spec['strange'] else ''}{kind}" for k, kind in enumerate(kinds)]
    return (f"# {spec['operation']} of {spec['function']}({', '.join(shown)}), loss "
            f"{spec['loss']!r}, {'wrong argument count, ' if spec['extra'] else ''}"
            f"arguments {_arguments(spec)!r} (random.Random({spec['seed']}))\n{PROGRAM}")
