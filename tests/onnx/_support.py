"""Helpers of the ONNX tests: export to bytes, run with onnxruntime, copy weights to torch."""

import io

import numpy as np

import pyframe


def run_onnx(ort, model_bytes: bytes, feeds: dict) -> list:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # one thread: a shared machine, exact sums
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {k: np.asarray(v) for k, v in feeds.items()})


def export_bytes(model, args, **kwargs) -> bytes:
    import pyframe.onnx

    f = io.BytesIO()
    pyframe.onnx.export(model, args, f, **kwargs)
    return f.getvalue()


def copy_weights(src, dst) -> None:
    """pyframe model -> torch model of the same structure (state_dict by name)."""
    import torch

    dst.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})


def numpy_of(t):
    return t.detach().numpy() if isinstance(t, pyframe.Tensor) else np.asarray(t)
