import pyframe_output_scaler

import pyframe
import pyframe.plugins.testing


def test_scales_output():
    with pyframe.plugins.testing.activated(pyframe_output_scaler, "output-scaler", factor=3.0):
        m = pyframe.nn.Linear(2, 2)
        with pyframe.plugins.disabled("output-scaler"):
            plain = m(pyframe.ones(1, 2))
        assert m(pyframe.ones(1, 2)).tolist() == (plain * 3.0).tolist()
