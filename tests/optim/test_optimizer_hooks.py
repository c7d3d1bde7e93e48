"""The optimizer's hooks: step pre/post hooks per instance and global (torch.optim.optimizer's), and the
state-dict hooks, in torch's order."""

from __future__ import annotations

import pytest

import pyframe
from pyframe.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook


def _sgd():
    lin = pyframe.nn.Linear(2, 1)
    lin(pyframe.ones(1, 2)).sum().backward()
    return lin, pyframe.optim.SGD(lin.parameters(), lr=0.1)


def test_step_hooks_run_in_torchs_order_and_are_removable():
    _, opt = _sgd()
    calls = []
    handles = [
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt, a[0] is opt))),
        opt.register_step_post_hook(lambda o, a, k: calls.append(("post",))),
        register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global pre",))),
        register_optimizer_step_post_hook(lambda o, a, k: calls.append(("global post",))),
    ]
    try:
        opt.step()
    finally:
        for h in handles[2:]:
            h.remove()
    # global pre hooks first, the instance's own next; on the way out the instance's, then the global ones
    assert calls == [("global pre",), ("pre", True, True), ("post",), ("global post",)]
    for h in handles:
        h.remove()
    calls.clear()
    opt.step()
    assert calls == []


def test_a_pre_hook_may_replace_the_arguments():
    lin, opt = _sgd()
    seen = []

    def closure():
        seen.append("closure")
        return pyframe.tensor(1.5)

    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": closure}))
    assert opt.step().item() == 1.5 and seen == ["closure"]
    opt.register_step_pre_hook(lambda o, a, k: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\)"):
        opt.step()


def test_overridden_and_nested_steps_run_the_hooks_once():
    class Twice(pyframe.optim.SGD):
        def step(self, closure=None):  # a subclass that calls its parent's step
            super().step(closure)
            return super().step(closure)

    lin = pyframe.nn.Linear(2, 1)
    lin(pyframe.ones(1, 2)).sum().backward()
    opt = Twice(lin.parameters(), lr=0.1)
    counted = []
    h = register_optimizer_step_post_hook(lambda o, a, k: counted.append(type(o).__name__))
    try:
        opt.step()
        lbfgs = pyframe.optim.LBFGS(lin.parameters(), max_iter=2)
        lbfgs.step(lambda: (lin(pyframe.ones(1, 2)) ** 2).sum())
    finally:
        h.remove()
    assert counted == ["Twice", "LBFGS"]


def test_state_dict_hooks():
    _, opt = _sgd()
    opt.step()
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_pre_hook(lambda o: order.append("pre first"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert order == ["pre first", "pre"] and sd["extra"] == 1
    loaded = []
    opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    opt.register_load_state_dict_post_hook(lambda o: loaded.append(len(o.param_groups)))
    opt.load_state_dict(sd)
    assert loaded == [1]


def test_hooks_are_not_pickled_as_in_torch():
    import pickle

    _, opt = _sgd()
    opt.register_step_post_hook(lambda o, a, k: None)
    clone = pickle.loads(pickle.dumps(opt))
    assert clone._optimizer_step_post_hooks == {} and clone.state_dict()["param_groups"][0]["lr"] == 0.1


def test_torch_runs_the_same_hooks_in_the_same_order():
    torch = pytest.importorskip("torch")
    from torch.optim.optimizer import register_optimizer_step_post_hook as post
    from torch.optim.optimizer import register_optimizer_step_pre_hook as pre

    calls = []
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    opt = torch.optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    h1 = pre(lambda o, a, k: calls.append("global pre"))
    h2 = post(lambda o, a, k: calls.append("global post"))
    try:
        opt.step()
    finally:
        h1.remove()
        h2.remove()
    assert calls == ["global pre", "pre", "post", "global post"]
