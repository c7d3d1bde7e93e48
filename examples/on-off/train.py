"""Plugins switched on and off with no code change: run this from examples/on-off/ (its pyframe.toml configures the
example plugin examples/output-scaler), then again with the environment saying otherwise:

    pip install ./examples/output-scaler                  # once; or name the module: see the last line
    cd examples/on-off && python train.py                 # output-scaler active, factor 0.5 from pyframe.toml
    PYFRAME_DISABLE_PLUGINS=output-scaler python train.py # off for this run
    PYFRAME_DISABLE_PLUGIN_AUTOLOAD=1 python train.py     # no installed plugin loads
    PYFRAME_PLUGINS=pyframe_output_scaler python train.py # not installed, only importable: named outright (as
                                                          # pytest's -p), with PYTHONPATH=../output-scaler
"""

import json

import pyframe

print(pyframe.plugins.report_header())
layer = pyframe.nn.Linear(2, 2)
with pyframe.no_grad():
    layer.weight.fill_(1.0)
    layer.bias.fill_(0.0)
out = layer(pyframe.ones(1, 2)).tolist()[0]  # [2.0, 2.0] with no plugin
print(json.dumps({"output": out, "active": [p.name for p in pyframe.plugins.list() if p.enabled]}))
