"""rms_norm against a PyTorch reference, on whichever kernel the `kernel` fixture loaded."""

from __future__ import annotations

import pytest
import torch

TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    # Kernel and reference both compute in fp32 and round once: at most one
    # ulp apart (bf16: 2**-7 relative, fp16: 2**-10 relative).
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float16: dict(rtol=2e-3, atol=1e-3),
}


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()
    return y.to(x.dtype)


def make(shape, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
    w = (1.0 + 0.1 * torch.randn(shape[-1], generator=g)).to(device=device, dtype=dtype)
    return x, w


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "shape",
    # 4096 .. 65536: each of the CUDA kernel's vector paths (staged in shared memory,
    # cached in registers, two-pass) for some dtype; rmsnorm.cu's choose_path.
    [(1, 1), (3, 7), (2, 8), (5, 64), (4, 4096), (3, 4097), (3, 8192), (2, 12288), (2, 32768), (2, 65536),
     (2, 3, 96), (2, 2, 3, 40), (17,)],
    ids=str,
)
def test_matches_reference(kernel, device, dtype, shape):
    x, w = make(shape, dtype, device)
    got = kernel.rms_norm(x, w, 1e-6)
    assert got.shape == x.shape and got.dtype == dtype and got.device == x.device
    torch.testing.assert_close(got, reference(x, w, 1e-6), **TOLERANCES[dtype])


def test_default_eps_is_1e_6(kernel, device):
    x, w = make((4, 33), torch.float32, device)
    torch.testing.assert_close(kernel.rms_norm(x, w), reference(x, w, 1e-6))


@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.5])
def test_eps_is_applied(kernel, device, eps):
    # Small values, so that eps dominates the mean square for the larger eps.
    x, w = make((6, 48), torch.float32, device)
    x = x * 1e-2
    torch.testing.assert_close(kernel.rms_norm(x, w, eps), reference(x, w, eps))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_non_contiguous_input(kernel, device, dtype):
    base, _ = make((64, 96), dtype, device)
    x = base.t()  # (96, 64), strides (1, 96)
    assert not x.is_contiguous()
    w = make((64,), dtype, device, seed=1)[1]
    torch.testing.assert_close(kernel.rms_norm(x, w), reference(x, w, 1e-6), **TOLERANCES[dtype])

    sliced = base[:, ::2]  # every other column
    w2 = make((48,), dtype, device, seed=2)[1]
    torch.testing.assert_close(kernel.rms_norm(sliced, w2), reference(sliced, w2, 1e-6), **TOLERANCES[dtype])


def test_many_rows_parallel(kernel, device):
    x, w = make((1024, 256), torch.float32, device)
    torch.testing.assert_close(kernel.rms_norm(x, w), reference(x, w, 1e-6))


def test_out_and_in_place(kernel, device):
    x, w = make((8, 130), torch.bfloat16, device)
    expected = reference(x, w, 1e-6)
    out = torch.empty_like(x)
    assert kernel.rms_norm(x, w, out=out) is out
    torch.testing.assert_close(out, expected, **TOLERANCES[torch.bfloat16])

    y = x.clone()
    assert kernel.rms_norm_(y, w) is y
    torch.testing.assert_close(y, expected, **TOLERANCES[torch.bfloat16])


@pytest.mark.parametrize("hidden", [4096, 16384, 65536], ids=lambda h: f"hidden{h}")
def test_in_place_on_every_vector_path(kernel, device, hidden):
    # out aliases x: every load of a row must come before any store to it.
    x, w = make((6, hidden), torch.bfloat16, device, seed=3)
    expected = reference(x, w, 1e-6)
    y = x.clone()
    assert kernel.rms_norm_(y, w) is y
    torch.testing.assert_close(y, expected, **TOLERANCES[torch.bfloat16])


def test_empty_batch(kernel, device):
    x, w = make((0, 16), torch.float32, device)
    assert kernel.rms_norm(x, w).shape == (0, 16)


def test_zero_row_with_positive_eps_is_zero(kernel, device):
    x = torch.zeros(2, 32, device=device)
    w = torch.ones(32, device=device)
    assert torch.equal(kernel.rms_norm(x, w, 1e-6), torch.zeros_like(x))


def _int_input(d):
    return torch.ones(2, 4, dtype=torch.int32, device=d), torch.ones(4, device=d)


def _weight_dtype(d):
    return torch.ones(2, 4, device=d), torch.ones(4, dtype=torch.bfloat16, device=d)


def _weight_size(d):
    return torch.ones(2, 4, device=d), torch.ones(5, device=d)


def _weight_2d(d):
    return torch.ones(2, 4, device=d), torch.ones(2, 4, device=d)


def _empty_hidden(d):
    return torch.ones(2, 0, device=d), torch.ones(0, device=d)


@pytest.mark.parametrize(
    "build, error, match",
    [
        (_int_input, TypeError, "float32"),
        (_weight_dtype, TypeError, "dtype"),
        (_weight_size, ValueError, r"shape \(4,\)"),
        (_weight_2d, ValueError, "weight must have shape"),
        (_empty_hidden, ValueError, "non-empty last dimension"),
    ],
    ids=["int-input", "weight-dtype", "weight-size", "weight-2d", "empty-hidden"],
)
def test_bad_input_is_refused_clearly(kernel, device, build, error, match):
    x, w = build(device)
    with pytest.raises(error, match=match):
        kernel.rms_norm(x, w)


def test_bad_eps_and_out_refused(kernel, device):
    x, w = make((2, 8), torch.float32, device)
    with pytest.raises(ValueError, match="eps"):
        kernel.rms_norm(x, w, -1.0)
    with pytest.raises(ValueError, match="out must match"):
        kernel.rms_norm(x, w, out=torch.empty(2, 9, device=device))
    with pytest.raises(ValueError, match="contiguous"):
        kernel.rms_norm_(x.t(), torch.ones(2, device=device))


def test_layer_forward_matches(kernel, device):
    class LlamaRMSNorm(torch.nn.Module):
        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, hidden, device=device))
            self.variance_epsilon = 1e-5

    module = LlamaRMSNorm(40)
    x, _ = make((3, 5, 40), torch.float32, device)
    with torch.no_grad():
        got = kernel.layers.RMSNorm.forward(module, x)
    torch.testing.assert_close(got, reference(x, module.weight.detach(), 1e-5))


def test_op_is_registered_under_a_unique_namespace(kernel):
    qualified = kernel._ops.add_op_namespace_prefix("rms_norm")
    namespace, op = qualified.split("::")
    assert op == "rms_norm" and namespace.startswith("_rmsnorm")
    assert hasattr(getattr(torch.ops, namespace), "rms_norm")
