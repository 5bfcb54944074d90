"""The PyTorch baseline: one module per eval, each with `prepare(function, input)`.

Written here, idiomatic PyTorch (`torch.autograd`, `torch.func`).
"""
