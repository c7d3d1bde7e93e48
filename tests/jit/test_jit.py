"""pyframe.jit: code written for TorchScript runs eagerly with the same results, as torch's with PYTORCH_JIT=0."""

from __future__ import annotations

from typing import Optional  # noqa: UP035 - the spellings TorchScript code uses

import pytest

import pyframe as pf
from pyframe import jit, nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    @jit.export
    def doubled(self, x):
        return x * 2

    @jit.ignore
    def shifted(self, x):
        return x + 1

    @jit.unused
    def unused(self, x):
        return x - 1

    @jit.ignore(drop=False)
    def kept(self, x):
        return x

    def forward(self, x):
        if jit.is_scripting() or jit.is_tracing():
            return x
        return self.shifted(self.lin(x))


def test_script_and_trace_return_what_they_are_given():
    net = Net()
    x = pf.ones(1, 2)
    with pytest.warns(DeprecationWarning):
        scripted = jit.script(net)
    with pytest.warns(DeprecationWarning):
        traced = jit.trace(net, (x,))
    assert scripted is net and traced is net
    assert pf.equal(scripted(x), net.lin(x) + 1)
    assert pf.equal(net.doubled(x), x * 2) and pf.equal(net.unused(x), x - 1) and pf.equal(net.kept(x), x)

    with pytest.warns(DeprecationWarning):

        @jit.script
        def f(x: pf.Tensor, n: int) -> pf.Tensor:
            return x * n

    assert pf.equal(f(x, 3), x * 3)
    with pytest.raises(RuntimeError, match="must be a bool or a function"):
        jit.ignore(3)


def test_script_module_subclasses_are_modules():
    with pytest.warns(DeprecationWarning):

        class Scaled(jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(pf.full((2,), 3.0))

            @jit.script_method
            def forward(self, x):
                return x * self.w

    m = Scaled()
    assert isinstance(m, nn.Module) and m(pf.ones(2)).tolist() == [3.0, 3.0]
    assert list(m.state_dict()) == ["w"]


def test_helpers():
    assert jit.annotate(list[int], []) == [] and jit.Attribute(3, int) == 3
    assert jit.isinstance([1, 2], list[int]) and not jit.isinstance([1, "a"], list[int])
    assert jit.isinstance({"a": pf.ones(1)}, dict[str, pf.Tensor]) and jit.isinstance(None, Optional[pf.Tensor])  # noqa: UP045 - the spelling TorchScript code uses
    fut = jit.fork(lambda a, b: a + b, 1, b=2)
    assert jit.wait(fut) == 3
    assert not isinstance(lambda: 0, jit.ScriptFunction)


def test_archives_refuse_and_name_the_alternative(tmp_path):
    with pytest.raises(RuntimeError, match=r"pyframe.save\(model.state_dict\(\), path\)"):
        jit.save(Net(), tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match="load_state_dict"):
        jit.load(tmp_path / "m.pt")
