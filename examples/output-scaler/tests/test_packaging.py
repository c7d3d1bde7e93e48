import pyframe_output_scaler as plugin

import pyframe.plugins.testing


class TestPackaging(pyframe.plugins.testing.PackagingTests):
    plugin, name, defaults = plugin, "output-scaler", {"factor": 1.0, "modules": []}
