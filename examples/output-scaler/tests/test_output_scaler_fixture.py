import pyframe_output_scaler as plugin

import pyframe
import pyframe.plugins.testing

active = pyframe.plugins.testing.activated_fixture(plugin, "output-scaler", factor=2.0)


def test_triples_when_told(active):
    pyframe.plugins.configure("output-scaler", factor=3.0)  # undone when the test ends
    m = pyframe.nn.Linear(2, 2)
    with pyframe.plugins.disabled("output-scaler"):
        plain = m(pyframe.ones(1, 2))
    assert m(pyframe.ones(1, 2)).tolist() == (plain * 3.0).tolist()
