"""PyTorch as every baseline here uses it: float64 on the CPU, one thread."""

import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

__all__ = ["torch"]
