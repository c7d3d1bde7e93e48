"""The fused C kernels behind the GPT-style training step (layer_norm, gelu, causal SDPA,
cross_entropy, AdamW) against torch: float32 shapes large enough to run in parallel,
strided inputs, optional affine parts, and bad input reaching the C core's checks."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe._backend import NULL, lib

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _run(pf_fn, torch_fn, arrays, rtol, atol, grad=True):
    """Forward and (with a random cotangent) every input's gradient, pyframe beside torch."""
    ps = [pf.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    po, to = pf_fn(*ps), torch_fn(*ts)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if grad:
        cot = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(arrays[0].dtype)
        po.backward(pf.tensor(cot))
        to.backward(torch.tensor(cot))
        for i, (p, t) in enumerate(zip(ps, ts, strict=True)):
            if t.requires_grad:
                np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")


@pytest.mark.parametrize("rows", [3, 1200])  # 1200 x 64 passes the parallel grain
@pytest.mark.parametrize("affine", ["wb", "w", "b", ""])
def test_layer_norm_float32(rows, affine):
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 64)) * 3 + 1).astype("float32")
    w, b = rng.standard_normal(64).astype("float32"), rng.standard_normal(64).astype("float32")
    arrays = [x] + ([w] if "w" in affine else []) + ([b] if "b" in affine else [])

    def call(F_, x, *rest):
        it = iter(rest)
        return F_.layer_norm(x, (64,), next(it) if "w" in affine else None, next(it) if "b" in affine else None)

    _run(lambda *a: call(F, *a), lambda *a: call(TF, *a), arrays, rtol=1e-4, atol=1e-4)


def test_layer_norm_strided_input_and_two_dims():
    x = np.random.default_rng(2).standard_normal((6, 5, 4)).astype("float64")
    _run(lambda x: F.layer_norm(x.transpose(0, 1), (6, 4)), lambda x: TF.layer_norm(x.transpose(0, 1), (6, 4)),
         [x], rtol=1e-10, atol=1e-12)  # fmt: skip


def test_layer_norm_core_checks():
    with pytest.raises(TypeError, match="float32 or float64"):
        pf._backend.check(lib.pf_layer_norm(3, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))
    with pytest.raises(ValueError, match="NULL"):
        pf._backend.check(lib.pf_layer_norm(0, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))
