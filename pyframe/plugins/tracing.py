"""What each plugin did, and what it cost: ``pyframe.plugins.trace()`` and ``pyframe.plugins.explain(model)``.

While a trace is on, every plugin implementation of a module hook runs inside a small wrapper that times it and
records what it changed: registrations replaced or blocked (those are recorded even without a trace, for
``explain`` and for error notes, see ``pyframe/_hooks.py``), forward inputs and outputs replaced, gradients replaced
(how many, the largest relative change ``|new - old| / |old|`` in 2-norm, and where), and the exceptions it raised.
With the trace off the registries hold the plugins' own functions: nothing is wrapped, nothing is timed.

Module names are qualified names (``transformer.h.0.attn.c_attn``), resolved when the trace is read, so that a
registration recorded while the model was being built shows the name the module has in the finished tree.
"""

from __future__ import annotations

import json
import time
import weakref
from typing import Any

from pyframe import _hooks

__all__ = ["Trace", "trace", "explain", "Explanation"]


def _label(ref: Any, cls: str) -> str:
    module = ref() if ref is not None else None
    if module is None:
        return f"({cls}, gone)"
    return _hooks.qualified_name(module) or f"({cls})"


class Trace:
    """The recorder ``pyframe.plugins.trace()`` returns; use it as a context manager. Read it (also after the
    block) through ``registrations``, ``forwards``, ``gradients``, ``errors``, ``durations``, ``steps``,
    ``by_plugin()``, ``report()`` and ``to_dict()``."""

    def __init__(self) -> None:
        self._registrations: list[tuple[Any, str, dict]] = []  # (weakref to module, class name, change)
        self._forwards: dict[tuple, list] = {}  # (plugin, what, id(module)) -> [ref, class, count]
        self._gradients: dict[tuple, list] = {}  # (plugin, id(module)) -> [ref, class, count, largest change]
        self._errors: list[dict[str, Any]] = []
        self._seen_errors: set[int] = set()
        self._times: dict[tuple[str, str], list[int]] = {}  # (plugin, hook) -> [nanoseconds, calls]
        self.steps = 0  # optimizer.step() calls while the trace was on
        self.active = False
        self._patched: Any = None

    # ---- on and off ----------------------------------------------------------------------------------------

    def __enter__(self) -> Trace:
        if _hooks._tracer is not None:
            raise RuntimeError("pyframe.plugins.trace(): a trace is already on (traces do not nest)")
        self._count_steps(True)
        _hooks.set_tracer(self)
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stops recording (what leaving the ``with`` block does); the recorded data stays readable."""
        if self.active:
            _hooks.set_tracer(None)
            self._count_steps(False)
            self.active = False

    def _count_steps(self, on: bool) -> None:
        """A step is one ``step()`` call of any optimizer (LBFGS's and other overrides too), seen through the global
        step post hook while the trace is on."""
        from pyframe.optim.optimizer import register_optimizer_step_post_hook

        if on:
            self._patched = register_optimizer_step_post_hook(self._on_step)
        elif self._patched is not None:
            self._patched.remove()
            self._patched = None

    def _on_step(self, optimizer: Any, args: tuple, kwargs: dict) -> None:
        self.steps += 1

    # ---- recording (called by the wrappers and by pyframe._hooks) ------------------------------------------

    def wrap(self, registry: Any, call: Any, src: Any) -> Any:
        """``call`` (a plugin's implementation in ``registry``) inside a timing and recording wrapper."""
        plugin = src.name or src.describe()
        hook = registry.specname.removeprefix("pyframe_module_")
        stat = self._times.setdefault((plugin, hook), [0, 0])
        clock = time.perf_counter_ns
        error = self._error

        def timed(module: Any, *args: Any) -> Any:
            t = clock()
            try:
                return call(module, *args)
            except Exception as e:
                error(plugin, hook, module, e)
                raise
            finally:
                stat[0] += clock() - t
                stat[1] += 1

        if hook in ("parameter_registration", "buffer_registration", "module_registration"):
            wrapped = timed

        elif hook == "forward_pre":

            def wrapped(module: Any, args: tuple, kwargs: dict) -> Any:  # type: ignore[misc]
                out = timed(module, args, kwargs)
                if out is not None:
                    self._forward(plugin, "inputs", module)
                return out

        elif hook == "forward":

            def wrapped(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:  # type: ignore[misc]
                out = timed(module, args, kwargs, output)
                if out is not None and out is not output:
                    self._forward(plugin, "outputs", module)
                return out

        else:  # full_backward_pre (module, grad_output) or full_backward (module, grad_input, grad_output)

            def wrapped(module: Any, *grads: Any) -> Any:  # type: ignore[misc]
                out = timed(module, *grads)
                if out is not None:
                    self._gradient(plugin, module, grads[0], out)
                return out

        wrapped.__wrapped__ = call  # type: ignore[attr-defined]
        return wrapped

    def registration(self, module: Any, change: dict) -> None:
        """Records a registration hook's change of ``module`` (called by pyframe's hook machinery while tracing)."""
        try:
            ref = weakref.ref(module)
        except TypeError:
            ref = None
        self._registrations.append((ref, type(module).__name__, change))

    def _ref(self, module: Any) -> Any:
        try:
            return weakref.ref(module)
        except TypeError:
            return None

    def _forward(self, plugin: str, what: str, module: Any) -> None:
        entry = self._forwards.get((plugin, what, id(module)))
        if entry is None:
            entry = self._forwards[(plugin, what, id(module))] = [self._ref(module), type(module).__name__, 0]
        entry[2] += 1

    def _gradient(self, plugin: str, module: Any, old: Any, new: Any) -> None:
        from pyframe import _grad_mode
        from pyframe.tensor import Tensor

        if not isinstance(old, (tuple, list)) or not isinstance(new, (tuple, list)):
            return
        count, largest = 0, 0.0
        with _grad_mode.no_grad():
            for a, b in zip(old, new, strict=False):
                if a is None or b is None or a is b or not (isinstance(a, Tensor) and isinstance(b, Tensor)):
                    continue
                if a.shape != b.shape or a.numel() == 0:
                    count += a.shape != b.shape
                    continue
                base = float(a.double().norm().item())
                diff = float((b.double() - a.double()).norm().item())
                if diff == 0.0:
                    continue
                count += 1
                rel = diff / base if base > 0 else float("inf")
                largest = max(largest, rel) if rel == rel else largest
        if not count:
            return
        entry = self._gradients.get((plugin, id(module)))
        if entry is None:
            entry = self._gradients[(plugin, id(module))] = [self._ref(module), type(module).__name__, 0, 0.0]
        entry[2] += count
        entry[3] = max(entry[3], largest)

    def _error(self, plugin: str, hook: str, module: Any, exc: BaseException) -> None:
        if id(exc) in self._seen_errors:
            return
        self._seen_errors.add(id(exc))
        label = _hooks.qualified_name(module) or f"({type(module).__name__})"  # now: the module may not outlive it
        self._errors.append({"plugin": plugin, "hook": hook, "module": label, "error": f"{type(exc).__name__}: {exc}"})

    # ---- reading -------------------------------------------------------------------------------------------

    @property
    def registrations(self) -> list[dict[str, Any]]:
        """``[{"plugin", "kind", "name", "action", "old", "new"}]``: every parameter, buffer or submodule a plugin
        replaced, blocked or changed when it was registered; ``name`` is qualified, ``old``/``new`` give dtype,
        shape and requires_grad (None: blocked)."""
        out = []
        for ref, cls, change in self._registrations:
            module = ref() if ref is not None else None
            name = _hooks.qualified_name(module, change["name"]) if module is not None else change["name"]
            out.append({**change, "name": name, "module_class": cls})
        return out

    @property
    def forwards(self) -> list[dict[str, Any]]:
        """``[{"plugin", "what", "module", "count"}]``: forward ``inputs`` or ``outputs`` a plugin replaced."""
        return [
            {"plugin": p, "what": w, "module": _label(ref, cls), "count": n}
            for (p, w, _), (ref, cls, n) in self._forwards.items()
        ]

    @property
    def gradients(self) -> list[dict[str, Any]]:
        """``[{"plugin", "module", "count", "largest_relative_change"}]``: gradient tensors a plugin replaced."""
        return [
            {"plugin": p, "module": _label(ref, cls), "count": n, "largest_relative_change": big}
            for (p, _), (ref, cls, n, big) in self._gradients.items()
        ]

    @property
    def errors(self) -> list[dict[str, Any]]:
        """``[{"plugin", "hook", "module", "error"}]``: exceptions raised inside a plugin's hook."""
        return [dict(e) for e in self._errors]

    @property
    def durations(self) -> dict[str, dict[str, Any]]:
        """``{plugin: {"total": s, "calls": n, "per_step": s or None, "hooks": {hook: {"total", "calls",
        "per_call"}}}}``, time spent inside each plugin's hooks, slowest plugin first (``per_step``: per
        ``optimizer.step()`` seen while tracing, None when there was none)."""
        out: dict[str, dict[str, Any]] = {}
        for (plugin, hook), (ns, calls) in self._times.items():
            if not calls:
                continue
            entry = out.setdefault(plugin, {"total": 0.0, "calls": 0, "per_step": None, "hooks": {}})
            entry["hooks"][hook] = {"total": ns / 1e9, "calls": calls, "per_call": ns / 1e9 / calls}
            entry["total"] += ns / 1e9
            entry["calls"] += calls
        for entry in out.values():
            entry["per_step"] = entry["total"] / self.steps if self.steps else None
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["total"]))

    def by_plugin(self) -> dict[str, dict[str, Any]]:
        """Everything above grouped by plugin name."""
        out: dict[str, dict[str, Any]] = {}

        def slot(p: str) -> dict[str, Any]:
            return out.setdefault(p, {"registrations": [], "forwards": [], "gradients": [], "errors": []})

        for r in self.registrations:
            slot(r["plugin"])["registrations"].append(r)
        for f in self.forwards:
            slot(f["plugin"])["forwards"].append(f)
        for g in self.gradients:
            slot(g["plugin"])["gradients"].append(g)
        for e in self.errors:
            slot(e["plugin"])["errors"].append(e)
        for p, d in self.durations.items():
            slot(p)["durations"] = d
        return out

    def to_dict(self) -> dict[str, Any]:
        """The whole trace as JSON-ready data (what ``pyframe run --trace=FILE`` writes)."""
        return {
            "steps": self.steps,
            "registrations": self.registrations,
            "forwards": self.forwards,
            "gradients": self.gradients,
            "errors": self.errors,
            "durations": self.durations,
        }

    def report(self) -> str:
        """The trace as text, one block per plugin."""
        lines = ["plugin trace:"]
        plugins = self.by_plugin()
        if not plugins:
            return "plugin trace: no plugin changed anything"
        for plugin, d in plugins.items():
            lines.append(f"  {plugin}:")
            for r in d["registrations"]:
                lines.append(f"    {r['kind']} {r['name']}: {_change_text(r)}")
            for f in d["forwards"]:
                lines.append(f"    forward {f['what']} of {f['module']} replaced {f['count']:,} times")
            for g in d["gradients"]:
                lines.append(
                    f"    gradients at {g['module']} replaced {g['count']:,} times, largest relative change "
                    f"{g['largest_relative_change']:.3g}"
                )
            for e in d["errors"]:
                lines.append(f"    raised in {e['hook']} at {e['module']}: {e['error']}")
            dur = d.get("durations")
            if dur:
                per = f", {dur['per_step'] * 1e3:.3f} ms/step" if dur["per_step"] is not None else ""
                lines.append(f"    time in hooks: {dur['total']:.4f} s over {dur['calls']:,} calls{per}")
        return "\n".join(lines)

    def durations_table(self, n: int = 0) -> str:
        """pytest's ``--durations`` table for plugins: the ``n`` slowest (plugin, hook) pairs (0: all)."""
        rows = []
        for plugin, d in self.durations.items():
            for hook, h in d["hooks"].items():
                rows.append((h["total"], h["calls"], plugin, hook))
        rows.sort(reverse=True)
        shown = rows[:n] if n > 0 else rows
        title = f" slowest {n} plugin hook durations " if n > 0 else " plugin hook durations "
        lines = [title.center(72, "=")]
        for total, calls, plugin, hook in shown:
            per_step = f"{total / self.steps * 1e3:9.3f}ms/step" if self.steps else " " * 16
            lines.append(f"{total:9.4f}s total {per_step} {calls:>10,} calls  {plugin}  {hook}")
        if not rows:
            lines.append("(no plugin hook ran)")
        steps = f"{self.steps:,} optimizer steps" if self.steps else "no optimizer step"
        hidden = f"; {len(rows) - len(shown)} faster entries hidden" if len(shown) < len(rows) else ""
        lines.append(f"({steps}{hidden})")
        return "\n".join(lines)

    def write(self, path: str) -> None:
        """Writes ``to_dict()`` as JSON to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, default=str)


def _change_text(change: dict) -> str:
    old, new, action = change["old"], change["new"], change["action"]
    if action == "blocked":
        return "blocked (registered as None)"

    def desc(v: Any) -> str:
        if v is None:
            return "None"
        if "dtype" in v:
            return f"{v['dtype']} {tuple(v['shape'])} requires_grad={v['requires_grad']}"
        return ", ".join(f"{k}={val}" for k, val in v.items())

    if isinstance(old, dict) and isinstance(new, dict) and "dtype" in old and "dtype" in new:
        diffs = [f"{k} {old[k]} -> {new[k]}" for k in ("dtype", "shape", "requires_grad") if old[k] != new[k]]
        return f"{action}: " + (", ".join(diffs) if diffs else "same dtype, shape and requires_grad")
    return f"{action}: {desc(old)} -> {desc(new)}"


def trace() -> Trace:
    """``with pyframe.plugins.trace() as t: ...``: records what each plugin does inside the block (see
    ``Trace``); afterwards ``t.report()``, ``t.durations``, ``t.registrations`` ... Also ``pyframe run --trace``."""
    return Trace()


class Explanation(dict):
    """``{qualified name: [change, ...]}`` for every parameter and buffer of a model (an empty list: no plugin
    touched it); ``str()`` lists the touched ones."""

    def __str__(self) -> str:
        touched = {k: v for k, v in self.items() if v}
        lines = [f"{k}: " + "; ".join(f"{c['plugin']} {_change_text(c)}" for c in v) for k, v in touched.items()]
        lines.append(f"({len(self) - len(touched)} of {len(self)} parameters and buffers untouched by plugins)")
        return "\n".join(lines)


def explain(model: Any) -> Explanation:
    """Which plugin touched each parameter and buffer of ``model``, and how: an ``Explanation`` mapping every
    qualified name to the changes plugins made when it was registered (replaced: old and new dtype, shape,
    requires_grad; blocked; adapted ...). Recorded whether or not a trace was on."""
    out = Explanation()
    for prefix, module in model.named_modules(remove_duplicate=False):
        changes = _hooks.changes_of(module)
        names = [*module._parameters, *module._buffers]
        names += [n for n, cs in changes.items() if n not in names and cs[0]["kind"] != "module"]
        for name in names:
            key = f"{prefix}.{name}" if prefix else name
            if key not in out:
                out[key] = list(changes.get(name, []))
    return out
