"""torch.py — fusenet's fused block as a torch.nn.Module: FusedBlock's
forward and backward run the library's block (block_memory.h) on the
tensors' own memory: no copy of the input, the parameters or the output
is made, and the caches forward leaves for backward are tensors autograd
keeps. Its parameters are nn.Parameters under the state_dict keys of the
unfused block (scripts/weights_to_torch.py's Block): linear.weight,
linear.bias, norm.weight, norm.bias, so any optimiser trains it and a
state_dict moves between the two.

CPU tensors run on the library's CPU backend; CUDA tensors on its CUDA
kernels, queued on PyTorch's current stream (fn_context_use_stream), with
the workspace the math mode needs (block_memory.h's scratch) a tensor from
PyTorch's allocator that autograd keeps from forward to backward. `math`
picks the library's math mode on the GPU (fp32, tf32, tf32x3, bf16).
"""
import ctypes

import torch
from torch import nn

from . import _lib
from ._lib import check, lib


class _BlockConfig(ctypes.Structure):
    _fields_ = [("in_features", ctypes.c_int), ("out_features", ctypes.c_int),
                ("groups", ctypes.c_int), ("eps", ctypes.c_float),
                ("negative_slope", ctypes.c_float), ("forward_only", ctypes.c_int),
                ("residual", ctypes.c_int)]


class _BlockMemory(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("x", "weight", "bias", "gamma", "beta", "z", "mean", "rstd", "scratch")]


_fp = ctypes.c_void_p
lib.fn_block_memory_forward.restype = ctypes.c_int
lib.fn_block_memory_forward.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BlockConfig),
                                        ctypes.c_int, ctypes.POINTER(_BlockMemory), _fp]
lib.fn_block_memory_backward.restype = ctypes.c_int
lib.fn_block_memory_backward.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BlockConfig),
                                         ctypes.c_int, ctypes.POINTER(_BlockMemory)] + [_fp] * 7
lib.fn_block_memory_scratch_floats.restype = ctypes.c_size_t
lib.fn_block_memory_scratch_floats.argtypes = [ctypes.c_void_p, ctypes.POINTER(_BlockConfig),
                                               ctypes.c_int]
lib.fn_context_use_stream.restype = ctypes.c_int
lib.fn_context_use_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

_FN_CPU, _FN_CUDA = 0, 1
_MATHS = {"fp32": 0, "tf32": 1, "tf32x3": 2, "bf16": 3}
_contexts = {}


def _context(device, math):
    """One context of the library a (device, math mode) for every block of
    the process; on a GPU its work queued on PyTorch's current stream."""
    key = (device.type, device.index if device.type == "cuda" else None, math)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = ctypes.c_void_p()
        if device.type == "cuda":
            check(lib.fn_context_create(ctypes.byref(ctx), _FN_CUDA, key[1], _MATHS[math]))
        else:
            check(lib.fn_context_create(ctypes.byref(ctx), _FN_CPU, 0, 0))
        _contexts[key] = ctx
    if device.type == "cuda":
        check(lib.fn_context_use_stream(ctx, torch.cuda.current_stream(device).cuda_stream))
    return ctx


_scratch_sizes = {}


def _scratch_floats(lctx, cfg, rows, math):
    """fn_block_memory_scratch_floats, asked once a shape."""
    key = (lctx.value, cfg.in_features, cfg.out_features, cfg.groups, rows, math)
    floats = _scratch_sizes.get(key)
    if floats is None:
        floats = lib.fn_block_memory_scratch_floats(lctx, ctypes.byref(cfg), rows)
        _scratch_sizes[key] = floats
    return floats


def _ptr(t):
    return None if t is None else t.data_ptr()


def _memory(x, weight, bias, gamma, beta, z, mean, rstd, scratch):
    return _BlockMemory(*(_ptr(t) for t in (x, weight, bias, gamma, beta, z, mean, rstd,
                                            scratch)))


def _checked(t, name, device):
    if t.device != device:
        raise ValueError("fusenet.torch.FusedBlock: %s is on %s and the input on %s"
                         % (name, t.device, device))
    if t.dtype != torch.float32:
        raise TypeError("fusenet.torch.FusedBlock: %s is %s; the block computes in float32"
                        % (name, t.dtype))
    return t.contiguous()


class _FusedBlockFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, gamma, beta, cfg, math):
        device = x.device
        x = _checked(x, "the input", device)
        weight, bias, gamma, beta = (_checked(t, n, device) for t, n in (
            (weight, "linear.weight"), (bias, "linear.bias"), (gamma, "norm.weight"),
            (beta, "norm.bias")))
        rows = x.shape[0]
        y = x.new_empty((rows, cfg.out_features))
        z = x.new_empty((rows, cfg.out_features))
        mean = x.new_empty((rows, cfg.groups))
        rstd = x.new_empty((rows, cfg.groups))
        scratch = None
        if rows:
            lctx = _context(device, math)
            floats = _scratch_floats(lctx, cfg, rows, math)
            scratch = x.new_empty(floats) if floats else None
            m = _memory(x, weight, bias, gamma, beta, z, mean, rstd, scratch)
            check(lib.fn_block_memory_forward(lctx, ctypes.byref(cfg), rows, ctypes.byref(m),
                                              y.data_ptr()))
        ctx.cfg, ctx.math = cfg, math
        ctx.save_for_backward(x, weight, bias, gamma, beta, z, mean, rstd, scratch)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias, gamma, beta, z, mean, rstd, scratch = ctx.saved_tensors
        cfg = ctx.cfg
        dy = _checked(dy, "the output's gradient", x.device)
        rows = x.shape[0]
        dx = torch.empty_like(x) if ctx.needs_input_grad[0] else None
        # The library assigns the gradients (block_memory.h): no zeroing,
        # but an empty batch's are zero.
        grads = [torch.empty_like(t) if rows else torch.zeros_like(t)
                 for t in (weight, bias, gamma, beta)]
        if rows:
            dz = torch.empty_like(z)
            m = _memory(x, weight, bias, gamma, beta, z, mean, rstd, scratch)
            check(lib.fn_block_memory_backward(_context(x.device, ctx.math), ctypes.byref(cfg),
                                               rows, ctypes.byref(m), dy.data_ptr(),
                                               dz.data_ptr(), _ptr(dx),
                                               *(g.data_ptr() for g in grads)))
        elif dx is not None:
            dx.zero_()
        return (dx, *grads, None, None)


class FusedBlock(nn.Module):
    """y = 2 * leaky_relu(group_norm(linear(x))), as nn.Sequential(Linear,
    GroupNorm, LeakyReLU, x2) with fusenet's kernels: x [N, in_features]
    float32 -> y [N, out_features]. Initialised as those modules are."""

    def __init__(self, in_features, out_features, groups, eps=1e-5, negative_slope=0.01,
                 math="fp32"):
        super().__init__()
        # Holders of the parameters under the unfused block's names; their
        # forward is never called.
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(groups, out_features, eps=eps)
        self.in_features, self.out_features = in_features, out_features
        self.groups, self.eps, self.negative_slope = groups, eps, negative_slope
        if math not in _MATHS:
            raise ValueError("FusedBlock: math %r; expected one of %s" % (math, ", ".join(_MATHS)))
        self.math = math  # the library's math mode on a GPU; the CPU computes in fp32
        self._cfg = _BlockConfig(in_features, out_features, groups, eps, negative_slope, 0, 0)

    def forward(self, x):
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError("FusedBlock: input of shape %s; expected [N, %d]"
                             % (tuple(x.shape), self.in_features))
        return _FusedBlockFunction.apply(x, self.linear.weight, self.linear.bias,
                                         self.norm.weight, self.norm.bias, self._cfg, self.math)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, groups=%d, eps=%g, negative_slope=%g" % (
            self.in_features, self.out_features, self.groups, self.eps, self.negative_slope)
