"""torch.py — fusenet's fused block for PyTorch: FusedBlock, an nn.Module
whose forward and backward run the library's block (block_memory.h) on the
tensors' own memory, and fuse(), which puts FusedBlocks in place of the
unfused Linear -> GroupNorm -> LeakyReLU -> x + x chains of a model.

Where the library's memory comes from: every array the block's calls
touch (the output, the caches forward leaves for backward, the GPU's
workspace "scratch", the gradients) is a tensor PyTorch allocates and
passes in; the library allocates nothing per call and never synchronises,
and its CUDA work is queued on PyTorch's current stream
(fn_context_use_stream). So a training step of FusedBlocks can be captured
by torch.cuda.graph.

Two doors to the same two calls (_block_forward, _block_backward):
  - PyTorch with torch.library.custom_op (2.4 and later): the custom
    operators fusenet::block_forward and fusenet::block_backward, with
    fake (meta) implementations and the forward's autograd registered, so
    torch.compile(model, fullgraph=True) takes a network of FusedBlocks
    whole; compiled code, and tensor subclasses (fake tensors), go through
    them;
  - a torch.autograd.Function over the same calls: older PyTorch's door,
    and eager code's on plain tensors in any version, since the
    operator's dispatch costs several times the library call at small
    shapes (under no_grad not even the Function: the call alone).

Parameters are nn.Parameters (float32 whatever the default dtype) under the
state_dict keys of the unfused block (scripts/weights_to_torch.py's Block):
linear.weight, linear.bias, norm.weight, norm.bias. `math` picks the
library's math mode on the GPU (fp32, tf32, tf32x3, bf16); inside
torch.autocast("cuda", dtype=torch.bfloat16) a block on the GPU computes
in bf16. The block has no second derivative: a backward with
create_graph=True through it raises.
"""
import ctypes
import operator
from typing import Tuple

try:
    import torch
    from torch import Tensor, nn
except ImportError as missing:  # the door needs PyTorch; fusenet itself does not
    raise ImportError("fusenet.torch needs PyTorch: pip install 'fusenet[torch]' "
                      "(%s)" % missing) from missing

from ._lib import check, lib


class _BlockConfig(ctypes.Structure):
    _fields_ = [("in_features", ctypes.c_int), ("out_features", ctypes.c_int),
                ("groups", ctypes.c_int), ("eps", ctypes.c_float),
                ("negative_slope", ctypes.c_float), ("forward_only", ctypes.c_int),
                ("residual", ctypes.c_int)]


class _BlockMemory(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("x", "weight", "bias", "gamma", "beta", "z", "mean", "rstd", "scratch")]


_vp = ctypes.c_void_p
_cfg_p = ctypes.POINTER(_BlockConfig)
_mem_p = ctypes.POINTER(_BlockMemory)
_forward_call = lib.fn_block_memory_forward
_forward_call.restype = ctypes.c_int
_forward_call.argtypes = [_vp, _cfg_p, ctypes.c_int, _mem_p, _vp]
_backward_call = lib.fn_block_memory_backward
_backward_call.restype = ctypes.c_int
_backward_call.argtypes = [_vp, _cfg_p, ctypes.c_int, _mem_p] + [_vp] * 7
_scratch_call = lib.fn_block_memory_scratch_floats
_scratch_call.restype = ctypes.c_size_t
_scratch_call.argtypes = [_vp, _cfg_p, ctypes.c_int]
_use_stream_call = lib.fn_context_use_stream
_use_stream_call.restype = ctypes.c_int
_use_stream_call.argtypes = [_vp, _vp]

_FN_CPU, _FN_CUDA = 0, 1
_MATHS = {"fp32": 0, "tf32": 1, "tf32x3": 2, "bf16": 3}
_BF16 = _MATHS["bf16"]
# torch.library.custom_op (PyTorch 2.4): the operator door; else the
# autograd.Function one.
HAS_CUSTOM_OP = hasattr(getattr(torch, "library", None), "custom_op")

_contexts = {}


def _context(device, math):
    """The library's context of a (device, math mode), one for every block
    of the process (a CPU block computes in fp32 whatever its mode)."""
    cuda = device.type == "cuda"
    index = (device.index if device.index is not None else torch.cuda.current_device()) \
        if cuda else -1
    key = (index, math if cuda else 0)
    ctx = _contexts.get(key)
    if ctx is None:
        ctx = ctypes.c_void_p()
        if cuda:
            check(lib.fn_context_create(ctypes.byref(ctx), _FN_CUDA, index, math))
        else:
            check(lib.fn_context_create(ctypes.byref(ctx), _FN_CPU, 0, 0))
        _contexts[key] = ctx
    return ctx, index


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _on_current_stream(ctx, index):
    """The context's GPU work goes to PyTorch's current stream of its GPU."""
    stream = _raw_stream(index) if _raw_stream else torch.cuda.current_stream(index).cuda_stream
    check(_use_stream_call(ctx, stream))


_configs = {}


def _config(n_in, n_out, groups, eps, negative_slope):
    """One ctypes config a block shape, made once (a per-call saving)."""
    key = (n_in, n_out, groups, eps, negative_slope)
    cfg = _configs.get(key)
    if cfg is None:
        cfg = _BlockConfig(n_in, n_out, groups, eps, negative_slope, 0, 0)
        _configs[key] = cfg
    return cfg


_scratch_sizes = {}


def _scratch_numel(device, n_in, n_out, groups, eps, negative_slope, rows, math):
    """The floats of the GPU workspace for `rows` rows, as the library sizes
    it (0 on the CPU); asked once a shape. A symbolic row count (dynamic
    shapes under torch.compile) is made concrete: the size is the
    library's, not a formula copied here."""
    if device.type != "cuda":
        return 0
    rows = int(rows)
    if rows == 0:
        return 0
    key = (device.index, n_in, n_out, groups, rows, math)
    floats = _scratch_sizes.get(key)
    if floats is None:
        ctx, _ = _context(device, math)
        floats = _scratch_call(ctx, ctypes.byref(_config(n_in, n_out, groups, eps,
                                                         negative_slope)), rows)
        if floats == 0:
            check(1)  # the library left the reason
        _scratch_sizes[key] = floats
    return floats


def _keeps_float_z(device, math):
    """Whether the library uses the float z and dz: not in bf16 on the GPU,
    where they live in the scratch as bfloat16 (block_memory.h)."""
    return not (device.type == "cuda" and math == _BF16)


_PARAM_NAMES = ("linear.weight", "linear.bias", "norm.weight", "norm.bias")


def _check_args(x, weight, bias, gamma, beta, groups):
    """What the library takes, checked before it reads a byte: x [rows, in]
    and weight [out, in] and bias, gamma, beta [out], float32, contiguous,
    on one device; groups divides out. Returns (in, out). One cheap test of
    everything first (a call's overhead); the details when it fails."""
    if x.dim() == 2 and weight.dim() == 2:
        n_in, n_out = x.shape[1], weight.shape[0]
        f32, one = torch.float32, (n_out,)
        dev = x.get_device()
        if (weight.shape[1] == n_in and bias.shape == one and gamma.shape == one
                and beta.shape == one and groups >= 1 and n_out % groups == 0
                and x.dtype == f32 and weight.dtype == f32 and bias.dtype == f32
                and gamma.dtype == f32 and beta.dtype == f32
                and x.is_contiguous() and weight.is_contiguous() and bias.is_contiguous()
                and gamma.is_contiguous() and beta.is_contiguous()
                and weight.get_device() == dev and bias.get_device() == dev
                and gamma.get_device() == dev and beta.get_device() == dev):
            return n_in, n_out
    _explain_args(x, weight, bias, gamma, beta, groups)
    raise AssertionError("unreachable: _explain_args raises")


def _explain_args(x, weight, bias, gamma, beta, groups):
    """Raises the error naming what _check_args found wrong."""
    if x.dim() != 2:
        raise ValueError("fusenet.torch.FusedBlock: the input has shape %s; the block's call "
                         "takes [rows, in_features]" % (list(x.shape),))
    n_in = x.shape[1]
    if weight.dim() != 2 or weight.shape[1] != n_in:
        raise ValueError("fusenet.torch.FusedBlock: linear.weight has shape %s; the input's "
                         "%d columns need [out_features, %d]"
                         % (list(weight.shape), n_in, n_in))
    n_out = weight.shape[0]
    for name, t in zip(_PARAM_NAMES[1:], (bias, gamma, beta)):
        if t.dim() != 1 or t.shape[0] != n_out:
            raise ValueError("fusenet.torch.FusedBlock: %s has shape %s; linear.weight's %d "
                             "outputs need [%d]" % (name, list(t.shape), n_out, n_out))
    if groups < 1 or n_out % groups:
        raise ValueError("fusenet.torch.FusedBlock: %d groups do not divide the %d outputs"
                         % (groups, n_out))
    device = x.device
    for name, t in zip(("the input",) + _PARAM_NAMES, (x, weight, bias, gamma, beta)):
        if t.dtype != torch.float32:
            raise TypeError("fusenet.torch.FusedBlock: %s is %s; the block computes in float32"
                            % (name, t.dtype))
        if t.device != device:
            raise ValueError("fusenet.torch.FusedBlock: %s is on %s and the input on %s"
                             % (name, t.device, device))
        if not t.is_contiguous():
            raise ValueError("fusenet.torch.FusedBlock: %s is not contiguous; the library "
                             "reads row-major memory (.contiguous() makes it so)" % name)


def _ptr(t):
    return t.data_ptr()


def _block_forward(x, weight, bias, gamma, beta, groups, eps, negative_slope, math):
    """y = 2 leaky_relu(group_norm(x W^T + b)) for x [rows, in], with the
    caches backward reads: (y, z, mean, rstd, scratch), each a new tensor.
    z is empty where the library keeps it in the scratch (bf16 on the GPU),
    scratch is empty on the CPU."""
    n_in, n_out = _check_args(x, weight, bias, gamma, beta, groups)
    rows = x.shape[0]
    device = x.device
    y = x.new_empty((rows, n_out))
    z = x.new_empty((rows, n_out) if _keeps_float_z(device, math) else (0,))
    mean = x.new_empty((rows, groups))
    rstd = x.new_empty((rows, groups))
    scratch = x.new_empty((_scratch_numel(device, n_in, n_out, groups, eps, negative_slope,
                                          rows, math),))
    if rows:
        ctx, index = _context(device, math)
        if index >= 0:
            _on_current_stream(ctx, index)
        # In bf16 on the GPU the float z is never touched (block_memory.h);
        # the call wants a pointer all the same.
        m = _BlockMemory(x.data_ptr(), weight.data_ptr(), bias.data_ptr(), gamma.data_ptr(),
                         beta.data_ptr(), (z if z.numel() else scratch).data_ptr(),
                         mean.data_ptr(), rstd.data_ptr(),
                         scratch.data_ptr() if scratch.numel() else None)
        check(_forward_call(ctx, _config(n_in, n_out, groups, eps, negative_slope), rows, m,
                            y.data_ptr()))
    return y, z, mean, rstd, scratch


def _block_backward(dy, x, weight, bias, gamma, beta, z, mean, rstd, scratch, groups, eps,
                    negative_slope, math, input_grad, scratch_writable):
    """(dx, dweight, dbias, dgamma, dbeta) from dy [rows, out] and what
    _block_forward left; dx is empty unless input_grad. The library
    assigns the gradients (no zeroing); an empty batch's are zero. The
    library's backward also writes its own workspace, which is part of the
    scratch (block_memory.h): unless scratch_writable, it works on a copy,
    so the scratch, a saved tensor, is never changed (what an operator's
    schema promises, and compiled graphs rely on)."""
    n_in, n_out = _check_args(x, weight, bias, gamma, beta, groups)
    rows = x.shape[0]
    if tuple(dy.shape) != (rows, n_out) or dy.dtype != torch.float32 \
            or dy.device != x.device or not dy.is_contiguous():
        raise ValueError("fusenet.torch.FusedBlock: the output's gradient is %s %s on %s; "
                         "expected contiguous float32 [%d, %d] on %s"
                         % (dy.dtype, list(dy.shape), dy.device, rows, n_out, x.device))
    dx = x.new_empty((rows, n_in) if input_grad else (0,))
    if not rows:
        return (dx, torch.zeros_like(weight), torch.zeros_like(bias), torch.zeros_like(gamma),
                torch.zeros_like(beta))
    grads = (torch.empty_like(weight), torch.empty_like(bias), torch.empty_like(gamma),
             torch.empty_like(beta))
    device = x.device
    dz = torch.empty_like(z) if _keeps_float_z(device, math) else None
    if scratch.numel() and not scratch_writable:
        scratch = scratch.clone()
    ctx, index = _context(device, math)
    if index >= 0:
        _on_current_stream(ctx, index)
    m = _BlockMemory(x.data_ptr(), weight.data_ptr(), bias.data_ptr(), gamma.data_ptr(),
                     beta.data_ptr(), (z if z.numel() else scratch).data_ptr(), mean.data_ptr(),
                     rstd.data_ptr(), scratch.data_ptr() if scratch.numel() else None)
    check(_backward_call(ctx, _config(n_in, n_out, groups, eps, negative_slope), rows, m,
                         dy.data_ptr(), (dz if dz is not None else scratch).data_ptr(),
                         dx.data_ptr() if input_grad else None, *(g.data_ptr() for g in grads)))
    return (dx,) + grads


def _refuse_second_derivative():
    # A backward with create_graph=True runs with grad mode on; the
    # library's backward is not differentiable, so the second-order term
    # would be silently lost.
    if torch.is_grad_enabled():
        raise RuntimeError(
            "fusenet.torch.FusedBlock has no second derivative: its backward is the library's "
            "and cannot be differentiated (backward or autograd.grad with create_graph=True, "
            "e.g. a gradient penalty). Use the unfused block (Linear -> GroupNorm -> LeakyReLU "
            "-> x + x) where second derivatives are needed.")


def _grad_outputs(ctx, dy, dx, grads):
    return (dx if ctx.needs_input_grad[0] else None,) + tuple(
        g if need else None for g, need in zip(grads, ctx.needs_input_grad[1:5]))


class _FusedBlockFunction(torch.autograd.Function):
    """The door on PyTorch without torch.library.custom_op."""

    @staticmethod
    def forward(ctx, x, weight, bias, gamma, beta, groups, eps, negative_slope, math):
        y, z, mean, rstd, scratch = _block_forward(x, weight, bias, gamma, beta, groups, eps,
                                                   negative_slope, math)
        ctx.args = (groups, eps, negative_slope, math)
        ctx.save_for_backward(x, weight, bias, gamma, beta, z, mean, rstd, scratch)
        return y

    @staticmethod
    def backward(ctx, dy):
        _refuse_second_derivative()
        # The Function's scratch is no one else's: the library's backward
        # writes its workspace there directly.
        dx, *grads = _block_backward(dy.contiguous(), *ctx.saved_tensors, *ctx.args,
                                     ctx.needs_input_grad[0], True)
        return _grad_outputs(ctx, dy, dx, grads) + (None,) * 4


if HAS_CUSTOM_OP:
    _Five = Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]

    @torch.library.custom_op("fusenet::block_forward", mutates_args=())
    def block_forward(x: Tensor, weight: Tensor, bias: Tensor, gamma: Tensor, beta: Tensor,
                      groups: int, eps: float, negative_slope: float, math: int) -> _Five:
        """(y, z, mean, rstd, scratch): the block's output and the caches
        its backward reads (_block_forward)."""
        return _block_forward(x, weight, bias, gamma, beta, groups, eps, negative_slope, math)

    @block_forward.register_fake
    def _block_forward_fake(x, weight, bias, gamma, beta, groups, eps, negative_slope, math):
        n_in, n_out = _check_args(x, weight, bias, gamma, beta, groups)
        rows = x.shape[0]
        z_shape = (rows, n_out) if _keeps_float_z(x.device, math) else (0,)
        scratch = _scratch_numel(x.device, n_in, n_out, groups, eps, negative_slope, rows, math)
        return (x.new_empty((rows, n_out)), x.new_empty(z_shape), x.new_empty((rows, groups)),
                x.new_empty((rows, groups)), x.new_empty((scratch,)))

    @torch.library.custom_op("fusenet::block_backward", mutates_args=())
    def block_backward(dy: Tensor, x: Tensor, weight: Tensor, bias: Tensor, gamma: Tensor,
                       beta: Tensor, z: Tensor, mean: Tensor, rstd: Tensor, scratch: Tensor,
                       groups: int, eps: float, negative_slope: float, math: int,
                       input_grad: bool) -> _Five:
        """(dx, dweight, dbias, dgamma, dbeta) (_block_backward), the
        inputs unchanged."""
        return _block_backward(dy, x, weight, bias, gamma, beta, z, mean, rstd, scratch, groups,
                               eps, negative_slope, math, input_grad, False)

    @block_backward.register_fake
    def _block_backward_fake(dy, x, weight, bias, gamma, beta, z, mean, rstd, scratch, groups,
                             eps, negative_slope, math, input_grad):
        n_in, _ = _check_args(x, weight, bias, gamma, beta, groups)
        dx = x.new_empty((x.shape[0], n_in) if input_grad else (0,))
        return (dx, torch.empty_like(weight), torch.empty_like(bias), torch.empty_like(gamma),
                torch.empty_like(beta))

    def _setup_context(ctx, inputs, output):
        x, weight, bias, gamma, beta, groups, eps, negative_slope, math = inputs
        _, z, mean, rstd, scratch = output
        ctx.args = (groups, eps, negative_slope, math)
        ctx.save_for_backward(x, weight, bias, gamma, beta, z, mean, rstd, scratch)
        ctx.mark_non_differentiable(z, mean, rstd, scratch)
        # The caches get no gradient: none is made of zeros for them.
        ctx.set_materialize_grads(False)

    def _backward(ctx, dy, *_caches):
        _refuse_second_derivative()
        if dy is None:
            return (None,) * 9
        dx, *grads = torch.ops.fusenet.block_backward(dy.contiguous(), *ctx.saved_tensors,
                                                      *ctx.args, ctx.needs_input_grad[0])
        return _grad_outputs(ctx, dy, dx, grads) + (None,) * 4

    block_forward.register_autograd(_backward, setup_context=_setup_context)

    def _apply(x, weight, bias, gamma, beta, groups, eps, negative_slope, math):
        return torch.ops.fusenet.block_forward(x, weight, bias, gamma, beta, groups, eps,
                                               negative_slope, math)[0]
else:
    _apply = _FusedBlockFunction.apply


# Eager calls on plain tensors take the autograd.Function door (see
# FusedBlock.forward); False sends every call through the operator
# (scripts/bench_fused_block_torch.py times both).
_lean_eager = True
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)


if hasattr(torch, "get_autocast_dtype"):
    def _cuda_autocast_dtype():
        """The dtype of CUDA autocast where it is on, else None."""
        return torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
else:
    def _cuda_autocast_dtype():
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


class FusedBlock(nn.Module):
    """y = 2 * leaky_relu(group_norm(linear(x))), as nn.Sequential(Linear,
    GroupNorm, LeakyReLU, x2) with fusenet's kernels: x [..., in_features]
    float32 -> y [..., out_features] float32, as nn.Linear takes leading
    dimensions. Initialised as those modules are; parameters float32."""

    def __init__(self, in_features, out_features, groups, eps=1e-5, negative_slope=0.01,
                 math="fp32"):
        super().__init__()
        if math not in _MATHS:
            raise ValueError("FusedBlock: math %r; expected one of %s" % (math, ", ".join(_MATHS)))
        # Holders of the parameters under the unfused block's names; their
        # forward is never called. float32 whatever torch's default dtype:
        # the library computes in float32.
        linear = nn.Linear(in_features, out_features, dtype=torch.float32)
        norm = nn.GroupNorm(groups, out_features, eps=eps, dtype=torch.float32)
        self._adopt(linear, norm, negative_slope, math)

    def _adopt(self, linear, norm, negative_slope, math):
        self.linear, self.norm = linear, norm
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.groups, self.eps, self.negative_slope = norm.num_groups, norm.eps, negative_slope
        self.math = math  # the library's math mode on a GPU; the CPU computes in fp32

    @classmethod
    def from_modules(cls, linear, norm, negative_slope=0.01, math="fp32"):
        """A FusedBlock holding these nn.Linear and nn.GroupNorm (the same
        modules, so the same parameters) and LeakyReLU's negative_slope."""
        if math not in _MATHS:
            raise ValueError("FusedBlock: math %r; expected one of %s" % (math, ", ".join(_MATHS)))
        block = cls.__new__(cls)
        nn.Module.__init__(block)
        block._adopt(linear, norm, negative_slope, math)
        return block

    def _check_parameters(self, weight, bias, gamma, beta):
        """Raises the error naming a parameter of the wrong shape."""
        expected = ((self.out_features, self.in_features), (self.out_features,),
                    (self.out_features,), (self.out_features,))
        for name, t, shape in zip(_PARAM_NAMES, (weight, bias, gamma, beta), expected):
            if t is None or tuple(t.shape) != shape:
                raise ValueError("FusedBlock(%d -> %d): %s is %s; expected shape %s"
                                 % (self.in_features, self.out_features, name,
                                    "None" if t is None else "of shape %s" % (list(t.shape),),
                                    list(shape)))

    def forward(self, x):
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError("FusedBlock: input of shape %s; expected [..., %d]"
                             % (list(x.shape), self.in_features))
        weight, bias = self.linear.weight, self.linear.bias
        gamma, beta = self.norm.weight, self.norm.bias
        one = (self.out_features,)
        if weight is None or bias is None or beta is None or gamma is None or bias.shape != one \
                or gamma.shape != one or beta.shape != one \
                or weight.shape != (self.out_features, self.in_features):
            self._check_parameters(weight, bias, gamma, beta)
        math = _MATHS[self.math]
        if x.is_cuda:
            autocast = _cuda_autocast_dtype()
            if autocast is not None:
                # Under autocast an input that a layer before made 16-bit
                # is widened, exactly; bfloat16 autocast runs the library's
                # bf16 math (which rounds x to bfloat16 again), the output
                # float32 as GroupNorm's is under autocast.
                if x.dtype in (torch.float16, torch.bfloat16):
                    x = x.float()
                if autocast == torch.bfloat16:
                    math = _BF16
        x2 = x if x.dim() == 2 else x.reshape(-1, self.in_features)
        if not x2.is_contiguous():
            x2 = x2.contiguous()
        args = (x2, weight.contiguous(), bias.contiguous(), gamma.contiguous(),
                beta.contiguous(), self.groups, float(self.eps), float(self.negative_slope), math)
        if _lean_eager and not _compiling() and type(x2) is torch.Tensor:
            # Outside torch.compile, on plain tensors: the same calls without
            # the operator's dispatch, whose cost is several times the
            # library call's at small shapes; without autograd when no
            # gradient is wanted.
            if torch.is_grad_enabled() and (x2.requires_grad or weight.requires_grad
                                            or bias.requires_grad or gamma.requires_grad
                                            or beta.requires_grad):
                y = _FusedBlockFunction.apply(*args)
            else:
                y = _block_forward(*args)[0]
        else:
            y = _apply(*args)
        return y if x.dim() == 2 else y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, groups=%d, eps=%g, negative_slope=%g" % (
            self.in_features, self.out_features, self.groups, self.eps, self.negative_slope)


# --- fuse: the unfused chains of a model, found and replaced ------------------

def _doubles(node, value):
    """Whether fx node computes value + value or value * 2 (2 * value)."""
    if node.kwargs:
        return False
    args = node.args
    adds = ((node.op == "call_function" and node.target in (operator.add, torch.add))
            or (node.op == "call_method" and node.target == "add"))
    muls = ((node.op == "call_function" and node.target in (operator.mul, torch.mul))
            or (node.op == "call_method" and node.target == "mul"))
    if adds:
        return len(args) == 2 and args[0] is value and args[1] is value
    if muls and len(args) == 2:
        return (args[0] is value and args[1] == 2) or (args[1] is value and args[0] == 2)
    return False


def _trace(module):
    """The fx graph of module's forward, or None if it does not trace."""
    try:
        import torch.fx
        return torch.fx.symbolic_trace(module).graph
    except Exception:  # any untraceable forward is simply not a block
        return None


def _is_doubling(module):
    """A module without parameters or children whose forward is x + x or
    2 * x and nothing else."""
    if type(module).forward is nn.Module.forward or list(module.children()) \
            or list(module.parameters(recurse=False)) or list(module.buffers(recurse=False)):
        return False
    graph = _trace(module)
    if graph is None:
        return False
    nodes = list(graph.nodes)
    return (len(nodes) == 3 and nodes[0].op == "placeholder" and nodes[2].op == "output"
            and nodes[2].args == (nodes[1],) and _doubles(nodes[1], nodes[0]))


def _fusable(linear, norm, act):
    """Whether Linear, GroupNorm, LeakyReLU are the library's block:
    a bias, an affine norm over the linear's outputs, float32 parameters on
    one device, a non-negative slope."""
    if not (isinstance(linear, nn.Linear) and isinstance(norm, nn.GroupNorm)
            and isinstance(act, nn.LeakyReLU)):
        return False
    if linear.bias is None or not norm.affine or norm.num_channels != linear.out_features:
        return False
    if not (act.negative_slope >= 0 and norm.eps > 0):
        return False
    params = [linear.weight, linear.bias, norm.weight, norm.bias]
    return all(p.dtype == torch.float32 and p.device == params[0].device for p in params)


def _as_block(module):
    """(linear, norm, act) if module's own forward is exactly the chain
    act(norm(linear(x))) doubled, of its only three children; else None."""
    children = dict(module.named_children())
    if len(children) != 3 or list(module.parameters(recurse=False)) \
            or list(module.buffers(recurse=False)):
        return None
    by_type = {}
    for name, child in children.items():
        for kind in (nn.Linear, nn.GroupNorm, nn.LeakyReLU):
            if type(child) is kind:
                by_type[kind] = name
    if len(by_type) != 3:
        return None
    graph = _trace(module)
    if graph is None:
        return None
    nodes = list(graph.nodes)
    if len(nodes) != 6 or nodes[0].op != "placeholder" or nodes[5].op != "output":
        return None
    value = nodes[0]
    for node, kind in zip(nodes[1:4], (nn.Linear, nn.GroupNorm, nn.LeakyReLU)):
        if node.op != "call_module" or node.target != by_type[kind] or node.kwargs \
                or node.args != (value,):
            return None
        value = node
    if not _doubles(nodes[4], value) or nodes[5].args != (nodes[4],):
        return None
    parts = tuple(children[by_type[k]] for k in (nn.Linear, nn.GroupNorm, nn.LeakyReLU))
    return parts if _fusable(*parts) else None


def _fuse_sequential(seq, math):
    """In an nn.Sequential, each run Linear, GroupNorm, LeakyReLU, doubling
    becomes a FusedBlock and three nn.Identity, so later entries keep their
    indices (and state_dict keys)."""
    mods = list(seq)
    names = list(seq._modules)
    i = 0
    while i + 3 < len(mods):
        linear, norm, act, double = mods[i:i + 4]
        if _fusable(linear, norm, act) and _is_doubling(double):
            seq._modules[names[i]] = FusedBlock.from_modules(linear, norm, act.negative_slope,
                                                             math)
            for k in range(1, 4):
                seq._modules[names[i + k]] = nn.Identity()
            i += 4
        else:
            i += 1


def fuse(module, math="fp32"):
    """Returns `module` with every Linear -> GroupNorm -> LeakyReLU -> x + x
    it holds replaced by a FusedBlock of the same parameters (the same
    nn.Parameter objects, so an optimiser made before still trains them):
    runs of four entries of an nn.Sequential (the doubling a module whose
    forward is x + x or 2 * x), and modules whose forward is exactly that
    chain of their three children. Conservative: a Linear without bias, a
    GroupNorm without affine parameters or over other channels, a forward
    that does anything more, or parameters not float32 are left as they
    are. Changes module in place; use the returned module (a module that
    is itself such a block comes back as a new FusedBlock)."""
    if math not in _MATHS:
        raise ValueError("fuse: math %r; expected one of %s" % (math, ", ".join(_MATHS)))
    if isinstance(module, FusedBlock):
        return module
    parts = _as_block(module)
    if parts is not None:
        linear, norm, act = parts
        return FusedBlock.from_modules(linear, norm, act.negative_slope, math)
    for name, child in list(module.named_children()):
        fused = fuse(child, math)
        if fused is not child:
            setattr(module, name, fused)
    if isinstance(module, nn.Sequential):
        _fuse_sequential(module, math)
    return module
