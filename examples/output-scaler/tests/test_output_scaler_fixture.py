import pyframe_output_scaler as plugin
import pytest

import pyframe


@pytest.fixture
def active():
    with pyframe.plugins.activated(plugin, "output-scaler", factor=2.0):
        yield plugin


def test_triples_when_told(active):
    pyframe.plugins.configure("output-scaler", factor=3.0)  # undone when the fixture's block ends
    m = pyframe.nn.Linear(2, 2)
    with pyframe.plugins.disabled("output-scaler"):
        plain = m(pyframe.ones(1, 2))
    assert m(pyframe.ones(1, 2)).tolist() == (plain * 3.0).tolist()
