"""Helpers for testing pyframe plugins, as pytest's ``pytester`` is for pytest plugins (public API, see
``docs/plugin-authoring.md``).

- ``activated(plugin, name=None, *, exclusive=True, **settings)``: the plugin active inside a block, whatever the
  machine's configuration says, and pyframe's plugin state exactly as before afterwards.
- ``activated_fixture(plugin, name=None, **settings)``: the same as a pytest fixture.
- ``unconfigured_fixture(plugin)``: an autouse fixture that resets the plugin to its defaults around every test.
- ``PackagingTests``: a test class to subclass in a plugin's tests; it checks what every plugin distribution has to
  get right (entry point, declared settings, importing the plugin before pyframe).
- ``entry_point(name)``: the installed entry point of group ``pyframe`` called ``name``, or None.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pyframe.plugins as _plugins
from pyframe.plugins.manager import ENTRY_POINT_GROUP
from pyframe.plugins.settings import Setting

__all__ = ["activated", "activated_fixture", "unconfigured_fixture", "PackagingTests", "entry_point"]


def activated(plugin: Any, name: str | None = None, *, exclusive: bool = True, **settings: Any) -> Any:
    """``with activated(my_plugin, "my-plugin", level=2): ...``: the plugin active inside the block, and pyframe's
    plugin state exactly as before afterwards. The same as ``pyframe.plugins.activated`` (see there)."""
    return _plugins.activated(plugin, name, exclusive=exclusive, **settings)


def activated_fixture(plugin: Any, name: str | None = None, *, exclusive: bool = True, **settings: Any) -> Any:
    """A pytest fixture that runs each test requesting it inside ``activated(plugin, name, ...)`` and gives it the
    plugin object. In a plugin's tests: ``active = pyframe.plugins.testing.activated_fixture(my_plugin, "my-plugin")``
    (the fixture is named after the variable), then ``def test_x(active): ...``."""
    import pytest

    @pytest.fixture
    def fixture() -> Iterator[Any]:
        with activated(plugin, name, exclusive=exclusive, **settings) as obj:
            yield obj

    return fixture


def unconfigured_fixture(plugin: Any) -> Any:
    """An autouse pytest fixture that calls ``plugin.pyframe_unconfigure()`` before and after every test, so each
    test starts from the plugin's defaults. In a plugin's tests: ``_defaults = unconfigured_fixture(my_plugin)``."""
    import pytest

    @pytest.fixture(autouse=True)
    def fixture() -> Iterator[None]:
        plugin.pyframe_unconfigure()
        yield
        plugin.pyframe_unconfigure()

    return fixture


def entry_point(name: str) -> importlib.metadata.EntryPoint | None:
    """The installed entry point of group ``pyframe`` called ``name``, or None when no distribution provides it."""
    return next((ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name), None)


class PackagingTests:
    """What every plugin distribution has to get right, as pytest tests. In the plugin's tests::

        class TestPackaging(pyframe.plugins.testing.PackagingTests):
            plugin = my_plugin  # the plugin object: the module the entry point names
            name = "my-plugin"  # its entry-point name
            defaults = {"level": 1}  # optional: the declared settings' defaults, checked against the declaration

    The checks that need the distribution installed (the entry point, importing the plugin before pyframe) skip
    when it is not."""

    plugin: Any = None
    name: str = ""
    defaults: Mapping[str, Any] | None = None

    def _installed(self) -> importlib.metadata.EntryPoint:
        ep = entry_point(self.name)
        if ep is None:
            import pytest

            pytest.skip(f"the distribution providing {self.name!r} is not installed")
        return ep

    def _declared(self) -> dict[str, Any]:
        declare = getattr(self.plugin, "pyframe_declare_settings", None)
        return declare() if declare is not None else {}

    def test_entry_point_names_the_module(self) -> None:
        """The installed ``pyframe`` entry point names the plugin's module, and loading it gives that module."""
        ep = self._installed()
        assert ep.value == self.plugin.__name__
        assert ep.load() is self.plugin

    def test_declared_settings_match_defaults(self) -> None:
        """Every declared setting is a ``Setting``, and their defaults are ``defaults`` (when the class sets it)."""
        declared = self._declared()
        assert all(isinstance(s, Setting) for s in declared.values()), declared
        if self.defaults is not None:
            assert {k: s.default for k, s in declared.items()} == dict(self.defaults)

    def test_importing_the_plugin_before_pyframe_is_safe(self) -> None:
        """``import <plugin>`` first, then pyframe's entry-point autoload: the plugin is complete when loaded."""
        self._installed()
        code = (
            f"import {self.plugin.__name__}\nimport pyframe.plugins as P\nprint(sorted(P.get({self.name!r}).settings))"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
        env["PYFRAME_PLUGINS"] = self.name
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == repr(sorted(self._declared()))
