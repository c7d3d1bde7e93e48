"""Cost of the global hook machinery, pyframe vs torch side by side (torch's column is left out
when it is not installed).

Targets (API.md "Plugins"): with no hook at all, a ``Linear(4, 4)`` call under no_grad within 5%
of the same call with the hook machinery removed (``Module.__call__`` replaced by a direct call
of ``forward``); one global no-op forward hook adds no more than it adds in torch.
"""

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


def pyframe_times() -> dict:
    cases = _cases(pf, nn.register_module_forward_hook, nn.register_module_forward_pre_hook)
    return _measure(pf, pf.no_grad, cases)


def torch_times() -> dict:
    from torch.nn.modules import module as tmod

    cases = _cases(torch, tmod.register_module_forward_hook, tmod.register_module_forward_pre_hook)
    return _measure(torch, torch.no_grad, cases)


def main() -> None:
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


if __name__ == "__main__":
    main()
