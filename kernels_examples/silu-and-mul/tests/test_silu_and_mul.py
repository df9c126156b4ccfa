"""silu_and_mul against a PyTorch reference, on whichever kernel the `kernel` fixture loaded."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

TOLERANCES = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float16: dict(rtol=2e-3, atol=1e-3),
}


def reference(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    xf = x.float()
    return (F.silu(xf[..., :d]) * xf[..., d:]).to(x.dtype)


def make(shape, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (3 * torch.randn(shape, generator=g)).to(device=device, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [(2,), (1, 2), (3, 14), (4, 8194), (2, 3, 64)], ids=str)
def test_matches_reference(kernel, device, dtype, shape):
    x = make(shape, dtype, device)
    got = kernel.silu_and_mul(x)
    assert got.shape == (*shape[:-1], shape[-1] // 2) and got.dtype == dtype
    torch.testing.assert_close(got, reference(x), **TOLERANCES[dtype])


def test_non_contiguous_input_and_out(kernel, device):
    base = make((32, 40), torch.float32, device)
    x = base.t()  # (40, 32), not contiguous
    out_base = torch.full((16, 40), 7.0, device=device)
    out = out_base.t()  # (40, 16), not contiguous
    assert kernel.silu_and_mul(x, out=out) is out
    torch.testing.assert_close(out, reference(x))


def test_out_shape_checked(kernel, device):
    x = make((4, 10), torch.float32, device)
    with pytest.raises(ValueError, match=r"out must have shape \(4, 5\)"):
        kernel.silu_and_mul(x, out=torch.empty(4, 10, device=device))


@pytest.mark.parametrize(
    "x, error, match",
    [
        (torch.ones(4, 7), ValueError, "even"),
        (torch.ones(4, 0), ValueError, "even and non-zero"),
        (torch.ones(4, 8, dtype=torch.int64), TypeError, "float32"),
    ],
    ids=["odd", "empty", "int"],
)
def test_bad_input_refused(kernel, x, error, match):
    with pytest.raises(error, match=match):
        kernel.silu_and_mul(x)


def test_layer(kernel, device):
    x = make((2, 5, 12), torch.bfloat16, device)
    torch.testing.assert_close(
        kernel.layers.SiluAndMul()(x), reference(x), **TOLERANCES[torch.bfloat16]
    )


def test_registered_op_and_torch_compile(kernel, device):
    namespace, op = kernel._ops.add_op_namespace_prefix("silu_and_mul").split("::")
    assert op == "silu_and_mul" and namespace.startswith("_silu_and_mul")
    x = make((8, 32), torch.float32, device)
    out = torch.empty(8, 16, device=device)
    getattr(torch.ops, namespace).silu_and_mul(out, x)
    torch.testing.assert_close(out, reference(x))


def test_fake_tensor_propagation(kernel):
    # The op's fake impl lets torch.compile / meta tracing see through it.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 6)
        y = kernel.silu_and_mul(x)
        assert y.shape == (3, 3)
