"""PyTorch as every baseline here uses it: float64 on the CPU, one thread.

The baselines build every tensor as float64 through `tensor` rather than setting
torch's default dtype: that default is process-wide, and a test run that imports
the baselines would change what every later torch user in the process gets."""

import functools

import torch

torch.set_num_threads(1)

#: ``torch.tensor`` with float64 as the dtype.
tensor = functools.partial(torch.tensor, dtype=torch.float64)

__all__ = ["tensor", "torch"]
