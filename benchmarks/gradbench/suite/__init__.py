"""rlang as a GradBench tool, and the JAX and PyTorch baselines it is measured against.

The package is the suite behind ``tool.py`` (GradBench's protocol), ``run.py``
(side by side) and ``against_gradbench.py`` (the real evals):

- `EVALS`: GradBench's twelve evals, and the functions each one asks for;
- ``inputs/<eval>.py``: input generators that follow each eval's specification;
- ``rlang_impl/``, ``jax_impl/``, ``torch_impl/``: one module per eval and tool, each
  with ``prepare(function, input) -> Prepared`` (``common.py``);
- ``protocol.py``: one tool's side of GradBench's JSON-lines protocol.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: eval name -> the functions GradBench's eval asks for, in the order it asks
EVALS: dict[str, tuple[str, ...]] = {
    "hello": ("square", "double"),
    "gmm": ("objective", "jacobian"),
    "ba": ("objective", "jacobian"),
    "ht": ("objective", "jacobian"),
    "lstm": ("objective", "jacobian"),
    "ode": ("primal", "gradient"),
    "llsq": ("primal", "gradient"),
    "lse": ("primal", "gradient"),
    "kmeans": ("cost", "dir"),
    "det": ("primal", "gradient"),
    "particle": ("rr", "ff", "fr", "rf"),
    "saddle": ("rr", "ff", "fr", "rf"),
}

#: tool name (as GradBench spells it) -> the subpackage holding its modules
TOOLS: dict[str, str] = {"rlang": "rlang_impl", "jax": "jax_impl", "pytorch": "torch_impl"}


def tool_module(tool: str, eval_name: str) -> ModuleType | None:
    """The module implementing `eval_name` for `tool`, or None when there is none.

    An import error inside an existing module is not hidden: it propagates."""
    if tool not in TOOLS:
        raise ValueError(f"unknown tool {tool!r}; the tools are {', '.join(TOOLS)}")
    if eval_name not in EVALS:
        return None
    name = f"{__name__}.{TOOLS[tool]}.{eval_name}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name == name:
            return None
        raise


def inputs_module(eval_name: str) -> ModuleType:
    """The generator module of `eval_name` (``inputs/<eval>.py``)."""
    return importlib.import_module(f"{__name__}.inputs.{eval_name}")
