"""nn.TransformerEncoder(Layer) and nn.Transformer against torch from identical weights (float64 outputs and
gradients), and dropout in training."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
from tests._oracle import both, close, rand, twin

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_matches_torch(norm_first, activation):
    def build(n):
        layer = n.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                          norm_first=norm_first, activation=activation)  # fmt: skip
        return n.TransformerEncoder(layer, 2, norm=n.LayerNorm(8), enable_nested_tensor=False)

    t, p = twin(build)
    t.eval()
    p.eval()
    px, tx = both(rand(2, 5, 8))
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    kpm = np.zeros((2, 5))
    kpm[0, -1] = -np.inf
    po = p(px, mask=mask, src_key_padding_mask=pf.tensor(kpm))
    to = t(tx, mask=torch.tensor(mask.numpy()), src_key_padding_mask=torch.tensor(kpm))
    close(po, to)
    po.sum().backward()
    to.sum().backward()
    close(px.grad, tx.grad)
    for tp, pp in zip(t.parameters(), p.parameters(), strict=True):
        close(pp.grad, tp.grad)


def test_transformer_encoder_layer_dropout_trains():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.layers[0] is not enc.layers[1]
    x = pf.randn(5, 2, 8)
    y = enc(x)
    assert tuple(y.shape) == (5, 2, 8)
    y.sum().backward()
    assert all(q.grad is not None for q in enc.parameters())
    with pytest.raises(RuntimeError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")


@pytest.mark.parametrize("batch_first, norm_first", [(False, False), (True, True)])
def test_full_transformer_matches_torch(batch_first, norm_first):
    def build(n):
        return n.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=12,
                             dropout=0.0, batch_first=batch_first, norm_first=norm_first)  # fmt: skip

    t, p = twin(build)
    src, tgt = rand(2, 5, 8) if batch_first else rand(5, 2, 8), rand(2, 4, 8, seed=1) if batch_first else rand(
        4, 2, 8, seed=1)  # fmt: skip
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=pf.float64)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, -2:] = True
    (ps, ts), (pt, tt) = both(src), both(tgt)
    po = p(ps, pt, tgt_mask=mask, src_key_padding_mask=pf.tensor(kpm), memory_key_padding_mask=pf.tensor(kpm))
    to = t(ts, tt, tgt_mask=torch.tensor(mask.numpy()), src_key_padding_mask=torch.tensor(kpm),
           memory_key_padding_mask=torch.tensor(kpm))  # fmt: skip
    close(po, to)
    po.sum().backward()
    to.sum().backward()
    close(ps.grad, ts.grad)
    close(pt.grad, tt.grad)
    for tp, pp in zip(t.parameters(), p.parameters(), strict=True):
        close(pp.grad, tp.grad)
    with pytest.raises(RuntimeError, match="d_model"):
        p(pf.randn(*src.shape[:-1], 6).double(), pf.randn(*tgt.shape[:-1], 6).double())
