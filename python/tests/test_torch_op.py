"""test_torch_op.py — FusedBlock as PyTorch custom operators (PyTorch 2.4
and later; skipped on older): torch.library.opcheck of both operators
(schema, fake implementation, autograd registration, AOT dispatch),
torch.compile(fullgraph=True) of a network of FusedBlocks giving eager's
bits, and on a GPU: the same under Inductor and with CUDA graphs
(mode="reduce-overhead"), a training step captured by torch.cuda.graph and
replayed, and bfloat16 autocast running the library's bf16 math."""
import copy

import pytest

torch = pytest.importorskip("torch")
import fusenet.torch as ft  # noqa: E402

# Each test is collected and skipped (a module-level skip would leave
# pytest with no test, its exit status 5).
pytestmark = pytest.mark.skipif(
    not ft.HAS_CUSTOM_OP,
    reason="PyTorch %s has no torch.library.custom_op (2.4)" % torch.__version__)

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def forward_args(device, rows=7, n_in=12, n_out=16, groups=4, math=0, grad=True):
    g = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, n_in, generator=g)
    params = [torch.randn(n_out, n_in, generator=g) / n_in ** 0.5,
              torch.randn(n_out, generator=g) * 0.1,
              torch.rand(n_out, generator=g) + 0.5, torch.randn(n_out, generator=g) * 0.1]
    tensors = [t.to(device).requires_grad_(grad) for t in [x] + params]
    return tuple(tensors) + (groups, 1e-5, 0.01, math)


def net(n_in=12, width=16, groups=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(ft.FusedBlock(n_in, width, groups),
                                ft.FusedBlock(width, width, groups, negative_slope=0.2))
    with torch.no_grad():
        for m in model:
            m.norm.weight.uniform_(0.5, 1.5)
            m.norm.bias.uniform_(-0.5, 0.5)
    return model


def outputs_and_grads(model, x):
    x = x.clone().requires_grad_()
    model.zero_grad(set_to_none=True)
    y = model(x)
    (y * torch.linspace(-1, 1, y.shape[-1], device=y.device)).sum().backward()
    return [y.detach(), x.grad] + [p.grad for p in model.parameters()]


def test_opcheck_on_the_cpu():
    args = forward_args("cpu")
    torch.library.opcheck(torch.ops.fusenet.block_forward.default, args)
    _, z, mean, rstd, scratch = torch.ops.fusenet.block_forward(*args)
    dy = torch.randn(7, 16)
    back = (dy,) + tuple(a.detach() for a in args[:5]) + (z, mean, rstd, scratch) + args[5:] \
        + (True,)
    torch.library.opcheck(torch.ops.fusenet.block_backward.default, back)


def test_compile_fullgraph_gives_eager_bits_on_the_cpu():
    """No graph break (fullgraph=True raises on one) and the operators'
    own results: compiled and eager are the same bits, leading dimensions
    included."""
    torch._dynamo.reset()
    model = net()
    x = torch.randn(3, 5, 12)
    want = outputs_and_grads(model, x)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    got = outputs_and_grads(compiled, x)
    for w, g in zip(want, got):
        assert torch.equal(w, g)


def test_direct_operator_calls_are_checked():
    x, w, b, g, beta = forward_args("cpu", grad=False)[:5]
    with pytest.raises(ValueError, match=r"linear.weight has shape \[16, 11\]"):
        torch.ops.fusenet.block_forward(x, w[:, :11], b, g, beta, 4, 1e-5, 0.01, 0)
    with pytest.raises(ValueError, match="not contiguous"):
        torch.ops.fusenet.block_forward(x.t().contiguous().t(), w, b, g, beta, 4, 1e-5, 0.01, 0)
    with pytest.raises(ValueError, match="3 groups do not divide the 16 outputs"):
        torch.ops.fusenet.block_forward(x, w, b, g, beta, 3, 1e-5, 0.01, 0)


@needs_cuda
@pytest.mark.parametrize("math", [0, 3])
def test_opcheck_on_the_gpu(math):
    # The scratch output holds what only backward writes (uninitialised
    # after forward), so the comparisons of outputs across runs
    # (test_aot_dispatch_dynamic) do not apply to it; the schema, the fake
    # implementation's shapes and the autograd registration do.
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    args = forward_args("cuda", rows=64, n_in=64, n_out=128, groups=8, math=math)
    torch.library.opcheck(torch.ops.fusenet.block_forward.default, args, test_utils=utils)
    _, z, mean, rstd, scratch = torch.ops.fusenet.block_forward(*args)
    back = (torch.randn(64, 128, device="cuda"),) + tuple(a.detach() for a in args[:5]) \
        + (z, mean, rstd, scratch) + args[5:] + (True,)
    torch.library.opcheck(torch.ops.fusenet.block_backward.default, back, test_utils=utils)


@needs_cuda
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_compile_with_inductor_on_the_gpu(mode):
    """Inductor, and Inductor with CUDA graphs: the library's kernels run
    as in eager, so the bits are eager's."""
    torch._dynamo.reset()
    model = net(64, 128, 8).cuda()
    x = torch.randn(4, 32, 64, device="cuda")
    want = outputs_and_grads(model, x)
    compiled = torch.compile(model, fullgraph=True, mode=mode)
    for _ in range(3):  # reduce-overhead records its graph after warm-up calls
        got = [t.clone() for t in outputs_and_grads(compiled, x)]
    for w, g in zip(want, got):
        assert torch.equal(w, g)


@needs_cuda
def test_a_training_step_captured_by_cuda_graphs():
    """torch.cuda.graph captures forward, backward and an SGD step of two
    FusedBlocks (global capture mode: any synchronisation or allocation of
    the library's inside would fail it); three replays give the bits of
    three eager steps from the same state."""
    model = net(64, 128, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator(device="cuda").manual_seed(1)
    static_x = torch.randn(32, 64, device="cuda", generator=gen)
    target = torch.randn(32, 128, device="cuda", generator=gen)

    def step(m, o):
        o.zero_grad(set_to_none=False)
        loss = ((m(static_x) - target) ** 2).mean()
        loss.backward()
        o.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(model, opt)
    torch.cuda.current_stream().wait_stream(side)
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step(model, opt)
    losses = []
    for _ in range(3):
        graph.replay()
        losses.append(static_loss.clone())
    want = [step(ref, ref_opt) for _ in range(3)]
    torch.cuda.synchronize()
    for got, w in zip(losses, want):
        assert torch.equal(got, w)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.equal(p, q)


@needs_cuda
def test_bf16_autocast_runs_the_library_bf16_math():
    torch.manual_seed(2)
    block = ft.FusedBlock(128, 256, 8).cuda()
    bf16 = ft.FusedBlock(128, 256, 8, math="bf16").cuda()
    bf16.load_state_dict(block.state_dict())
    x = torch.randn(64, 128, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = block(x)
        # A layer before it under autocast hands it bfloat16.
        lin = torch.nn.Linear(128, 128).cuda()
        h = lin(x)
        assert h.dtype == torch.bfloat16
        yh = block(h)
    assert y.dtype == torch.float32 and yh.dtype == torch.float32
    assert torch.equal(y, bf16(x))
    assert not torch.equal(y, block(x))
    assert torch.equal(yh, bf16(h.float()))
    # Its backward runs in bf16 too (the caches forward kept are bf16's).
    x.requires_grad_()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        block(x).sum().backward()
    gx = x.grad.clone()
    x.grad = None
    bf16(x).sum().backward()
    assert torch.equal(gx, x.grad)
