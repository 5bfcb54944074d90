"""ba: the errors are rev's `reproj!` and `weight_error!` mapped over every
observation; the Jacobian's nonzeros are rlang's batched derivatives of them.

Note [Sparse Jacobian by batched gradients]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Reprojection error row 2i + r depends only on observation i's camera (11
numbers), point (3) and weight (1); weight error row i only on weight i.  So
every nonzero of the Jacobian is an entry of one of two batched derivatives over
all p observations: the 2 × 15 Jacobian of reproj!'s e! with respect to the
observation's parameters (camera, point, weight: one vector, in the order of the
row's columns), `rlang.vmap` of `rlang.jacrev` (one native forward run and one
gradient pass carrying both rows: Note [Batched Jacobians], rlang/ad/batched.py),
and the weight error's gradient over w (`rlang.vmap` of `rlang.grad`).  The first
is ADBench's CSR values of the reprojection rows as they are (p × 2 × 15); Python
only appends the weights' (`suite/inputs/ba.py`).  (One batched gradient per row
took 2.9-3.9x the manual tool's time on ba1 and ba2; the parameters as three
arguments, whose Jacobians were then copied into the rows part by part, 1.9x on
ba12-ba14 in GradBench's harness.)
"""

from __future__ import annotations

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction
from ..inputs.ba import Observations, csr_output, objective_output
from ._load import program


def prepare(function: str, input) -> Prepared:
    m = program("ba")
    obs = Observations.from_input(input)
    params, w, feats, p = obs.params_seen, obs.w, obs.feats, obs.p
    if function == "objective":
        reproj, werr = rlang.vmap(m["reproj!"]), rlang.vmap(m["weight_error!"])

        def run():
            return reproj(np.zeros((p, 2)), params, feats)[0], werr(np.zeros(p), w)[0]
        output = objective_output
    elif function == "jacobian":
        jacobian = rlang.vmap(rlang.jacrev(m["reproj!"], "e!", argnums=1))
        dweight = rlang.vmap(rlang.grad(m["weight_error!"], "e!", argnums=1))

        def run():
            return obs.csr(jacobian(np.zeros((p, 2)), params, feats),
                           dweight(np.zeros(p), w))
        output = csr_output
    else:
        raise UnknownFunction("ba", function)
    warm_up(run)
    return Prepared(run, output)
