"""ba: the errors are rev's `reproj!` and `weight_error!` mapped over every
observation; the Jacobian's nonzeros are rlang's batched gradients of them.

Note [Sparse Jacobian by batched gradients]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Reprojection error row 2i + r depends only on observation i's camera (11
numbers), point (3) and weight (1); weight error row i only on weight i.  So
every nonzero of the Jacobian is an entry of one of two batched derivatives over
all p observations: the 2 × (11 + 3 + 1) Jacobian of reproj!'s e! with respect
to the observation's (camera, point, weight), `rlang.vmap` of `rlang.jacrev`
(one native forward run and one gradient pass carrying both rows: Note [Batched
Jacobians], rlang/ad/batched.py), and the weight error's gradient over w
(`rlang.vmap` of `rlang.grad`).  Python only lays those out in ADBench's CSR
order (`suite/inputs/ba.py`): per observation, its two rows of 15 entries
(camera, point, weight columns), then one row per weight.  (One batched gradient
per row, as before, took 2.9-3.9x the manual tool's time on ba1 and ba2.)
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
        jacobian = rlang.vmap(rlang.jacrev(m["reproj!"], "e!", argnums=(1, 2, 3)))
        dweight = rlang.vmap(rlang.grad(m["weight_error!"], "e!", argnums=1))

        def run():
            dcam, dx, dw = jacobian(np.zeros((p, 2)), cams, xs, w, feats)
            return obs.csr(dcam, dx, dw, dweight(np.zeros(p), w))
        output = csr_output
    else:
        raise UnknownFunction("ba", function)
    warm_up(run)
    return Prepared(run, output)
