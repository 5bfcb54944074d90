"""Checking an eval's input against its specification before any tool sees it.

`check(eval_name, input)` raises `InvalidInput` (a `ValueError`) naming the first
field that is missing, of the wrong type or shape, or out of range; the adapter
answers it with ``success: false``.

Note [Inputs are checked before compiled code]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The rev programs index with ``@inbounds`` where the eval's specification fixes
the shapes (as the C++ manual tool and XLA check nothing either), so an input
whose arrays disagree with its sizes would read and write outside them: a
gradient pass writing past a shortened camera corrupted the heap and ended the
tool.  A bad input must be a ``success: false`` response, never a crash, so every
input is held to its eval's shapes here, in Python, first.
"""

from __future__ import annotations

import math

import numpy as np


class InvalidInput(ValueError):
    """The input does not follow the eval's specification."""


def _field(data, key: str):
    if not isinstance(data, dict):
        raise InvalidInput(f"the input must be a JSON object, not {type(data).__name__}")
    if key not in data:
        raise InvalidInput(f"the input has no field {key!r}")
    return data[key]


def _int(data, key: str, minimum: int = 1) -> int:
    value = _field(data, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{key!r} must be an integer ≥ {minimum}, not {value!r}")
    return value


def _float(data, key: str) -> float:
    value = _field(data, key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value):
        raise InvalidInput(f"{key!r} must be a finite number, not {value!r}")
    return float(value)


def _array(data, key: str, shape: tuple, kind: str = "f") -> np.ndarray:
    """The field `key` as an array of `shape` (None: any length ≥ 1 there)."""
    value = _field(data, key)
    try:
        array = np.asarray(value, dtype=np.float64 if kind == "f" else np.int64)
    except (TypeError, ValueError):
        raise InvalidInput(f"{key!r} must be a {len(shape)}-dimensional array of numbers "
                           f"with equal-length rows") from None
    wanted = tuple("any" if s is None else s for s in shape)
    if array.ndim != len(shape) or any(s is not None and s != a for s, a in
                                       zip(shape, array.shape)) or 0 in array.shape:
        raise InvalidInput(f"{key!r} has shape {array.shape}; the eval's is {wanted}")
    if kind == "f" and not np.all(np.isfinite(array)):
        raise InvalidInput(f"{key!r} holds a number that is not finite")
    if kind == "i" and not np.array_equal(array, np.asarray(value, dtype=np.float64)):
        raise InvalidInput(f"{key!r} must hold integers")
    return array


def _within(array: np.ndarray, key: str, low: int, high: int) -> None:
    if array.size and (array.min() < low or array.max() >= high):
        raise InvalidInput(f"{key!r} holds an index outside [{low}, {high})")


def _gmm(data) -> None:
    d, k, n = _int(data, "d"), _int(data, "k"), _int(data, "n")
    _int(data, "m", 0)
    _float(data, "gamma")
    _array(data, "x", (n, d))
    _array(data, "alpha", (k,))
    _array(data, "mu", (k, d))
    _array(data, "q", (k, d))
    if d > 1:
        _array(data, "l", (k, d * (d - 1) // 2))


def _ba(data) -> None:
    for key in ("n", "m", "p"):
        _int(data, key)
    _array(data, "cam", (11,))
    _array(data, "x", (3,))
    _float(data, "w")
    _array(data, "feat", (2,))


BONES = 22      # the hand model's bones (the rev program poses them by index)


def _ht(data) -> None:
    _array(data, "theta", (26,))
    inner = _field(data, "data")
    model = _field(inner, "model")
    points = _array(inner, "points", (None, 3))
    n = len(points)
    triangles = _array(model, "triangles", (None, 3), "i")
    base = _array(model, "base_positions", (None, 4))
    vertices = len(base)
    _array(model, "weights", (vertices, BONES))
    parents = _array(model, "parents", (BONES,), "i")
    if any(not -1 <= parent < bone for bone, parent in enumerate(parents)):
        raise InvalidInput("'parents' must name for each bone an earlier bone (or -1)")
    for key in ("base_relatives", "inverse_base_absolutes"):
        value = np.asarray(_field(model, key), dtype=object)
        if np.size(value) != BONES * 16:
            raise InvalidInput(f"{key!r} must hold {BONES} 4 × 4 matrices")
        _array(model, key, np.shape(_field(model, key)))
    us = data.get("us")
    complicated = bool(us)
    correspondences = _array(inner, "correspondences", (n,), "i")
    _within(correspondences, "correspondences", 0, len(triangles) if complicated else vertices)
    _within(triangles, "triangles", 0, vertices)
    if complicated:
        _array(data, "us", (n, 2))


def _lstm(data) -> None:
    main = _array(data, "main_params", (None, None))
    layers2, width = main.shape
    if layers2 % 2 or width % 4:
        raise InvalidInput("'main_params' must have 2·l rows of 4·b numbers")
    b = width // 4
    _array(data, "extra_params", (3, b))
    _array(data, "state", (layers2, b))
    _array(data, "sequence", (None, b))


def _ode(data) -> None:
    _array(data, "x", (None,))
    _int(data, "s")


def _llsq(data) -> None:
    _array(data, "x", (None,))
    _int(data, "n", 2)


def _lse(data) -> None:
    _array(data, "x", (None,))


def _kmeans(data) -> None:
    points = _array(data, "points", (None, None))
    _array(data, "centroids", (None, points.shape[1]))


def _det(data) -> None:
    ell = _int(data, "ell")
    _array(data, "A", (ell * ell,))


def _particle(data) -> None:
    _float(data, "w")


def _saddle(data) -> None:
    _array(data, "start", (2,))


def _hello(data) -> None:
    if isinstance(data, bool) or not isinstance(data, (int, float)) or \
            not math.isfinite(data):
        raise InvalidInput(f"the input must be a finite number, not {data!r}")


CHECKS = {"hello": _hello, "gmm": _gmm, "ba": _ba, "ht": _ht, "lstm": _lstm, "ode": _ode,
          "llsq": _llsq, "lse": _lse, "kmeans": _kmeans, "det": _det,
          "particle": _particle, "saddle": _saddle}


def check(eval_name: str, data) -> None:
    """Raise `InvalidInput` unless `data` is a valid input of `eval_name`."""
    CHECKS[eval_name](data)
