"""Every exporter of pyframe.onnx runs: each case is a small function or module exported (with a dynamic first
axis where the case allows), checked, run by onnxruntime and compared with pyframe; the cases together cover
every entry of the registry, and docs/onnx.md's op table is the registry's."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
import pyframe.nn.functional as F  # noqa: N812
from tests.onnx._support import numpy_of, run_onnx

rng = np.random.default_rng(0)


def r(*shape, lo=None, hi=None):
    a = rng.standard_normal(shape).astype(np.float32)
    return np.clip(a, lo, hi) if lo is not None else a


def pos(*shape):
    return (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)


def ints(*shape, lo=-7, hi=8):
    return rng.integers(lo, hi, shape).astype(np.int64)


def bools(*shape):
    return rng.random(shape) > 0.5


class _SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, q, mask, kpm):
        return self.mha(q, q, q, attn_mask=mask, key_padding_mask=kpm, average_attn_weights=False)


def mod(m):
    return m.eval()


def _call(ns, name):
    """``lambda x: ns.name(x)``: the function looked up when traced, as model code does."""
    return lambda x: getattr(ns, name)(x)


# (entries covered, function or module, inputs, dynamic first axis?)
CASES = [
    *[((n,), _call(pyframe, n), [pos(3, 4)], True) for n in ("log", "sqrt", "rsqrt", "log1p", "reciprocal")],
    *[
        ((n,), _call(pyframe, n), [r(3, 4)], True)
        for n in (
            "neg",
            "abs",
            "exp",
            "sin",
            "cos",
            "tan",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "sigmoid",
            "relu",
            "erf",
            "floor",
            "ceil",
            "sign",
            "round",
            "square",
        )
    ],  # fmt: skip
    *[((n,), _call(pyframe, n), [r(3, 4, lo=-0.9, hi=0.9)], True) for n in ("asin", "acos")],
    (("logical_not",), _call(pyframe, "logical_not"), [bools(3, 4)], True),
    (("logical_not", "abs", "neg"), lambda x, b: (~b, abs(x), -x), [r(2, 3), bools(2, 3)], True),
    *[
        ((n,), _call(F, n), [r(3, 4)], True)
        for n in ("silu", "mish", "logsigmoid", "hardsigmoid", "softsign", "selu", "hardswish", "relu6")
    ],  # fmt: skip
    (("gelu",), lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")), [r(3, 4)], True),
    (("softplus",), lambda x: (F.softplus(x), F.softplus(x, beta=2.0)), [r(3, 4)], True),
    (
        ("leaky_relu", "elu", "celu", "hardtanh"),
        lambda x: (F.leaky_relu(x, 0.2), F.elu(x, 0.5), F.celu(x, 2.0), F.hardtanh(x, -0.5, 0.7)),
        [r(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("softmin", "threshold", "tanhshrink", "hardshrink/softshrink", "rrelu"),
        lambda x: (
            F.softmin(x, 1),
            F.threshold(x, 0.1, -2.0),
            F.tanhshrink(x),
            F.hardshrink(x),
            F.softshrink(x, 0.3),
            F.rrelu(x),
        ),
        [r(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("einsum", "addmm", "cumsum"),
        lambda x, y, b: (
            pyframe.einsum("bij,bjk->bik", x, y),
            pyframe.einsum("bii->b", x[:, :, :3]),
            pyframe.addmm(b, x[0], y[0], beta=0.5, alpha=2.0),
            x.cumsum(1),
            pyframe.cumsum(x, -1),
        ),
        [r(2, 3, 4), r(2, 4, 5), r(5)],
        True,
    ),  # fmt: skip
    (
        ("index_select", "gather", "topk"),
        lambda x, i, j: (
            x.index_select(1, i),
            pyframe.gather(x, 1, j),
            *x.topk(2),
            *pyframe.topk(x, 3, dim=0, largest=False),
        ),
        [r(4, 5), ints(3, lo=0, hi=5), ints(4, 2, lo=0, hi=5)],
        True,
    ),  # fmt: skip
    (
        ("interpolate",),
        lambda x, y: (
            F.interpolate(x, scale_factor=2),
            F.interpolate(x, size=(5, 7)),
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True),
            F.interpolate(x, size=(5, 9), mode="nearest-exact"),
            F.interpolate(y, scale_factor=3, mode="linear"),
        ),
        [r(2, 3, 4, 4), r(2, 3, 5)],
        True,
    ),  # fmt: skip
    (
        ("interpolate",),
        mod(nn.Sequential(nn.Upsample(scale_factor=2), nn.UpsamplingBilinear2d(scale_factor=2))),
        [r(1, 2, 3, 3)],
        True,
    ),  # fmt: skip
    (
        ("instance_norm", "rms_norm"),
        lambda x, w: (
            F.instance_norm(x),
            F.instance_norm(x, weight=w, bias=w * 0.5),
            F.rms_norm(x, (6,)),
            F.rms_norm(x, (6,), w[:1].expand(6), 1e-5),
        ),
        [r(2, 3, 6), pos(3)],
        True,
    ),  # fmt: skip
    (
        ("clamp",),
        lambda x: (x.clamp(-0.5, 0.5), pyframe.clamp_min(x, 0.1), pyframe.clamp_max(x, 0.2), x.clip(max=0)),
        [r(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("add", "sub", "mul", "div", "true_divide", "pow"),
        lambda x, y: (
            x + y,
            pyframe.add(x, y, alpha=2),
            x - 1,
            2 * x,
            x / y,
            1 / y,
            pyframe.true_divide(x, y),
            y**2,
            pyframe.sub(x, y, alpha=0.5),
        ),
        [r(3, 4), pos(4)],
        True,
    ),  # fmt: skip
    (
        ("maximum", "minimum", "remainder", "fmod"),
        lambda x, y: (pyframe.maximum(x, y), pyframe.minimum(x, y), pyframe.remainder(x, y), pyframe.fmod(x, y)),
        [r(3, 4), pos(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("floor_divide", "add", "mul"),
        lambda a, b: (a // b, pyframe.floor_divide(a, 3), a * b + 1),
        [ints(3, 4), ints(3, 4, lo=1, hi=5) * np.array([1, -1, 1, -1])],
        True,
    ),  # fmt: skip
    (
        ("eq", "ne", "lt", "le", "gt", "ge"),
        lambda x, y: (x == y, x != 0.5, x < y, x <= 0, x > y, x >= y),
        [np.round(r(3, 4)), np.round(r(4))],
        True,
    ),  # fmt: skip
    (
        ("logical_and", "logical_or", "logical_xor"),
        lambda a, b: (a & b, a | b, pyframe.logical_xor(a, b)),
        [bools(3, 4), bools(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("where", "masked_fill"),
        lambda x, m: (pyframe.where(m, x, 0.0), x.masked_fill(m, -1.0), x.where(m, -x)),
        [r(3, 4), bools(3, 4)],
        True,
    ),  # fmt: skip
    (
        ("cast",),
        lambda x, i: (x.to(pyframe.int64), i.float(), x.double(), i.type_as(x), x.long().bool()),
        [r(3, 4) * 3, ints(3, 4)],
        True,
    ),  # fmt: skip
    (("identity",), lambda x: (x.clone() + 1, x.detach() * 2, x.t().contiguous()), [r(3, 4)], True),
    (
        ("sum", "mean", "prod", "amax", "amin"),
        lambda x: (
            x.sum(),
            x.sum(1),
            x.mean((0, 2), keepdim=True),
            x.prod(-1),
            pyframe.amax(x, 1),
            pyframe.amin(x, (1, 2)),
        ),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (("max", "min"), lambda x: (*x.max(1), *x.min(-1, keepdim=True), x.max(), x.min()), [r(2, 3, 4)], True),
    (
        ("logsumexp", "all/any", "argmax/argmin"),
        lambda x: (x.logsumexp(1), (x > 0).all(1), (x > 0).any(), x.argmax(1), x.argmin(-1, keepdim=True), x.argmax()),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (
        ("var/std", "norm"),
        lambda x: (
            x.var(1),
            x.std(),
            x.var(-1, unbiased=False),
            x.std(0, keepdim=True),
            x.norm(),
            x.norm(dim=1),
            x.norm(p=1, dim=-1),
        ),
        [r(3, 5)],
        True,
    ),  # fmt: skip
    (
        ("softmax", "log_softmax"),
        lambda x: (x.softmax(-1), F.log_softmax(x, dim=1), F.softmax(x, 0)),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (
        ("matmul",),
        lambda x, y, z: (x @ y, pyframe.matmul(x, z), pyframe.bmm(x, y), pyframe.mm(x[0], y[0])),
        [r(2, 3, 4), r(2, 4, 5), r(4, 2)],
        True,
    ),  # fmt: skip
    (
        ("linear",),
        lambda x, w, b: (F.linear(x, w, b), F.linear(x[0], w), F.linear(x, w)),
        [r(2, 3, 4), r(5, 4), r(5)],
        True,
    ),  # fmt: skip
    (
        ("getattr", "size", "numel", "reshape"),
        lambda x: (x.view(x.shape[0], -1), x.reshape(x.size(0) * 3, 4), x.reshape(-1) * x.numel(), x.T, x.mT),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (
        ("view_as/reshape_as", "flatten", "unflatten"),
        lambda x, y: (
            x.view_as(y),
            x.flatten(),
            x.flatten(1),
            pyframe.flatten(x, 0, 1),
            x.flatten(1, 2),
            x.unflatten(2, (2, 2)),
        ),
        [r(2, 3, 4), r(2, 12)],
        True,
    ),  # fmt: skip
    (
        ("permute", "transpose", "unsqueeze", "squeeze"),
        lambda x: (
            x.permute(2, 0, 1),
            x.transpose(0, -1),
            x.swapaxes(1, 2),
            x[0].t(),
            x.unsqueeze(1),
            x.unsqueeze(-1).squeeze(-1),
            x[:, :1].squeeze(1),
            x.squeeze(1),
        ),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (("squeeze",), lambda x: x.squeeze(), [r(1, 3, 1)], False),
    (
        ("expand", "expand_as", "repeat"),
        lambda x, y: (
            x.expand(2, -1, 4),
            pyframe.broadcast_to(x, (3, 3, 4)),
            x.expand_as(y),
            x.repeat(2, 1, 2),
            x.repeat(2, 1, 1, 1),
        ),
        [r(1, 3, 1), r(2, 3, 4)],
        False,
    ),  # fmt: skip
    (("expand",), lambda x: x[:, None].expand(x.shape[0], 3, 4), [r(2, 4)], True),
    (
        ("cat", "stack"),
        lambda x, y: (
            pyframe.cat([x, y], 1),
            pyframe.cat((x, x), dim=-1),
            pyframe.stack([x, x], 1),
            pyframe.stack([x, y.float()]),
        ),
        [r(2, 3), ints(2, 3)],
        True,
    ),  # fmt: skip
    (
        ("split",),
        lambda x: (
            *x.split(2, dim=1),
            *x.split([1, 3, 1], 1),
            *x.chunk(2, -1),
            *x.unbind(0),
            *pyframe.tensor_split(x, 3, dim=1),
        ),
        [r(2, 5, 4)],
        False,
    ),  # fmt: skip
    (("split",), lambda x: (*x.split(2, dim=1), *x.chunk(2, -1)), [r(2, 4, 4)], True),
    (
        ("narrow", "select"),
        lambda x: (x.narrow(1, 1, 2), x.select(2, -1), pyframe.select(x, 0, 1)),
        [r(2, 3, 4)],
        True,
    ),  # fmt: skip
    (
        ("getitem",),
        lambda x, i: (
            x[0],
            x[:, 1:3],
            x[..., -1],
            x[:, None, ::2],
            x[1:, -2:, 1],
            x[:, i],
            x[i],
            x[:, :, 1:-1],
            x[-1, ..., None],
        ),
        [r(3, 4, 5), ints(2, lo=0, hi=3)],
        False,
    ),  # fmt: skip
    (
        ("getitem",),
        lambda x: (x[:, 1:3], x[..., -1], x[:, None, ::2], x[:, -2:, 1], x[:, : x.shape[1] - 1]),
        [r(3, 4, 5)],
        True,
    ),  # fmt: skip
    (
        ("tril/triu", "flip"),
        lambda x: (x.tril(), pyframe.triu(x, 1), x.tril(-1), x.flip(0), pyframe.flip(x, (0, 1))),
        [r(4, 5)],
        True,
    ),  # fmt: skip
    (
        ("zeros/ones/full/empty", "zeros_like/ones_like/full_like", "arange"),
        lambda x: (
            pyframe.zeros(x.shape[0], 3) + 1,
            pyframe.ones(x.size(0), 2),
            pyframe.full((x.size(0), 2), 7.0),
            x.new_zeros(x.shape[0], 2),
            pyframe.zeros_like(x),
            pyframe.ones_like(x) * x,
            pyframe.full_like(x, 3.0),
            pyframe.arange(x.shape[0]),
            pyframe.arange(1, x.shape[1], 2, dtype=pyframe.float32),
        ),
        [r(3, 5)],
        True,
    ),  # fmt: skip
    (
        ("conv1d", "conv2d"),
        mod(nn.Sequential(nn.Conv2d(2, 4, 3, padding="same", dilation=2), nn.Conv2d(4, 4, 3, stride=2, groups=2))),
        [r(2, 2, 9, 9)],
        True,
    ),  # fmt: skip
    (("conv1d",), mod(nn.Conv1d(3, 4, 3, padding=1, bias=False)), [r(2, 3, 7)], True),
    (
        ("conv_transpose1d", "conv_transpose2d"),
        lambda x, y, w1, w2: (
            F.conv_transpose1d(x, w1, stride=2, padding=1, output_padding=1),
            F.conv_transpose2d(y, w2, None, 2, 1, 1, 1, 1),
        ),
        [r(2, 3, 5), r(2, 3, 4, 4), r(3, 2, 3), r(3, 2, 3, 3)],
        True,
    ),  # fmt: skip
    (("conv_transpose2d",), mod(nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1)), [r(1, 3, 5, 5)], True),
    (("batch_norm",), mod(nn.Sequential(nn.BatchNorm1d(4), nn.BatchNorm1d(4, affine=False))), [r(3, 4)], True),
    (
        ("layer_norm", "group_norm"),
        mod(nn.Sequential(nn.GroupNorm(2, 4), nn.LayerNorm([5, 5]), nn.LayerNorm(5, elementwise_affine=False))),
        [r(2, 4, 5, 5)],
        True,
    ),  # fmt: skip
    (
        ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"),
        lambda x, y: (
            F.max_pool2d(x, 3, 2, 1),
            F.avg_pool2d(x, 2),
            F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
            F.max_pool1d(y, 2),
            F.avg_pool1d(y, 3, 1, 1),
        ),
        [r(2, 3, 7, 7), r(2, 3, 8)],
        True,
    ),  # fmt: skip
    (
        ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d"),
        lambda x, y: (
            F.adaptive_avg_pool2d(x, 1),
            F.adaptive_avg_pool2d(x, (2, 4)),
            F.adaptive_max_pool2d(x, 1),
            F.adaptive_avg_pool1d(y, 2),
            F.adaptive_max_pool1d(y, 4),
        ),
        [r(2, 3, 4, 8), r(2, 3, 8)],
        False,
    ),  # fmt: skip
    (
        ("embedding", "dropout"),
        mod(nn.Sequential(nn.Embedding(10, 4, padding_idx=0), nn.Dropout(0.5), nn.AlphaDropout(0.3))),
        [ints(2, 3, lo=0, hi=10)],
        True,
    ),  # fmt: skip
    (
        ("pad", "normalize", "prelu", "glu"),
        lambda x, w: (
            F.pad(x, (1, 2)),
            F.pad(x, (1, 1, 2, 0), value=3.0),
            F.pad(x, (2, 1), mode="reflect"),
            F.pad(x, (1, 1, 1, 1), mode="replicate"),
            F.normalize(x),
            F.normalize(x, p=1, dim=-1),
            F.prelu(x, w),
            F.glu(x, 1),
        ),
        [r(2, 4, 5, 6), pos(4) / 4],
        True,
    ),  # fmt: skip
    (
        ("scaled_dot_product_attention",),
        lambda q, k, v, bm, fm: (
            F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, v, attn_mask=bm),
            F.scaled_dot_product_attention(q, k, v, fm, scale=0.3),
            F.scaled_dot_product_attention(q, q, q, is_causal=True),
        ),
        [r(2, 2, 3, 4), r(2, 2, 5, 4), r(2, 2, 5, 6), np.tril(np.ones((3, 5), bool)), r(3, 5)],
        True,
    ),  # fmt: skip
    (("MultiheadAttention",), mod(nn.MultiheadAttention(8, 2)), [r(4, 2, 8), r(5, 2, 8), r(5, 2, 8)], False),
    (
        ("MultiheadAttention",),
        _SelfAttention().eval(),
        [r(2, 4, 8), np.triu(np.ones((4, 4), bool), 1), np.array([[False] * 4, [False, False, False, True]])],
        True,
    ),  # fmt: skip
    (("LSTM",), mod(nn.LSTM(3, 5, num_layers=2, bidirectional=True, batch_first=True)), [r(2, 4, 3)], True),
    (("LSTM",), mod(nn.GRU(3, 5, bias=False)), [r(4, 3)], False),
    (("LSTM",), mod(nn.RNN(3, 5, num_layers=2)), [r(4, 2, 3), r(2, 2, 5)], True),
]


class _Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True, norm_first=True)

    def forward(self, tgt, memory):
        return self.layer(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(tgt.shape[1]))


class _Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16, batch_first=True)

    def forward(self, src, tgt, src_pad):
        mask = self.t.generate_square_subsequent_mask(tgt.size(1))
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=src_pad, tgt_is_causal=True)


CASES.append((("MultiheadAttention",), _Decoder().eval(), [r(2, 4, 8), r(2, 5, 8)], False))
CASES.append((("MultiheadAttention",), _Seq2Seq().eval(), [r(2, 5, 8), r(2, 4, 8), np.eye(2, 5, 3, dtype=bool)],
              False))  # fmt: skip


def _outputs(out) -> list:
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _outputs(x)]
    return [] if out is None else [out]


def _export(fn, inputs, dynamic: bool, opset: int = 20) -> bytes:
    import pyframe.onnx

    names = [f"in{i}" for i in range(len(inputs))]
    axes = {names[0]: {0: "n"}} if dynamic else None
    f = io.BytesIO()
    pyframe.onnx.export(fn, tuple(pyframe.tensor(a) for a in inputs), f, input_names=names, dynamic_axes=axes,
                        opset_version=opset)  # fmt: skip
    return f.getvalue()


@pytest.mark.parametrize("case", range(len(CASES)), ids=lambda i: "-".join(CASES[i][0]) + f"-{i}")
@pytest.mark.parametrize("opset", [14, 20])  # reduction axes, Split and LayerNormalization changed between them
def test_exporter_runs_as_pyframe(ort, case, opset):
    _, fn, inputs, dynamic = CASES[case]
    for dyn in (False, True) if dynamic else (False,):
        data = _export(fn, inputs, dyn, opset)
        got = run_onnx(ort, data, {f"in{i}": a for i, a in enumerate(inputs)})
        with pyframe.no_grad():
            want = _outputs(fn(*(pyframe.tensor(a) for a in inputs)))
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            w = numpy_of(w)
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [14, 17, 18, 21])
def test_opsets(ort, opset):
    fn = lambda x: (F.layer_norm(x, (4,)), x.sum(1), x.split(2, -1)[1], x.amax(-1))  # noqa: E731
    x = r(3, 5, 4)
    got = run_onnx(ort, _export(fn, [x], True, opset), {"in0": x})
    for g, w in zip(got, _outputs(fn(pyframe.tensor(x))), strict=True):
        np.testing.assert_allclose(g, numpy_of(w), rtol=1e-5, atol=1e-5)


def test_every_exporter_has_a_case():
    from pyframe.onnx._registry import ENTRIES

    covered = {name for names, *_ in CASES for name in names}
    assert {e.name for e in ENTRIES} - covered == set()


def test_docs_op_table_is_the_registry():
    from pyframe.onnx.op_table import markdown_table

    doc = (Path(__file__).resolve().parents[2] / "docs" / "onnx.md").read_text()
    start = doc.index("<!-- op table: generated")
    table = doc[doc.index("\n", start) + 1 : doc.index("<!-- end of op table -->")]
    assert table == markdown_table(), "regenerate: python tests/onnx/test_ops.py"


if __name__ == "__main__":  # rewrite docs/onnx.md's op table from the registry
    from pyframe.onnx.op_table import markdown_table

    path = Path(__file__).resolve().parents[2] / "docs" / "onnx.md"
    doc = path.read_text()
    start = doc.index("\n", doc.index("<!-- op table: generated")) + 1
    path.write_text(doc[:start] + markdown_table() + doc[doc.index("<!-- end of op table -->") :])
