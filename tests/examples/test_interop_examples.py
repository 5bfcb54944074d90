"""examples/jax_layer.py and examples/torch_layer.py (docs/interop.md): the same
model, with the rev layer of examples/layers/tanh_layer.rev, trained in JAX and in
PyTorch: each fits the data, and the two give the same parameters (the same data,
the same steps, rlang's derivatives in both)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str):
    module = "torch" if name == "torch_layer" else "jax"
    if not os.environ.get("RLANG_CI"):
        pytest.importorskip(module)
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def test_both_frameworks_train_the_rev_layer_to_the_same_parameters(monkeypatch):
    monkeypatch.setenv("RLANG_BACKEND", "auto")     # as a user runs them: 1 s, not 60
    jax_example, torch_example = example("jax_layer"), example("torch_layer")
    first, last, params = jax_example.train(300, seed=1)
    torch_first, torch_last, model = torch_example.train(300, seed=1)
    assert last < first / 20
    assert torch_first == pytest.approx(first, rel=1e-12)
    assert torch_last == pytest.approx(last, rel=1e-9)
    np.testing.assert_allclose(model.w.detach().numpy(), np.asarray(params["w"]), rtol=1e-9)
