"""What pyframe.onnx.export refuses, and how it says so: the op and the module path where it was called, never a
wrong graph; plus the torch-ported spelling (`import torch.onnx` with pyframe as torch)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pyframe
import pyframe.nn as nn
from tests.compat.test_compat import as_pyframe

onnx = pytest.importorskip("onnx")
import pyframe.onnx  # noqa: E402
from pyframe.onnx import OnnxExporterError, UnsupportedOperatorError  # noqa: E402


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return pyframe.kthvalue(self.fc(x), 2).values


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.head = Head()

    def forward(self, x):
        return self.head(self.body(x))


def test_unsupported_op_names_op_and_module_path():
    with pytest.raises(UnsupportedOperatorError, match=r"pyframe\.kthvalue.*in module 'head' \(Head\)"):
        pyframe.onnx.export(Net(), (pyframe.randn(2, 4),), None)


def test_inplace_with_later_reader_is_refused():
    class Ignored(nn.Module):
        def forward(self, x):
            y = x * 2
            y.add_(1)  # its result is not used, but y is read below: refused, not dropped
            return y + x

    class Fine(nn.Module):
        def forward(self, x):
            return (x * 2).relu_() + nn.functional.relu(x - 1, inplace=True)

    class Reads(nn.Module):
        def forward(self, x):
            y = x * 2
            z = y.mul_(3)
            return z + y  # reads y after the in-place op

    with pytest.raises(UnsupportedOperatorError, match="in-place Tensor.mul_"):
        pyframe.onnx.export(Reads(), (pyframe.randn(2, 3),), None)
    with pytest.raises(UnsupportedOperatorError, match="in-place Tensor.add_"):
        pyframe.onnx.export(Ignored(), (pyframe.randn(2, 3),), None)
    pyframe.onnx.export(Fine(), (pyframe.randn(2, 3),), None)  # nothing reads the old values afterwards

    class ThroughView(nn.Module):
        def forward(self, x):
            y = x * 1.0
            y[:, 0].mul_(2)  # changes y through a view: y, read below, would be wrong in the graph
            return y

    with pytest.raises(UnsupportedOperatorError, match="or a view sharing its memory"):
        pyframe.onnx.export(ThroughView(), (pyframe.randn(2, 3),), None)

    class Writes(nn.Module):
        def forward(self, x):
            y = x.clone()
            y[0] = 0.0
            return y

    with pytest.raises(UnsupportedOperatorError, match="writing into a tensor"):
        pyframe.onnx.export(Writes(), (pyframe.randn(2, 3),), None)


def test_training_mode_forms_are_refused_and_modes_restored():
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))
    m.train()
    pyframe.onnx.export(m, (pyframe.randn(2, 3),), None)  # exported in eval, as torch does by default
    assert m.training and m[1].training

    def f(x):
        return nn.functional.dropout(x, 0.5, training=True)

    with pytest.raises(OnnxExporterError, match="dropout in training mode"):
        pyframe.onnx.export(f, (pyframe.randn(2, 3),), None)
    with pytest.raises(OnnxExporterError, match="opset_version 9"):
        pyframe.onnx.export(m, (pyframe.randn(2, 3),), None, opset_version=9)
    with pytest.raises(OnnxExporterError, match="neither input nor output"):
        pyframe.onnx.export(m, (pyframe.randn(2, 3),), None, dynamic_axes={"nope": [0]})


def test_sizes_fixed_while_tracing_a_dynamic_axis_are_refused():
    class IntSize(nn.Module):
        def forward(self, x):
            return x.reshape(int(x.size(0)) * x.size(1))  # int(): the graph would keep the traced batch

    class Loop(nn.Module):
        def forward(self, x):
            out = x[:, 0]
            for t in range(1, x.size(1)):  # unrolled for the traced length
                out = out + x[:, t]
            return out

    x = pyframe.randn(2, 3)
    pyframe.onnx.export(IntSize(), (x,), None)  # no dynamic axes: every size is a constant anyway
    with pytest.raises(OnnxExporterError, match=r"dynamic axis became a Python number.*int\(\) of size"):
        pyframe.onnx.export(IntSize(), (x,), None, input_names=["x"], dynamic_axes={"x": [0]})
    pyframe.onnx.export(Loop(), (x,), None, input_names=["x"], dynamic_axes={"x": [0]})  # the batch may change
    with pytest.raises(OnnxExporterError, match="an index of size.*depends on a dynamic axis"):
        pyframe.onnx.export(Loop(), (x,), None, input_names=["x"], dynamic_axes={"x": [1]})


def test_ported_script_imports_torch_onnx(tmp_path):
    pytest.importorskip("onnxruntime")
    src = as_pyframe(
        "import torch\nimport torch.onnx\n"
        "m = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Softmax(dim=-1)).eval()\n"
        "torch.onnx.export(m, (torch.randn(3, 4),), 'm.onnx', input_names=['x'], dynamic_axes={'x': [0]})\n"
        "import onnxruntime, numpy as np\n"
        "s = onnxruntime.InferenceSession('m.onnx')\n"
        "x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)\n"
        "print(float(np.abs(s.run(None, {'x': x})[0] - m(torch.tensor(x)).detach().numpy()).max()))\n"
    )
    assert "import pyframe.onnx" in src
    out = subprocess.run([sys.executable, "-c", src], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": ":".join(sys.path), "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip().splitlines()[-1]) < 1e-6


def test_subclassed_layers_and_constants(ort):
    import numpy as np

    from tests.onnx._support import export_bytes, run_onnx

    class MyLSTM(nn.LSTM):  # forward is LSTM's: exported whole as LSTM is
        pass

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = MyLSTM(3, 4, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0] * pyframe.tensor([1.0, 2.0, 3.0, 4.0])  # a tensor made in forward: a constant

    m = Net().eval()
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    (y,) = run_onnx(ort, export_bytes(m, (pyframe.tensor(x),), input_names=["x"]), {"x": x})
    np.testing.assert_allclose(y, m(pyframe.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert not [k for k in vars(m) if k.startswith("_tensor_constant")]  # the model is left as it was


def test_verbose_prints_the_graph(capsys):
    pyframe.onnx.export(nn.Linear(2, 3), (pyframe.randn(4, 2),), None, verbose=True)
    assert "Gemm" in capsys.readouterr().out


def test_without_constant_folding(ort):
    import numpy as np

    from tests.onnx import models
    from tests.onnx._support import export_bytes, run_onnx

    m = models.gpt_block(pyframe).eval()
    idx = np.random.default_rng(5).integers(0, 11, (2, 6)).astype(np.int64)
    transposes = {}
    for fold in (True, False):
        data = export_bytes(m, (pyframe.tensor(idx),), input_names=["idx"], do_constant_folding=fold)
        (y,) = run_onnx(ort, data, {"idx": idx})
        np.testing.assert_allclose(y, m(pyframe.tensor(idx)).detach().numpy(), rtol=1e-5, atol=1e-5)
        transposes[fold] = [n.op_type for n in onnx.load_from_string(data).graph.node].count("Transpose")
    assert transposes[False] == transposes[True] + 5  # the five 3-d linears' weights: initializers, or computed
