"""einops on pyframe tensors (pyframe/_einops.py): every einops operation against the same operation on NumPy
arrays, gradients through a rearrange, and the hook's promise that pyframe does not import einops itself."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import pyframe as pf

einops = pytest.importorskip("einops")

X = np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(np.float32)

PATTERNS = [
    ("rearrange", "b c h w -> b (h w) c", {}),
    ("rearrange", "b c (h h2) (w w2) -> (b h2 w2) c h w", {"h2": 2, "w2": 3}),
    ("rearrange", "b c h w -> w h c b", {}),
    ("rearrange", "b ... w -> b w ...", {}),
    ("reduce", "b c (h h2) (w w2) -> b c h w", {"reduction": "max", "h2": 2, "w2": 2}),
    ("reduce", "b c h w -> b c", {"reduction": "mean"}),
    ("reduce", "b c h w -> c", {"reduction": "sum"}),
    ("reduce", "b c h w -> b 1 1 w", {"reduction": "min"}),
    ("reduce", "b c h w -> b h", {"reduction": "prod"}),
    ("repeat", "b c h w -> b c h w r", {"r": 2}),
    ("repeat", "b c h w -> (b r) c h w", {"r": 3}),
    ("repeat", "b c h w -> b c (h h2) w", {"h2": 2}),
]


@pytest.mark.parametrize(("op", "pattern", "kw"), PATTERNS, ids=[f"{op}:{p}" for op, p, _ in PATTERNS])
def test_operation_matches_numpy(op, pattern, kw):
    fn = getattr(einops, op)
    kw = dict(kw)
    args = (kw.pop("reduction"),) if op == "reduce" else ()
    got = fn(pf.tensor(X), pattern, *args, **kw)
    want = fn(X, pattern, *args, **kw)
    assert isinstance(got, pf.Tensor)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


def test_boolean_reductions_match_numpy():
    for reduction in ("any", "all"):
        got = einops.reduce(pf.tensor(X > 0), "b c h w -> b w", reduction)
        np.testing.assert_array_equal(got.numpy(), einops.reduce(X > 0, "b c h w -> b w", reduction))


def test_pack_unpack_and_einsum():
    x, y = pf.tensor(X), pf.tensor(X[:, :, :1])
    packed, shapes = einops.pack([x, y], "b c * w")
    assert tuple(packed.shape) == (2, 3, 5, 6)
    a, b = einops.unpack(packed, shapes, "b c * w")
    np.testing.assert_array_equal(a.numpy(), X)
    np.testing.assert_array_equal(b.numpy(), X[:, :, :1])
    got = einops.einsum(x, x, "b c h w, b c h w -> b c")
    np.testing.assert_allclose(got.numpy(), np.einsum("bchw,bchw->bc", X, X), rtol=1e-5)


def test_gradient_flows_through_rearrange():
    x = pf.tensor(X, requires_grad=True)
    y = einops.rearrange(x, "b c h w -> b (h w) c")
    (y * pf.arange(3.0)).sum().backward()
    want = np.broadcast_to(np.arange(3.0, dtype=np.float32)[None, :, None, None], X.shape)
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_unknown_tensor_type_still_refused():
    with pytest.raises(RuntimeError, match="unknown to einops"):
        einops.rearrange(object(), "a -> a")


@pytest.mark.parametrize("order", ["pyframe first", "einops first"])
def test_either_import_order(order):
    first, second = ("pyframe", "einops") if order == "pyframe first" else ("einops", "pyframe")
    code = (
        f"import {first}, {second}\n"
        "import pyframe as torch\n"
        "from einops import rearrange\n"
        "print(tuple(rearrange(torch.ones(2, 3), 'a b -> b a').shape))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(3, 2)"


def test_pyframe_does_not_import_einops():
    code = "import sys, pyframe; print('einops' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


LAYERS_PROGRAM = """
import io, sys
import numpy as np
import pyframe as torch
from pyframe import nn
from einops.layers.torch import EinMix, Rearrange, Reduce

assert "torch" not in sys.modules
patch = nn.Sequential(Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2), nn.Linear(12, 8))
x = torch.randn(2, 3, 4, 6, requires_grad=True)
y = patch(x)
assert tuple(y.shape) == (2, 6, 8) and repr(patch[0]).startswith("Rearrange('b c (h p1)")
mix = EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d", c=8, d=5)
z = Reduce("b t d -> b d", "max")(mix(y))
z.sum().backward()
assert tuple(z.shape) == (2, 5) and sorted(n for n, _ in mix.named_parameters()) == ["bias", "weight"]
assert x.grad is not None and mix.weight.grad is not None
want = np.einsum("btc,cd->btd", y.detach().numpy(), mix.weight.detach().numpy()) + mix.bias.detach().numpy()
np.testing.assert_allclose(mix(y).detach().numpy(), want, rtol=1e-5, atol=1e-6)
buf = io.BytesIO()
torch.save(patch, buf)
buf.seek(0)
np.testing.assert_array_equal(torch.load(buf, weights_only=False)(x).detach().numpy(), y.detach().numpy())
print("ok")
"""


def test_einops_layers_are_pyframe_modules_without_torch():
    # einops.layers.torch subclasses torch's Module: pyframe serves einops' own mixins on its Module instead, while
    # torch itself is not imported (this process imports torch as the oracle: the program runs in a child)
    proc = subprocess.run([sys.executable, "-c", LAYERS_PROGRAM], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
