"""test_torch.py — fusenet.torch.FusedBlock against the unfused PyTorch
block (Linear -> GroupNorm -> LeakyReLU -> x2): outputs and every gradient
within a bound derived from float32 rounding, both measured against a
float64 reference; the state_dict keys; training with a torch optimiser."""
import pytest

torch = pytest.importorskip("torch")
import fusenet.torch as ft  # noqa: E402

U = 2.0 ** -24  # float32's unit roundoff


def gamma_n(n):
    """The bound of n roundings, n u / (1 - n u) (Higham's gamma_n)."""
    return n * U / (1 - n * U)


def unfused(block, dtype):
    """The unfused block of block's parameters, in dtype."""
    ref = torch.nn.Sequential(torch.nn.Linear(block.in_features, block.out_features),
                              torch.nn.GroupNorm(block.groups, block.out_features, eps=block.eps),
                              torch.nn.LeakyReLU(block.negative_slope))
    ref[0].load_state_dict(block.linear.state_dict())
    ref[1].load_state_dict(block.norm.state_dict())
    return ref.to(dtype)


def run(module, x, dy, double=False):
    """y and the gradients of (y * dy).sum() wrt x and the four parameters,
    on the module's device, returned on the CPU."""
    device = next(module.parameters()).device
    x = x.to(device).clone().requires_grad_()
    y = module(x) * (2 if double else 1)
    params = list(module.parameters())
    grads = torch.autograd.grad((y * dy.to(device)).sum(), [x] + params)
    return [y.detach().cpu()] + [g.detach().cpu() for g in grads]


def bounds(block, x, dy, operand_u=0.0):
    """Per element bounds of the float32 rounding error of y, dx, dW, db,
    dgamma, dbeta, to first order in u, from the float64 values. Each line
    bounds one step: a sum of n products is off by at most gamma_n times
    the sum of their absolute values, and one rounding by u times the
    value; errors coming in are carried through the step's derivatives.
    operand_u > 0: the forward product's operands are first rounded to a
    format of that unit roundoff (each term then off by 2 operand_u more);
    only y's bound is meant then."""
    d = torch.float64
    x, dy = x.to(d), dy.to(d)
    W, b = block.linear.weight.detach().to(d), block.linear.bias.detach().to(d)
    g, beta = block.norm.weight.detach().to(d), block.norm.bias.detach().to(d)
    N, K, H, G = x.shape[0], block.in_features, block.out_features, block.groups
    C = H // G
    s = block.negative_slope
    # Forward. z + b: the product's K terms, then the bias' addition.
    z = x @ W.T + b
    E_z = (2 * operand_u + gamma_n(K)) * (x.abs() @ W.abs().T) + U * (z.abs() + b.abs())
    zg = z.view(N, G, C)
    mu = zg.mean(-1, keepdim=True)
    var = zg.var(-1, unbiased=False, keepdim=True)
    r = 1 / torch.sqrt(var + block.eps)
    zhat = ((zg - mu) * r).view(N, H)
    # The group's mean is off by its inputs' worst error plus its own sum's
    # (gamma_K max|z|); sigma, the deviations' RMS, moves by at most twice
    # that (it is 1-Lipschitz in the deviations) plus its own sum and root.
    E_g = E_z.view(N, G, C).amax(-1, keepdim=True) + gamma_n(K) * zg.abs().amax(-1, keepdim=True)
    rel_sigma = (2 * r * E_g).expand(N, G, C).reshape(N, H) + gamma_n(K + 2)
    # zhat = (z - mu) / sigma: the deviation's error over sigma, plus zhat
    # times sigma's relative error, plus the subtraction's and division's.
    A = ((2 * r * E_g).expand(N, G, C).reshape(N, H) * (1 + zhat.abs())
         + (gamma_n(K + 2) + 2 * U) * zhat.abs())
    uval = g * zhat + beta
    E_u = g.abs() * A + 2 * U * ((g * zhat).abs() + beta.abs())
    slope = torch.where(uval > 0, torch.ones_like(uval), torch.full_like(uval, s))
    y = 2 * uval * slope
    # leaky_relu is max(1, slope)-Lipschitz; for the backward's bounds the
    # data keeps every u farther from 0 than its error (asserted), so each
    # implementation takes the same branch.
    assert operand_u > 0 or (uval.abs() > E_u).all()
    B_y = 2 * max(1.0, s) * E_u + U * y.abs()
    # Backward. du = 2 dy slope (one rounding); ghat = du gamma (one more).
    du = 2 * dy * slope
    E_du = U * du.abs()
    gh = du * g
    E_gh = 2 * U * gh.abs()
    ghg, zhg, E_ghg, Ag = (t.view(N, G, C) for t in (gh, zhat, E_gh, A))
    m1, m2 = ghg.mean(-1, keepdim=True), (ghg * zhg).mean(-1, keepdim=True)
    E_m1 = E_ghg.mean(-1, keepdim=True) + gamma_n(C) * ghg.abs().mean(-1, keepdim=True)
    E_m2 = ((E_ghg * zhg.abs() + ghg.abs() * Ag).mean(-1, keepdim=True)
            + gamma_n(C + 1) * (ghg * zhg).abs().mean(-1, keepdim=True))
    rg = r.expand(N, G, C)
    dz = (rg * (ghg - m1 - zhg * m2)).reshape(N, H)
    # dz = r (ghat - m1 - zhat m2): each term's error times r, r's relative
    # error times dz, and the three roundings of the expression.
    E_dz = (rg * (E_ghg + E_m1 + Ag * m2.abs() + zhg.abs() * E_m2
                  + 3 * U * (ghg.abs() + m1.abs() + (zhg * m2).abs()))).reshape(N, H)
    E_dz = E_dz + dz.abs() * rel_sigma
    B_dx = gamma_n(H) * (dz.abs() @ W.abs()) + E_dz @ W.abs()
    B_dW = gamma_n(N) * (dz.abs().T @ x.abs()) + E_dz.T @ x.abs()
    B_db = gamma_n(N) * dz.abs().sum(0) + E_dz.sum(0)
    B_dg = (gamma_n(N) * (du * zhat).abs().sum(0)
            + (du.abs() * A + E_du * zhat.abs() + U * (du * zhat).abs()).sum(0))
    B_dbeta = gamma_n(N) * du.abs().sum(0) + E_du.sum(0)
    return [B_y, B_dx, B_dW, B_db, B_dg, B_dbeta]


NAMES = ["y", "dx", "linear.weight", "linear.bias", "norm.weight", "norm.bias"]


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
SHAPES = [(64, 96, 128, 8, 0.01), (33, 17, 40, 5, 0.2), (1, 8, 16, 1, 0.01)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rows, inp, out, groups, slope", SHAPES)
def test_outputs_and_gradients_within_float32_rounding(rows, inp, out, groups, slope, device):
    torch.manual_seed(rows)
    block = ft.FusedBlock(inp, out, groups, eps=1e-5, negative_slope=slope)
    with torch.no_grad():
        block.norm.weight.uniform_(0.5, 1.5)
        block.norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(rows, inp)
    dy = torch.randn(rows, out)
    fused = run(block.to(device), x, dy)
    block.cpu()
    torch32 = run(unfused(block, torch.float32), x, dy, double=True)
    exact = run(unfused(block, torch.float64), x.double(), dy.double(), double=True)
    for name, f, t, e, bound in zip(NAMES, fused, torch32, exact, bounds(block, x, dy)):
        assert f.dtype == torch.float32
        err_f, err_t = (f.double() - e).abs(), (t.double() - e).abs()
        assert (err_f <= bound).all(), "%s: fused off by %g > bound" % (
            name, (err_f - bound).max())
        assert (err_t <= bound).all(), "%s: unfused PyTorch off by %g > bound" % (
            name, (err_t - bound).max())
        # Both within the bound of the exact value: within twice it of each other.
        assert ((f.double() - t.double()).abs() <= 2 * bound).all()
        # The bound is no blanket: worst-case sums of every row's error
        # terms, still two orders of magnitude below the values themselves.
        assert bound.max() < 1e-2 * e.abs().max()


def test_state_dict_keys_and_training_with_a_torch_optimiser():
    torch.manual_seed(0)
    block = ft.FusedBlock(4, 16, 4)
    assert list(block.state_dict()) == ["linear.weight", "linear.bias", "norm.weight",
                                        "norm.bias"]
    model = torch.nn.Sequential(block, torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x = torch.randn(256, 4)
    y = (x ** 2).sum(1, keepdim=True)
    first = None
    for _ in range(200):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < first / 10
    # Another block takes its state_dict and gives the same outputs.
    other = ft.FusedBlock(4, 16, 4)
    other.load_state_dict(block.state_dict())
    assert torch.equal(other(x), block(x))


def test_no_copy_of_the_input_for_contiguous_float32():
    block = ft.FusedBlock(8, 8, 2)
    x = torch.randn(5, 8, requires_grad=True)
    y = block(x)
    saved = y.grad_fn.saved_tensors[0]
    assert saved.data_ptr() == x.data_ptr()


def test_bad_inputs_say_what_is_wrong():
    block = ft.FusedBlock(8, 8, 2)
    with pytest.raises(ValueError, match=r"expected \[\.\.\., 8\]"):
        block(torch.randn(3, 7))
    with pytest.raises(TypeError, match="float32"):
        block(torch.randn(3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="divisible"):
        ft.FusedBlock(8, 9, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_on_the_current_stream_without_copies():
    """On a side stream of PyTorch's, the block's work is ordered on it: the
    input written on that stream just before and the output read just
    after; the output equals the default stream's bit for bit; x, the
    parameters and the output stay the tensors' own memory."""
    torch.manual_seed(0)
    block = ft.FusedBlock(256, 512, 16).cuda()
    x = torch.randn(1024, 256, device="cuda")
    with torch.no_grad():
        want = block(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x2 = torch.empty_like(x)
        x2.copy_(x)  # queued on `side`, not yet done when forward is queued
        x2.requires_grad_()
        y = block(x2)
        assert y.grad_fn.saved_tensors[0].data_ptr() == x2.data_ptr()
        got = y.clone()
        y.sum().backward()
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(got, want)
    assert x2.grad is not None and block.linear.weight.grad is not None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("math, operand_u", [("tf32", 2.0 ** -10), ("tf32x3", 2.0 ** -10),
                                             ("bf16", 2.0 ** -8)])
def test_cuda_math_modes_within_their_rounding(math, operand_u):
    """The library's other math modes: y within the float32 bound plus the
    rounding of the product's operands to TF32 (10 stored mantissa bits:
    2^-11 rounded, 2^-10 if the tensor cores truncate, which is taken) or
    bfloat16 (7, rounded to nearest by the library: 2^-8); tf32x3 keeps
    more than TF32, so TF32's bound holds for it too. bf16 differs from fp32: the mode is in use."""
    torch.manual_seed(1)
    block = ft.FusedBlock(128, 256, 8, math=math)
    x = torch.randn(64, 128)
    y = block.cuda()(x.cuda()).detach().cpu()
    block.cpu()
    exact = unfused(block, torch.float64)(x.double()) * 2
    bound = bounds(block, x, torch.zeros(64, 256), operand_u)[0]
    assert ((y.double() - exact).abs() <= bound).all()
    if math == "bf16":
        assert not torch.equal(y, block(x).detach())


def test_bad_math_is_refused():
    with pytest.raises(ValueError, match="expected one of fp32"):
        ft.FusedBlock(8, 8, 2, math="fp16")


def test_parameters_of_the_wrong_shape_are_refused_before_the_library_reads_them():
    """A weight smaller than the block (which the library would read past,
    or fault on) is named with the shape it should have."""
    block = ft.FusedBlock(4096, 4096, 8)
    block.linear.weight = torch.nn.Parameter(torch.randn(1, 1))
    with pytest.raises(ValueError, match=r"linear.weight is of shape \[1, 1\]; "
                                         r"expected shape \[4096, 4096\]"):
        block(torch.randn(2, 4096))
    small = ft.FusedBlock(8, 16, 4)
    small.linear.bias = torch.nn.Parameter(torch.zeros(15))
    with pytest.raises(ValueError, match=r"linear.bias is of shape \[15\]; expected shape \[16\]"):
        small(torch.randn(2, 8))
    small = ft.FusedBlock(8, 16, 4)
    small.norm.weight = torch.nn.Parameter(torch.ones(16, 1))
    with pytest.raises(ValueError, match=r"norm.weight is of shape \[16, 1\]"):
        small(torch.randn(2, 8))
    small = ft.FusedBlock(8, 16, 4)
    small.norm.bias = None
    with pytest.raises(ValueError, match="norm.bias is None"):
        small(torch.randn(2, 8))


def test_parameters_of_another_dtype_are_refused():
    block = ft.FusedBlock(8, 16, 4)
    block.norm.bias.data = block.norm.bias.data.double()
    with pytest.raises(TypeError, match="norm.bias is torch.float64; the block computes in "
                                        "float32"):
        block(torch.randn(2, 8))
    with pytest.raises(TypeError, match="float32"):
        ft.FusedBlock(8, 16, 4).double()(torch.randn(2, 8, dtype=torch.float64))


def test_float32_parameters_under_a_float64_default_dtype():
    torch.manual_seed(3)
    want_block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(5, 8)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        block = ft.FusedBlock(8, 16, 4)
        assert all(p.dtype == torch.float32 for p in block.parameters())
        block.load_state_dict(want_block.state_dict())
        got = block(x)
    finally:
        torch.set_default_dtype(old)
    assert torch.equal(got, want_block(x))


def test_a_second_derivative_is_refused_not_dropped():
    """create_graph=True (a gradient penalty) would need the derivative of
    the library's backward, which does not exist: an error, not the
    first-order gradient with the second-order term silently lost."""
    torch.manual_seed(4)
    block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(6, 8, requires_grad=True)
    y = block(x)
    with pytest.raises(RuntimeError, match="no second derivative"):
        torch.autograd.grad(y.pow(2).sum(), block.linear.weight, create_graph=True)
    # A plain backward still works.
    block(x).sum().backward()
    assert block.linear.weight.grad is not None


def test_leading_dimensions_as_nn_linear():
    """[..., in] -> [..., out]: the same bits as the rows in one [N, in]
    batch, and gradients of the input's shape; a 1-D input is one row."""
    torch.manual_seed(5)
    block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(2, 3, 8, requires_grad=True)
    y = block(x)
    assert y.shape == (2, 3, 16)
    assert torch.equal(y, block(x.detach().reshape(6, 8)).reshape(2, 3, 16))
    y.sum().backward()
    assert x.grad.shape == (2, 3, 8)
    v = torch.randn(8)
    assert block(v).shape == (16,)
    assert torch.equal(block(v), block(v.reshape(1, 8))[0])


def test_non_contiguous_inputs_and_parameters_are_made_contiguous():
    torch.manual_seed(6)
    block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(8, 10).t()  # [10, 8], not contiguous
    want = block(x.contiguous())
    block.linear.weight = torch.nn.Parameter(block.linear.weight.detach().t().contiguous().t())
    assert not block.linear.weight.is_contiguous()
    got = block(x)
    assert torch.equal(got, want)
    got.sum().backward()
    assert block.linear.weight.grad.shape == (16, 8)


def test_a_retained_graph_backs_twice():
    torch.manual_seed(9)
    block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(6, 8, requires_grad=True)
    y = block(x)
    y.sum().backward(retain_graph=True)
    once = block.linear.weight.grad.clone()
    y.sum().backward()
    assert torch.equal(block.linear.weight.grad, 2 * once)


def test_an_empty_batch():
    block = ft.FusedBlock(8, 16, 4)
    x = torch.randn(0, 8, requires_grad=True)
    y = block(x)
    assert y.shape == (0, 16)
    y.sum().backward()
    assert x.grad.shape == (0, 8)
    assert torch.equal(block.linear.weight.grad, torch.zeros(16, 8))


class Double(torch.nn.Module):
    def forward(self, x):
        return x + x


class Times2(torch.nn.Module):
    def forward(self, x):
        return 2 * x


class Block(torch.nn.Module):
    """The unfused block as scripts/weights_to_torch.py writes it."""

    def __init__(self, n_in, n_out, groups, slope=0.01):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        self.norm = torch.nn.GroupNorm(groups, n_out)
        self.act = torch.nn.LeakyReLU(slope)

    def forward(self, x):
        y = self.act(self.norm(self.linear(x)))
        return y + y


class NotABlock(Block):
    def forward(self, x):
        y = self.act(self.norm(self.linear(x)))
        return y + y + 1


def randomise_norms(model):
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.GroupNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def test_fuse_replaces_the_chains_and_keeps_the_parameters():
    """An nn.Sequential run (Linear, GroupNorm, LeakyReLU, x + x) and a
    Block module become FusedBlocks holding the same Parameter objects;
    each one's output is within the float32 bound of the exact block's
    (the bound test_outputs_and_gradients_within_float32_rounding checks)
    and so is the unfused one's; the model's output is the fused blocks'
    composition; what is not exactly the chain stays."""
    torch.manual_seed(7)
    model = torch.nn.Sequential(
        torch.nn.Linear(12, 32), torch.nn.GroupNorm(4, 32), torch.nn.LeakyReLU(0.2), Double(),
        Block(32, 24, 3),
        torch.nn.Sequential(torch.nn.Linear(24, 16, bias=False), torch.nn.GroupNorm(2, 16),
                            torch.nn.LeakyReLU(), Double()),
        NotABlock(16, 16, 2),
        torch.nn.Linear(16, 3))
    randomise_norms(model)
    params = {id(p) for p in model.parameters()}
    x = torch.randn(20, 12)
    with torch.no_grad():
        h1 = model[3](model[2](model[1](model[0](x))))
    fused = ft.fuse(model)
    assert fused is model
    assert isinstance(model[0], ft.FusedBlock)
    assert all(isinstance(model[i], torch.nn.Identity) for i in (1, 2, 3))
    assert isinstance(model[4], ft.FusedBlock)
    assert model[0].negative_slope == 0.2 and model[4].groups == 3
    # No bias, and a forward that is more than the chain: left as they were.
    assert isinstance(model[5][0], torch.nn.Linear) and isinstance(model[6], NotABlock)
    assert {id(p) for p in model.parameters()} == params
    assert list(model.state_dict())[:4] == ["0.linear.weight", "0.linear.bias",
                                            "0.norm.weight", "0.norm.bias"]
    with torch.no_grad():
        f1 = model[0](x)
        exact = unfused(model[0], torch.float64)(x.double()) * 2
        bound = bounds(model[0], x, torch.zeros(20, 32))[0]
        assert ((f1.double() - exact).abs() <= bound).all()
        assert ((h1.double() - exact).abs() <= bound).all()
        # The second block, on the first's fused output.
        f2 = model[4](f1)
        exact2 = unfused(model[4], torch.float64)(f1.double()) * 2
        bound2 = bounds(model[4], f1, torch.zeros(20, 24))[0]
        assert ((f2.double() - exact2).abs() <= bound2).all()
        # The model runs through the fused blocks (each checked above: the
        # layers after them carry the blocks' rounding differences on).
        assert torch.equal(model(x), model[7](model[6](model[5](f2))))


def test_fuse_of_a_block_itself_and_its_refusals():
    torch.manual_seed(8)
    block = Block(6, 8, 2, slope=0.1)
    randomise_norms(block)
    fused = ft.fuse(block)
    assert isinstance(fused, ft.FusedBlock)
    assert fused.linear is block.linear and fused.norm is block.norm
    assert fused.negative_slope == 0.1
    x = torch.randn(9, 6)
    bound = bounds(fused, x, torch.zeros(9, 8))[0]
    exact = unfused(fused, torch.float64)(x.double()) * 2
    assert ((fused(x).detach().double() - exact).abs() <= bound).all()
    assert ((block(x).detach().double() - exact).abs() <= bound).all()
    # Conservative: other channels, no affine norm, float64 parameters.
    for odd in (torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GroupNorm(2, 8, affine=False),
                                    torch.nn.LeakyReLU(), Double()),
                torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GroupNorm(2, 8),
                                    torch.nn.ReLU(), Double()),
                Block(6, 8, 2).double()):
        kinds = [type(m) for m in odd.modules()]
        assert [type(m) for m in ft.fuse(odd).modules()] == kinds
    # The doubling written 2 * x is the same chain; math passes through.
    doubled = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.GroupNorm(2, 8),
                                  torch.nn.LeakyReLU(), Times2())
    fused = ft.fuse(doubled, math="tf32")
    assert isinstance(fused[0], ft.FusedBlock) and fused[0].math == "tf32"
    with pytest.raises(ValueError, match="expected one of fp32"):
        ft.fuse(block, math="fp16")
