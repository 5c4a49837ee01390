"""Python references for experiments/python-reference.toml, python-in-place.toml and
python-on-gpu.toml (`check_python`): each function is given the kernel's inputs by name (its
buffers as 1-D NumPy arrays, or torch tensors with `torch = true`, on the GPU with `gpu =
true`; its scalars as numbers) and returns what the kernel's outputs must hold."""

import numpy as np


def layer_norm(x, gamma, beta, rows, cols):
    """`(x - mean) / sqrt(var + 1e-5) * gamma + beta` over each row, in float64."""
    x = x.reshape(rows, cols).astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta


def layer_norm_torch(x, gamma, beta, rows, cols):
    """The same by torch, in float32 on the CPU."""
    import torch

    out = torch.nn.functional.layer_norm(x.reshape(rows, cols), (cols,), gamma, beta, eps=1e-5)
    return out


def layer_norm_without_beta(x, gamma, beta, rows, cols):
    """A wrong reference on purpose: the shift left out, which the check must catch."""
    return layer_norm(x, gamma, np.zeros_like(beta), rows, cols)


def saxpy(a, x, y, count):
    """`a * x + y` in float64: `y` is updated in place, so the function is given it as it
    was before the launch and returns what it must hold after."""
    return a * x.astype(np.float64) + y


def saxpy_without_y(a, x, y, count):
    """A wrong reference on purpose: `a * x` alone, as a kernel that overwrote `y` would
    leave it; the check must catch it."""
    return a * x.astype(np.float64)


def saxpy_on_gpu(a, x, y, count):
    """`a * x + y` by torch on the GPU (`gpu = true`: `x` and `y` are torch tensors there),
    in float64; the runner casts it to the output's type."""
    return a * x.double() + y.double()


def saxpy_on_gpu_without_y(a, x, y, count):
    """A wrong reference on purpose, on the GPU: `a * x` alone."""
    return a * x.double()
