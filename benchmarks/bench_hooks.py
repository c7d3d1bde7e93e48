"""Cost of the global hook machinery, pyframe vs torch side by side (torch's column is left out
when it is not installed).

Targets (API.md "Plugins"): with no hook at all, a ``Linear(4, 4)`` call under no_grad within 5%
of the same call with the hook machinery removed (``Module.__call__`` replaced by a direct call
of ``forward``); one global no-op forward hook adds no more than it adds in torch.

An idle plugin (installed, not configured: ``declare(active=...)`` false) must match "no hooks".

Plugins and their trace (``pyframe.plugins.trace()``): the same call with one plugin's no-op
``pyframe_module_forward`` (the hooked call every installed plugin puts on a model), with the trace
off and on; the difference is the trace's cost per hook call. With the trace off the registries hold
the plugin's own function, so that row must match the same row measured on the code before the trace
existed: ``python benchmarks/bench_hooks.py --json`` prints the pyframe rows as JSON for such a
comparison (run the two trees alternately, several processes each, and compare medians).
"""

import json
import sys

from _harness import best_time, table, torch

import pyframe as pf
import pyframe.nn as nn

MIN_TIME = 0.1
ROUNDS = 7  # every case is timed once per round, the cases interleaved; the best round counts


def _cases(lib, register_fwd, register_pre) -> dict:
    """case name -> (enter, exit): the state a Linear(4, 4) call is timed in."""
    Module = lib.nn.Module
    original = Module.__call__
    state = {}

    def direct():
        Module.__call__ = lambda self, *a, **k: self.forward(*a, **k)

    def restore():
        Module.__call__ = original

    def add(register, hook):
        return lambda: state.__setitem__("h", register(hook))

    def remove():
        state.pop("h").remove()

    return {
        "no hooks": (lambda: None, lambda: None),
        "machinery removed": (direct, restore),
        "one global forward hook": (add(register_fwd, lambda m, args, output: None), remove),
        "one global forward pre-hook": (add(register_pre, lambda m, args: None), remove),
    }


def _measure(lib, no_grad, cases) -> dict:
    lin, x = lib.nn.Linear(4, 4), lib.randn(1, 4)
    best = dict.fromkeys(cases, float("inf"))
    with no_grad():
        for _ in range(ROUNDS):
            for case, (enter, leave) in cases.items():
                enter()
                try:
                    best[case] = min(best[case], best_time(lambda: lin(x), min_time=MIN_TIME) * 1e6)
                finally:
                    leave()
    return best


class _NoOpPlugin:
    """A plugin whose forward hook changes nothing: the hooked call every installed plugin puts on a model."""

    @pf.hookimpl
    def pyframe_module_forward(self, module, args, kwargs, output):
        return None


class _IdlePlugin(_NoOpPlugin):
    """Installed but not configured (``declare(active=...)`` false, as lora with no targets): its hooks, the
    forward hook and ``pyframe_model_ready`` included, must cost nothing."""

    @pf.hookimpl
    def pyframe_declare_settings(self):
        return pf.plugins.declare(active=lambda s: bool(s["targets"]), targets=pf.plugins.Setting(list[str], []))

    @pf.hookimpl
    def pyframe_model_ready(self, model):
        return None


def _plugin_cases() -> dict:
    state = {}

    def idle():
        state["h"] = pf.plugins.register(_IdlePlugin(), name="bench-idle")

    def add(trace: bool):
        def enter():
            state["h"] = pf.plugins.register(_NoOpPlugin(), name="bench-noop")
            if trace:
                state["t"] = pf.plugins.trace()
                state["t"].__enter__()

        return enter

    def leave():
        if "t" in state:
            state.pop("t").stop()
        state.pop("h").remove()

    cases = {"one plugin forward hook": (add(False), leave)}
    if hasattr(pf.plugins, "declare"):
        cases["one idle plugin (not configured)"] = (idle, leave)
    if hasattr(pf.plugins, "trace"):
        cases["one plugin forward hook, trace on"] = (add(True), leave)
    return cases


def pyframe_times() -> dict:
    cases = _cases(pf, nn.register_module_forward_hook, nn.register_module_forward_pre_hook)
    cases.update(_plugin_cases())
    return _measure(pf, pf.no_grad, cases)


def torch_times() -> dict:
    from torch.nn.modules import module as tmod

    cases = _cases(torch, tmod.register_module_forward_hook, tmod.register_module_forward_pre_hook)
    return _measure(torch, torch.no_grad, cases)


def main() -> None:
    if "--json" in sys.argv:
        print(json.dumps(pyframe_times()))
        return
    p = pyframe_times()
    t = torch_times() if torch is not None else {}
    rows = []
    for case in p:
        r = {"pyframe": p[case]}
        if case in t:
            r["torch"] = t[case]
        rows.append((case, r))
    for case in ("one global forward hook", "one global forward pre-hook"):
        r = {"pyframe": p[case] - p["no hooks"]}
        if t:
            r["torch"] = t[case] - t["no hooks"]
        rows.append((f"added: {case.removeprefix('one global ')}", r))
    table("Linear(4, 4) call under no_grad (lower is better)", "us", rows, False)
    overhead = p["no hooks"] / p["machinery removed"] - 1
    print(f"\npyframe no-hook fast path vs machinery removed: {overhead:+.1%} (target: within 5%)")
    on = p.get("one plugin forward hook, trace on")
    if on is not None:
        per_hook = on - p["one plugin forward hook"]
        print(f"trace on: {per_hook:+.2f} us per plugin hook call (timing and recording; off: nothing is wrapped)")


if __name__ == "__main__":
    main()
