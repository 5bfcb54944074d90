"""ba in PyTorch: the errors are one observation's function `torch.func.vmap`ped
over all of them; the Jacobian's nonzeros are ``vmap(jacrev(...))`` of it, laid
out in ADBench's CSR order by `inputs.ba.Observations.csr` (as the rlang tool
does)."""

from __future__ import annotations


from ..common import Prepared, UnknownFunction
from ..inputs.ba import Observations, csr_output, objective_output
from ._setup import torch

from torch.func import grad, jacrev, vmap  # noqa: E402


def _rotate(r, x):
    """x rotated by the Rodrigues vector r (first order x + r × x at r = 0)."""
    sq = torch.dot(r, r)
    nonzero = sq != 0.0
    th = torch.sqrt(torch.where(nonzero, sq, torch.ones_like(sq)))
    c, s = torch.cos(th), torch.sin(th)
    axis = r / th
    full = x * c + torch.linalg.cross(axis, x) * s + axis * (torch.dot(axis, x) * (1.0 - c))
    return torch.where(nonzero, full, x + torch.linalg.cross(r, x))


def _reproj(par, feat):
    """The weighted reprojection error (2) of one observation, whose camera, point
    and weight are `par` (15)."""
    cam, x, w = par[0:11], par[11:14], par[14]
    p = _rotate(cam[0:3], x - cam[3:6])
    uv = p[:2] / p[2]
    rr = torch.dot(uv, uv)
    dist = 1.0 + cam[9] * rr + cam[10] * rr * rr
    return w * (uv * dist * cam[6] + cam[7:9] - feat)


def _weight_error(w):
    return 1.0 - w * w


_reproj_all = vmap(_reproj)
_reproj_blocks = vmap(jacrev(_reproj))
_weight_derivatives = vmap(grad(_weight_error))


def prepare(function: str, input) -> Prepared:
    obs = Observations.from_input(input)
    args = tuple(torch.from_numpy(a) for a in
                 (obs.params_seen, obs.w, obs.feats))
    params, w, feats = args
    if function == "objective":
        def run():
            with torch.no_grad():
                return _reproj_all(params, feats).numpy(), _weight_error(w).numpy()
        output = objective_output
    elif function == "jacobian":
        def run():
            return obs.csr(_reproj_blocks(params, feats).numpy(),
                           _weight_derivatives(w).numpy())
        output = csr_output
    else:
        raise UnknownFunction("ba", function)
    run()
    return Prepared(run, output)
