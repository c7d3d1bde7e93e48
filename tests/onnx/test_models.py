"""The models people export, exported by pyframe.onnx.export, checked by onnx.checker and run by onnxruntime:
outputs within 1e-5 of pyframe's, at two batch sizes where axes are dynamic; where torch's own exporter works
here, torch's export of the same weights runs to the same numbers."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import pyframe
from tests.onnx import models
from tests.onnx._support import copy_weights, export_bytes, numpy_of, run_onnx

TOL = dict(rtol=1e-5, atol=1e-5)


def _check(model_bytes):
    import onnx

    onnx.checker.check_model(onnx.load_from_string(model_bytes), full_check=True)


def _torch_export(tmodel, args, **kwargs) -> bytes | None:
    """torch's TorchScript-based exporter on the same weights, or None where it does not run here."""
    torch = pytest.importorskip("torch")
    f = io.BytesIO()
    try:
        with warnings.catch_warnings():  # grad mode on: torch then skips its fused encoder path
            warnings.simplefilter("ignore")
            torch.onnx.export(tmodel.eval(), args, f, dynamo=False, **kwargs)
    except Exception as e:  # noqa: BLE001 - torch's exporter is an oracle only where it works
        pytest.skip(f"torch's exporter does not run here: {type(e).__name__}: {e}")
    return f.getvalue()


def _compare_with_torch(ort, lib_model, make, args_np: list, names: dict, ours: list, feeds: dict) -> None:
    torch = pytest.importorskip("torch")
    tmodel = make(torch)
    copy_weights(lib_model, tmodel)
    targs = tuple(torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args_np)
    theirs = run_onnx(ort, _torch_export(tmodel, targs, **names), feeds)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, **TOL)


def test_mlp(ort):
    m = models.mlp(pyframe).eval()
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    names = dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    data = export_bytes(m, (pyframe.tensor(x),), **names)
    _check(data)
    for batch in (5, 2):
        xb = np.random.default_rng(batch).standard_normal((batch, 6)).astype(np.float32)
        (y,) = run_onnx(ort, data, {"x": xb})
        assert y.shape == (batch, 4)
        np.testing.assert_allclose(y, numpy_of(m(pyframe.tensor(xb))), **TOL)
    _compare_with_torch(ort, m, models.mlp, [x], names, run_onnx(ort, data, {"x": x}), {"x": x})


def test_cnn_with_batchnorm(ort):
    m = models.cnn(pyframe)
    rng = np.random.default_rng(1)
    m(pyframe.tensor(rng.standard_normal((4, 3, 12, 12)).astype(np.float32)))  # running statistics move
    m.eval()
    x = rng.standard_normal((3, 3, 12, 12)).astype(np.float32)
    names = dict(input_names=["img"], output_names=["logits"], dynamic_axes={"img": [0], "logits": [0]})
    data = export_bytes(m, pyframe.tensor(x), **names)
    _check(data)
    assert m.training is False
    for batch in (3, 1):
        xb = rng.standard_normal((batch, 3, 12, 12)).astype(np.float32)
        (y,) = run_onnx(ort, data, {"img": xb})
        np.testing.assert_allclose(y, numpy_of(m(pyframe.tensor(xb))), **TOL)
    _compare_with_torch(ort, m, models.cnn, [x], names, run_onnx(ort, data, {"img": x}), {"img": x})


def test_gpt_block_causal_sdpa(ort):
    m = models.gpt_block(pyframe).eval()
    rng = np.random.default_rng(2)
    idx = rng.integers(0, 11, (2, 7)).astype(np.int64)
    names = dict(input_names=["idx"], output_names=["logits"],
                 dynamic_axes={"idx": {0: "batch", 1: "time"}, "logits": {0: "batch", 1: "time"}})  # fmt: skip
    data = export_bytes(m, (pyframe.tensor(idx),), **names)
    _check(data)
    for shape in ((2, 7), (3, 5), (1, 12)):
        ib = rng.integers(0, 11, shape).astype(np.int64)
        (y,) = run_onnx(ort, data, {"idx": ib})
        np.testing.assert_allclose(y, numpy_of(m(pyframe.tensor(ib))), **TOL)
    _compare_with_torch(ort, m, models.gpt_block, [idx], names, run_onnx(ort, data, {"idx": idx}), {"idx": idx})


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_rnn_language_model(ort, cell):
    m = models.lstm_lm(pyframe, cell).eval()
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 13, (6, 2)).astype(np.int64)  # (seq, batch)

    def hidden(batch):
        h = rng.standard_normal((2, batch, 12)).astype(np.float32)
        c = rng.standard_normal((2, batch, 12)).astype(np.float32)
        return (h, c) if cell == "LSTM" else h

    def as_pf(h):
        return tuple(pyframe.tensor(t) for t in h) if cell == "LSTM" else pyframe.tensor(h)

    in_names = ["tokens", "h0", "c0"] if cell == "LSTM" else ["tokens", "h0"]
    out_names = ["logp", "h1", "c1"] if cell == "LSTM" else ["logp", "h1"]
    axes = {"tokens": {0: "seq", 1: "batch"}, "logp": {0: "seq", 1: "batch"},
            **{n: {1: "batch"} for n in in_names[1:] + out_names[1:]}}  # fmt: skip
    h = hidden(2)
    names = dict(input_names=in_names, output_names=out_names, dynamic_axes=axes)
    data = export_bytes(m, (pyframe.tensor(tokens), as_pf(h)), **names)
    _check(data)
    for seq, batch in ((6, 2), (4, 3)):
        tb, hb = rng.integers(0, 13, (seq, batch)).astype(np.int64), hidden(batch)
        feeds = dict(zip(in_names, (tb, *(hb if cell == "LSTM" else (hb,))), strict=True))
        got = run_onnx(ort, data, feeds)
        logp, hid = m(pyframe.tensor(tb), as_pf(hb))
        want = [logp, *(hid if cell == "LSTM" else (hid,))]
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, numpy_of(b), **TOL)
    feeds = dict(zip(in_names, (tokens, *(h if cell == "LSTM" else (h,))), strict=True))
    torch = pytest.importorskip("torch")
    th = tuple(torch.tensor(t) for t in h) if cell == "LSTM" else torch.tensor(h)
    _compare_with_torch(ort, m, lambda lib: models.lstm_lm(lib, cell), [tokens, th], names,
                        run_onnx(ort, data, feeds), feeds)  # fmt: skip


def test_transformer_encoder(ort):
    m = models.transformer_encoder(pyframe).eval()
    rng = np.random.default_rng(4)
    src = rng.standard_normal((2, 5, 16)).astype(np.float32)
    mask = np.zeros((2, 5), bool)
    mask[1, 3:] = True
    axes = {"src": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}, "y": {0: "batch"}}
    names = dict(input_names=["src", "mask"], output_names=["y"], dynamic_axes=axes)
    data = export_bytes(m, (pyframe.tensor(src), pyframe.tensor(mask)), **names)
    _check(data)
    for batch, seq in ((2, 5), (3, 7)):
        sb = rng.standard_normal((batch, seq, 16)).astype(np.float32)
        mb = np.zeros((batch, seq), bool)
        mb[0, seq - 2 :] = True
        (y,) = run_onnx(ort, data, {"src": sb, "mask": mb})
        np.testing.assert_allclose(y, numpy_of(m(pyframe.tensor(sb), pyframe.tensor(mb))), **TOL)
    feeds = {"src": src, "mask": mask}
    _compare_with_torch(ort, m, models.transformer_encoder, [src, mask], names, run_onnx(ort, data, feeds), feeds)
