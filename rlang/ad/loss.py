"""The loss of a gradient: which value of a function's results is differentiated.

`resolve_loss(fn, loss)` turns what a caller wrote (a name, a position, `(name,
index)` or the text of a view: `"y[2]"`, `"z.re"`) into a view of one of `fn`'s
parameters; `loss_location(fn, values, view)` finds that view among the values of a
run, as (parameter position, element index or None), and checks that it is a
scalar that can be differentiated.  Both AD drivers use these: the interpreter's
(drivers.py) and the compiled backends' (compiled.py).
"""
from __future__ import annotations

import functools

import numpy as np

from ..dual import Dual
from ..errors import RlangError, RlangTypeError
from ..frontend import ast
from ..frontend.printer import format_expr
from ..interp.evaluate import Evaluator
from ..numbers import Fixed, ULog
from ..values import format_value


def resolve_loss(fn: ast.Function, loss) -> ast.Name | ast.Index | ast.Field:
    """The loss as a view of one of `fn`'s parameters."""
    names = [p.name for p in fn.params]
    if isinstance(loss, bool):
        raise RlangError(f"loss must name a parameter of `{fn.name}`, got {loss!r}")
    if isinstance(loss, int):
        if not 0 <= loss < len(names):
            raise RlangError(f"loss position {loss} is not a parameter of `{fn.name}` "
                             f"(it has {len(names)})")
        return ast.Name(names[loss])
    if isinstance(loss, tuple) and len(loss) == 2:
        name, index = loss
        index = index if isinstance(index, tuple) else (index,)
        if not isinstance(name, str) or not index or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in index):
            raise RlangError(f"loss {loss!r}: write (name, index) with integer indices")
        view = ast.Index(ast.Name(name), tuple(ast.IntLit(int(i)) for i in index))
    elif isinstance(loss, str):     # a parameter's name is its own view: no parser
        view = ast.Name(loss) if loss in names else _parsed(loss)
    else:
        raise RlangError(f"loss must be a name, a position or (name, index), got {loss!r}")
    root = ast.view_root(view)
    if isinstance(view, ast.Field) and (view.name not in ("re", "im")
                                        or isinstance(view.base, ast.Field)):
        raise RlangError(f"loss {loss!r}: a complex number has the fields .re and .im")
    if not ast.is_view(view) or root is None:
        raise RlangError(f"loss {loss!r} is not a view (a name, `name[i]` or `name.re`)")
    if root.id not in names:
        raise RlangError(f"loss {loss!r}: `{root.id}` is not a parameter of `{fn.name}`; "
                         + (f"its parameters are {', '.join(names)}" if names else
                            "it has no parameters"))
    return view


@functools.lru_cache(maxsize=256)
def _parsed(text: str):
    """The loss text as an expression, parsed once per text: parsing runs on the
    deep-stack thread (rlang/deep.py), whose start costs more than a small gradient.
    The tree is immutable, so one may serve every call; a text that fails to parse
    is not cached and raises again.  (The parser, and lark with it, is imported
    here: a loss that names a parameter needs neither, and a warm first gradient
    saves the 30 ms of lark's import.)"""
    from ..frontend.parser import parse_expression

    return parse_expression(text, "<loss>")


def check_loss_value(view, value) -> None:
    """A loss must be a float, fixed, complex or ulog scalar."""
    if isinstance(value, np.ndarray) or not (isinstance(value, (float, complex, Fixed, ULog,
                                                                Dual))
                                             and not isinstance(value, bool)):
        raise RlangTypeError(f"the loss `{_text(view)}` must be a float, fixed, complex or "
                             f"ulog scalar, got {format_value(value)}")


def loss_location(fn: ast.Function, values: list, view) -> tuple:
    """(parameter position, element index or None) of a loss view of `fn` whose
    parameters hold `values`; the view's value is checked as a loss."""
    env = dict(zip((p.name for p in fn.params), values))
    evaluator = Evaluator({})
    check_loss_value(view, evaluator.eval(view, env))
    position = [p.name for p in fn.params].index(ast.view_root(view).id)
    if isinstance(view, ast.Index):
        return position, tuple(int(evaluator.eval(i, env)) for i in view.indices)
    return position, None


def _text(view) -> str:
    return format_expr(view)
