"""The `program` family: generated valid programs, interpreter against llvm.

`make` draws a program with tests/property's generators (`build_program` over i64
and bool, or `build_system_program` over f64, fixed, ulog and complex too), its
choices made by the case's `random.Random`, and inputs for its top function.  `run`
checks, each on copies of the inputs:

- forward and inverse on the interpreter and on llvm: the same results (integers,
  bools and fixed bit for bit, floats to 1e-12 of the values' magnitude) and the same
  `@safe` output, or errors of the same class and message;
- `~f` after `f` gives the integer, bool and fixed inputs back exactly, on both;
- for a program with float parameters, `rlang.gradient` of a loss drawn among them:
  the same gradient on both backends (or the same error), and the caller's arrays
  exactly as they were before the call (docs/api.md).
"""
from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import numpy as np

from .paths import share_test_helpers
from .outcome import Disagreement, Outcome, guarded

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def make(rng) -> dict:
    share_test_helpers()
    from gen_parts import RandomDraws
    from generators import build_program
    from systems import build_system_program

    if rng.random() < 0.5:
        gp = build_program(RandomDraws(rng))
    else:
        gp = build_system_program(RandomDraws(rng))
    kinds = [kind for _, kind, _ in gp.top_signature.params]
    args = [_argument(rng, kind) for kind in kinds]
    views = _losses(gp)
    return {"source": gp.source, "top": gp.top, "kinds": kinds, "args": args,
            "loss": rng.choice(views) if views else None}


def _int(rng) -> int:
    pick = rng.random()
    if pick < 0.7:
        return rng.randint(-20, 20)
    if pick < 0.9:
        return rng.randint(I64_MIN, I64_MAX)
    return rng.choice((I64_MIN, I64_MAX, I64_MIN + 1, I64_MAX - 1))


def _float(rng) -> float:
    return rng.uniform(-2.0, 2.0) if rng.random() < 0.8 else rng.choice((0.0, 1.0, -0.5))


def _fixed_raw(rng) -> int:
    pick = rng.random()
    if pick < 0.7:
        return rng.randint(-(1 << 46), 1 << 46)
    return _int(rng) if pick < 0.9 else rng.choice((0, 1 << 43, -(1 << 43)))


def _argument(rng, kind: str):
    from rlang.numbers import Fixed, FixedArray, ULog, ULogArray

    scalars = {"int": _int, "bool": lambda r: r.random() < 0.5, "f64": _float,
               "fixed": lambda r: Fixed(_fixed_raw(r)),
               "ulog": lambda r: ULog(r.uniform(-3.0, 3.0)),
               "complex": lambda r: complex(_float(r), _float(r))}
    if kind in scalars:
        return scalars[kind](rng)
    n = rng.randint(1, 4)
    arrays = {"arr": (_int, np.int64, None), "barr": (lambda r: r.random() < 0.5, np.bool_, None),
              "f64[]": (_float, np.float64, None), "fixed[]": (_fixed_raw, np.int64, FixedArray),
              "ulog[]": (lambda r: r.uniform(-3.0, 3.0), np.float64, ULogArray),
              "complex[]": (lambda r: complex(_float(r), _float(r)), np.complex128, None)}
    element, dtype, view = arrays[kind]
    array = np.array([element(rng) for _ in range(n)], dtype=dtype)
    return array if view is None else array.view(view)


def _losses(gp) -> list:
    views = []
    for p, kind, _ in gp.top_signature.params:
        if kind in ("f64", "fixed", "ulog"):
            views.append(p)
        elif kind == "complex":
            views += [f"{p}.re", f"{p}.im"]
        elif kind in ("f64[]", "fixed[]", "ulog[]"):
            views.append(f"{p}[0]")
        elif kind == "complex[]":
            views.append(f"{p}[0].im")
    return views


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _call(fn, args):
    """(results, printed output) of fn on copies of args; an RlangError propagates."""
    out = io.StringIO()
    with redirect_stdout(out):
        result = fn(*_copy(args))
    return result, out.getvalue()


def run(spec: dict) -> Outcome:
    return guarded(lambda: _compare(spec))


def _compare(spec: dict) -> None:
    share_test_helpers()
    import rlang
    from number_systems import agree, magnitude

    source, top, args = spec["source"], spec["top"], spec["args"]
    modules = {b: rlang.loads(source, backend=b) for b in ("interp", "llvm")}
    results = {}
    for direction, pick in (("forward", lambda m: m[top]), ("inverse", lambda m: ~m[top])):
        got = {b: _attempt(lambda b=b: _call(pick(modules[b]), args)) for b in modules}
        _same_outcome(got, direction, magnitude(args), agree)
        results.setdefault("forward", got)
    forward = results["forward"]
    if isinstance(forward["interp"], Exception):
        return
    scale = magnitude([*args, *forward["interp"][0]])
    back = {b: _attempt(lambda b=b: _call(~modules[b][top], list(forward[b][0]))) for b in modules}
    _same_outcome(back, "~f after f", scale, agree)
    if not isinstance(back["interp"], Exception):
        for b in modules:
            for k, (a, kind) in enumerate(zip(args, spec["kinds"])):
                if kind in ("int", "bool", "arr", "barr", "fixed", "fixed[]") and \
                        not agree(back[b][0][k], a, 1.0):
                    raise Disagreement(f"~f after f on {b}: argument {k} came back as "
                                       f"{back[b][0][k]!r}, was {a!r}")
    if spec["loss"] is not None:
        _compare_gradients(spec, modules)


def _compare_gradients(spec: dict, modules: dict) -> None:
    import rlang
    from gradient_agreement import assert_same_gradients

    got = {}
    for backend, module in modules.items():
        args = _copy(spec["args"])
        before = _copy(args)
        with redirect_stdout(io.StringIO()):
            got[backend] = _attempt(lambda: rlang.gradient(module[spec["top"]], args,
                                                           loss=spec["loss"]))
        for k, (now, then) in enumerate(zip(args, before)):
            if isinstance(then, np.ndarray) and not np.array_equal(
                    now.view(np.uint8), then.view(np.uint8)):
                raise Disagreement(f"rlang.gradient on {backend} changed argument {k}: "
                                   f"{then!r} came back as {now!r}")
    if isinstance(got["interp"], Exception) or isinstance(got["llvm"], Exception):
        _same_error(got, "gradient")
        return
    try:
        assert_same_gradients(got["llvm"], got["interp"], f"loss {spec['loss']}")
    except AssertionError as failed:
        if not _within_spread(spec, modules["interp"], got):
            raise Disagreement(f"gradients differ: {failed}") from None


def _within_spread(spec: dict, interp, got: dict) -> bool:
    """Whether the gradients agree within how far one ulp of the float arguments
    moves the interpreter's, in a case that is not ill-conditioned (Note [Gradients
    as exact as their inputs], tests/gradient_agreement.py)."""
    import rlang
    from gradient_agreement import IllConditioned, assert_within_ulp_spread

    def gradients_at(args):
        with redirect_stdout(io.StringIO()):
            return rlang.gradient(interp[spec["top"]], _copy(args), loss=spec["loss"])
    try:
        assert_within_ulp_spread(got["llvm"], got["interp"], gradients_at, spec["args"])
    except (IllConditioned, AssertionError):
        return False
    return True


def _attempt(thunk):
    """The value of thunk(), or the RlangError it raised."""
    from rlang import RlangError

    try:
        return thunk()
    except RlangError as error:
        return error


def _same_error(got: dict, what: str) -> None:
    a, b = got["interp"], got["llvm"]
    if not (isinstance(a, Exception) and isinstance(b, Exception)) or \
            type(a) is not type(b) or a.message != b.message:
        raise Disagreement(f"{what}: interp gave {a!r}, llvm gave {b!r}")


def _same_outcome(got: dict, what: str, scale: float, agree) -> None:
    if isinstance(got["interp"], Exception) or isinstance(got["llvm"], Exception):
        _same_error(got, what)
        return
    (a, a_out), (b, b_out) = got["interp"], got["llvm"]
    if len(a) != len(b) or not all(agree(y, x, scale) for x, y in zip(a, b)):
        raise Disagreement(f"{what}: interp {a!r}, llvm {b!r}")
    if not _same_printing(a_out, b_out, scale, agree):
        raise Disagreement(f"{what}: interp printed {a_out!r}, llvm printed {b_out!r}")


#: A float as `@safe print` writes it (rlang.values.format_value).
_FLOAT = re.compile(r"-?(?:\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+|inf|nan)")


def _same_printing(a: str, b: str, scale: float, agree) -> bool:
    """The same text, but for floats, which agree as the results do (`agree`: within
    1e-12 of the larger of `scale` and the value; the compiled code may round the
    last bit of a float differently from the interpreter: fused multiply-adds)."""
    if a == b:
        return True
    a_parts, b_parts = _FLOAT.split(a), _FLOAT.split(b)
    a_floats, b_floats = _FLOAT.findall(a), _FLOAT.findall(b)
    return a_parts == b_parts and len(a_floats) == len(b_floats) and \
        all(agree(float(y), float(x), scale) for x, y in zip(a_floats, b_floats))


def describe(spec: dict) -> str:
    return (f"# top function {spec['top']}, arguments {spec['args']!r}, "
            f"gradient loss {spec['loss']!r}\n{spec['source']}")
