"""nn.utils.fusion: an eval-mode batch norm folded into the convolution or linear layer before it, against the
unfused pair and torch's fused weights; the errors."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn

torch = pytest.importorskip("torch")


def _random_state(module, rng):
    return {k: (np.abs(rng.standard_normal(tuple(v.shape))) + 0.5 if k.endswith("running_var")
                else rng.standard_normal(tuple(v.shape))).astype(np.float32) if v.dtype.is_floating_point else v.numpy()
            for k, v in module.state_dict().items()}  # fmt: skip


CASES = [("conv2d", lambda n: (n.Conv2d(3, 4, 3), n.BatchNorm2d(4)), (2, 3, 5, 5), False),
         ("conv1d_nobias", lambda n: (n.Conv1d(3, 4, 3, bias=False), n.BatchNorm1d(4)), (2, 3, 6), False),
         ("convtranspose2d", lambda n: (n.ConvTranspose2d(3, 4, 3), n.BatchNorm2d(4)), (2, 3, 4, 4), True),
         ("linear", lambda n: (n.Linear(5, 4), n.BatchNorm1d(4)), (3, 5), None),
         ("linear_bn1", lambda n: (n.Linear(5, 4), n.BatchNorm1d(1)), (3, 1, 5), None)]  # fmt: skip


@pytest.mark.parametrize("name, build, shape, transpose", CASES, ids=[c[0] for c in CASES])
def test_fused_layer_equals_layer_then_batch_norm_and_torch(name, build, shape, transpose):
    rng = np.random.default_rng(0)
    (layer, bn), (tlayer, tbn) = build(nn), build(torch.nn)
    for ours, theirs in ((layer, tlayer), (bn, tbn)):
        state = _random_state(theirs, rng)
        ours.load_state_dict({k: pf.tensor(v) for k, v in state.items()})
        theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
        ours.eval()
        theirs.eval()
    if transpose is None:
        fused, tfused = nn.utils.fuse_linear_bn_eval(layer, bn), torch.nn.utils.fuse_linear_bn_eval(tlayer, tbn)
    else:
        fused = nn.utils.fuse_conv_bn_eval(layer, bn, transpose)
        tfused = torch.nn.utils.fuse_conv_bn_eval(tlayer, tbn, transpose)
    assert fused is not layer and type(fused.weight) is nn.Parameter and fused.weight.requires_grad
    for a, b in ((fused.weight, tfused.weight), (fused.bias, tfused.bias)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    x = pf.tensor(rng.standard_normal(shape).astype(np.float32))
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(layer(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_fusion_errors():
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    with pytest.raises(ValueError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(conv, bn)
    conv.eval()
    with pytest.raises(ValueError, match="running statistics"):
        nn.utils.fuse_conv_bn_eval(conv, nn.BatchNorm2d(4, track_running_stats=False).eval())
    with pytest.raises(ValueError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(3, 4).eval(), nn.BatchNorm1d(3).eval())
