"""lstm in PyTorch: the layers of one step vectorised over the b units, a Python
loop over the steps; ``jacobian`` is ``torch.autograd``'s gradient with respect to
both parameter arrays."""

from __future__ import annotations

from ..common import Prepared, UnknownFunction, floats
from ._setup import torch

_ARRAYS = ("main_params", "extra_params", "state", "sequence")


def _objective(main_params, extra_params, state, sequence):
    l = main_params.shape[0] // 2
    weight = main_params[0::2].reshape(l, 4, -1)
    bias = main_params[1::2].reshape(l, 4, -1)
    hidden = list(state[0::2].unbind(0))
    cell = list(state[1::2].unbind(0))
    total = torch.zeros((), dtype=main_params.dtype)
    for t in range(sequence.shape[0] - 1):
        inp = sequence[t] * extra_params[0]
        for j in range(l):
            w, b = weight[j], bias[j]
            forget = torch.sigmoid(inp * w[0] + b[0])
            ingate = torch.sigmoid(hidden[j] * w[1] + b[1])
            outgate = torch.sigmoid(inp * w[2] + b[2])
            change = torch.tanh(hidden[j] * w[3] + b[3])
            cell[j] = cell[j] * forget + ingate * change
            hidden[j] = outgate * torch.tanh(cell[j])
            inp = hidden[j]
        pred = inp * extra_params[1] + extra_params[2]
        total = total + torch.sum(sequence[t + 1] * (pred - torch.log(2.0 + torch.sum(torch.exp(pred)))))
    return -total / ((sequence.shape[0] - 1) * sequence.shape[1])


def prepare(function: str, input) -> Prepared:
    main, extra, state, sequence = (torch.from_numpy(floats(input[name])) for name in _ARRAYS)
    if function == "objective":
        def run():
            with torch.no_grad():
                return _objective(main, extra, state, sequence)
        output = float
    elif function == "jacobian":
        def run():
            m = main.detach().requires_grad_(True)
            e = extra.detach().requires_grad_(True)
            return torch.autograd.grad(_objective(m, e, state, sequence), (m, e))

        def output(result):
            return torch.cat([part.reshape(-1) for part in result]).tolist()
    else:
        raise UnknownFunction("lstm", function)
    run()
    return Prepared(run, output)
