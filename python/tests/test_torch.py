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
    with pytest.raises(ValueError, match=r"expected \[N, 8\]"):
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
