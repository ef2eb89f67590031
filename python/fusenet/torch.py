"""torch.py — fusenet's fused block as a torch.nn.Module: FusedBlock's
forward and backward run the library's block (block_memory.h) on the
tensors' own memory: no copy of the input, the parameters or the output
is made, and the caches forward leaves for backward are tensors autograd
keeps. Its parameters are nn.Parameters under the state_dict keys of the
unfused block (scripts/weights_to_torch.py's Block): linear.weight,
linear.bias, norm.weight, norm.bias, so any optimiser trains it and a
state_dict moves between the two.

CPU tensors run on the library's CPU backend. CUDA tensors are refused
with a message: the library's entry point on caller memory runs the CPU
backend only.
"""
import ctypes

import torch
from torch import nn

from . import _lib
from ._lib import check, lib


class _BlockConfig(ctypes.Structure):
    _fields_ = [("in_features", ctypes.c_int), ("out_features", ctypes.c_int),
                ("groups", ctypes.c_int), ("eps", ctypes.c_float),
                ("negative_slope", ctypes.c_float), ("forward_only", ctypes.c_int)]


class _BlockMemory(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("x", "weight", "bias", "gamma", "beta", "z", "mean", "rstd")]


_fp = ctypes.c_void_p
lib.fn_block_memory_forward.restype = ctypes.c_int
lib.fn_block_memory_forward.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BlockConfig),
                                        ctypes.c_int, ctypes.POINTER(_BlockMemory), _fp]
lib.fn_block_memory_backward.restype = ctypes.c_int
lib.fn_block_memory_backward.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BlockConfig),
                                         ctypes.c_int, ctypes.POINTER(_BlockMemory)] + [_fp] * 7

_cpu_context = None


def _context():
    """One CPU context of the library for every block of the process."""
    global _cpu_context
    if _cpu_context is None:
        ctx = ctypes.c_void_p()
        check(lib.fn_context_create(ctypes.byref(ctx), 0, 0, 0))
        _cpu_context = ctx
    return _cpu_context


def _ptr(t):
    return None if t is None else t.data_ptr()


def _memory(x, weight, bias, gamma, beta, z, mean, rstd):
    return _BlockMemory(*(_ptr(t) for t in (x, weight, bias, gamma, beta, z, mean, rstd)))


def _checked(t, name):
    if t.device.type != "cpu":
        raise NotImplementedError(
            "fusenet.torch.FusedBlock: %s is on %s; the library runs the block on caller "
            "memory on the CPU only" % (name, t.device))
    if t.dtype != torch.float32:
        raise TypeError("fusenet.torch.FusedBlock: %s is %s; the block computes in float32"
                        % (name, t.dtype))
    return t.contiguous()


class _FusedBlockFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, gamma, beta, cfg):
        x = _checked(x, "the input")
        weight, bias, gamma, beta = (_checked(t, n) for t, n in (
            (weight, "linear.weight"), (bias, "linear.bias"), (gamma, "norm.weight"),
            (beta, "norm.bias")))
        rows = x.shape[0]
        y = x.new_empty((rows, cfg.out_features))
        z = x.new_empty((rows, cfg.out_features))
        mean = x.new_empty((rows, cfg.groups))
        rstd = x.new_empty((rows, cfg.groups))
        if rows:
            m = _memory(x, weight, bias, gamma, beta, z, mean, rstd)
            check(lib.fn_block_memory_forward(_context(), ctypes.byref(cfg), rows,
                                              ctypes.byref(m), y.data_ptr()))
        ctx.cfg = cfg
        ctx.save_for_backward(x, weight, bias, gamma, beta, z, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias, gamma, beta, z, mean, rstd = ctx.saved_tensors
        cfg = ctx.cfg
        dy = _checked(dy, "the output's gradient")
        rows = x.shape[0]
        dx = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        grads = [torch.zeros_like(t) for t in (weight, bias, gamma, beta)]
        if rows:
            dz = torch.empty_like(z)
            m = _memory(x, weight, bias, gamma, beta, z, mean, rstd)
            check(lib.fn_block_memory_backward(_context(), ctypes.byref(cfg), rows,
                                               ctypes.byref(m), dy.data_ptr(), dz.data_ptr(),
                                               _ptr(dx), *(g.data_ptr() for g in grads)))
        elif dx is not None:
            dx.zero_()
        return (dx, *grads, None)


class FusedBlock(nn.Module):
    """y = 2 * leaky_relu(group_norm(linear(x))), as nn.Sequential(Linear,
    GroupNorm, LeakyReLU, x2) with fusenet's kernels: x [N, in_features]
    float32 -> y [N, out_features]. Initialised as those modules are."""

    def __init__(self, in_features, out_features, groups, eps=1e-5, negative_slope=0.01):
        super().__init__()
        # Holders of the parameters under the unfused block's names; their
        # forward is never called.
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features, eps=eps)
        self.in_features, self.out_features = in_features, out_features
        self.groups, self.eps, self.negative_slope = groups, eps, negative_slope
        self._cfg = _BlockConfig(in_features, out_features, groups, eps, negative_slope, 0)

    def forward(self, x):
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError("FusedBlock: input of shape %s; expected [N, %d]"
                             % (tuple(x.shape), self.in_features))
        return _FusedBlockFunction.apply(x, self.linear.weight, self.linear.bias,
                                         self.norm.weight, self.norm.bias, self._cfg)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, groups=%d, eps=%g, negative_slope=%g" % (
            self.in_features, self.out_features, self.groups, self.eps, self.negative_slope)
