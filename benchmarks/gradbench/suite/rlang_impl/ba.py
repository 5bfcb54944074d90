"""ba: the errors are rev's `reproj!` and `weight_error!` mapped over every
observation; the Jacobian's nonzeros are rlang's batched gradients of them.

Note [Sparse Jacobian by batched gradients]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Reprojection error row 2i + r depends only on observation i's camera (11
numbers), point (3) and weight (1); weight error row i only on weight i.  So
every nonzero of the Jacobian is an entry of one of three batched gradients,
each one native forward pass and one native gradient pass over all p
observations (`rlang.vmap` of `rlang.grad`): of e[0] and of e[1] over each
observation's (camera, point, weight), and of the weight error over w.  Python
only lays those gradients out in ADBench's CSR order (`suite/inputs/ba.py`):
per observation, its two rows of 15 entries (camera, point, weight columns),
then one row per weight.
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
    cams, xs, w, feats = obs.cams_seen, obs.points_seen, obs.w, obs.feats
    p = obs.p
    if function == "objective":
        reproj, werr = rlang.vmap(m["reproj!"]), rlang.vmap(m["weight_error!"])

        def run():
            e = reproj(np.zeros((p, 2)), cams, xs, w, feats)[0]
            return e, werr(np.zeros(p), w)[0]
        output = objective_output
    elif function == "jacobian":
        rows = [rlang.vmap(rlang.grad(m["reproj!"], f"e![{r}]", argnums=(1, 2, 3)))
                for r in range(2)]
        dweight = rlang.vmap(rlang.grad(m["weight_error!"], "e!", argnums=1))

        def run():
            blocks = np.empty((p, 2, 15))
            for r, row in enumerate(rows):
                dcam, dx, dw = row(np.zeros((p, 2)), cams, xs, w, feats)
                blocks[:, r, :11] = dcam
                blocks[:, r, 11:14] = dx
                blocks[:, r, 14] = dw
            return obs.csr(blocks, dweight(np.zeros(p), w))
        output = csr_output
    else:
        raise UnknownFunction("ba", function)
    warm_up(run)
    return Prepared(run, output)
