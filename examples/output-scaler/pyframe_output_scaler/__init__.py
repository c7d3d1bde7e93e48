"""pyframe-output-scaler: multiplies every module's output by `factor`."""

import pluggy

# The same marker as pyframe.hookimpl (pluggy markers are keyed by the project name "pyframe"). Building it here
# instead of `import pyframe` at the top keeps `import pyframe_output_scaler` safe before `import pyframe`.
hookimpl = pluggy.HookimplMarker("pyframe")

_state = {"factor": 1.0, "modules": []}


@hookimpl
def pyframe_declare_settings():
    from pyframe.plugins import Setting, declare

    return declare(  # a dict of settings, and whether they change numerics (for checkpoint loads)
        changes_numerics=lambda settings: settings["factor"] != 1.0,
        factor=Setting(float, 1.0, help="what every output is multiplied by; 1.0 (the default) changes nothing"),
        modules=Setting(list[str], [], help="class names to scale; empty means every module"),
    )


@hookimpl
def pyframe_configure(settings):
    _state.update(settings)  # a read-only mapping of every declared key, validated, defaults filled in


@hookimpl
def pyframe_unconfigure():
    _state.update(factor=1.0, modules=[])


@hookimpl
def pyframe_module_forward(module, output):  # any subset of the spec's arguments (module, args, kwargs, output)
    if _state["modules"] and type(module).__name__ not in _state["modules"]:
        return None  # None keeps the output
    return output * _state["factor"]  # a value replaces it
