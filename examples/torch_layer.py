"""Train a small PyTorch model with a rev layer inside it.

    python examples/torch_layer.py [--steps N] [--seed S]

The model is  prediction = a · tanh(x w) + b,  where `tanh(x w)` is the rev function
`layer!` of examples/layers/tanh_layer.rev wrapped by `rlang.torch.wrap` (a
`torch.autograd.Function` whose backward is rlang's gradient pass), and the rest
is PyTorch: an `nn.Module`, `torch.optim.SGD`, `loss.backward()`.  It fits
synthetic data made with known parameters, and prints the loss before and after
and the parameters found.  docs/interop.md walks through it.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import torch

import rlang

HERE = Path(__file__).resolve().parent


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = rlang.torch.wrap(rlang.load(HERE / "layers" / "tanh_layer.rev").layer_)
        self.w = torch.nn.Parameter(torch.full((3,), 0.1, dtype=torch.float64))
        self.a = torch.nn.Parameter(torch.tensor(1.0, dtype=torch.float64))
        self.b = torch.nn.Parameter(torch.tensor(0.0, dtype=torch.float64))

    def forward(self, x):
        h, _, _ = self.layer(torch.zeros(x.shape[0], dtype=x.dtype), x, self.w)
        return self.a * h + self.b


def data(seed: int, n: int = 128):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = 2.0 * np.tanh(x @ np.array([0.5, -1.0, 0.25])) + 0.5 + 0.01 * rng.normal(size=n)
    return torch.from_numpy(x), torch.from_numpy(y)


def train(steps: int, seed: int) -> tuple:
    x, y = data(seed)
    model = Model()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.2)
    with torch.no_grad():
        first = torch.mean((model(x) - y) ** 2).item()
    for _ in range(steps):
        optimiser.zero_grad()
        loss = torch.mean((model(x) - y) ** 2)
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        last = torch.mean((model(x) - y) ** 2).item()
    return first, last, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    first, last, model = train(args.steps, args.seed)
    print(f"loss before {first:.6f}, after {args.steps} steps {last:.6f}")
    print(f"w = {np.round(model.w.detach().numpy(), 3)}, a = {model.a.item():.3f}, "
          f"b = {model.b.item():.3f}")


if __name__ == "__main__":
    main()
