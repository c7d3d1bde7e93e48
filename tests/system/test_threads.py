"""Results do not depend on the thread count: one thread and two give identical bits. Kernels split work by the
team OpenMP grants, not the count asked for: with OMP_THREAD_LIMIT=1 or OMP_DYNAMIC=true, asking for 4 threads
can yield a team of 1 or 2, and every parallel kernel must still compute each element exactly once (OpenMP reads
those variables when it starts, so each case runs in a fresh interpreter that compares a 4-thread request against
a 1-thread run and against float64 NumPy)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pyframe
from tests._helpers import npy

N = 1_000_000


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(99)
    return {
        "x": pyframe.tensor(rng.standard_normal(N).astype(np.float32)),
        "y": pyframe.tensor(rng.standard_normal(N).astype(np.float32)),
        "m": pyframe.tensor(rng.standard_normal((1000, 1000)).astype(np.float32)),
        "d": pyframe.tensor(rng.standard_normal((1000, 1000))),
        "h": pyframe.tensor(rng.standard_normal(N).astype(np.float16)),
        "i": pyframe.tensor(rng.integers(-100, 100, N)),
        "i32": pyframe.tensor(rng.integers(-100, 100, N).astype(np.int32)),
    }


OPS = {
    # elementwise
    "exp": lambda d: d["x"].exp(),
    "tanh": lambda d: d["x"].tanh(),
    "sigmoid": lambda d: pyframe.sigmoid(d["m"]),
    "log_abs": lambda d: d["x"].abs().log(),
    "add": lambda d: d["x"] + d["y"],
    "mul_broadcast": lambda d: d["m"] * d["m"][0],
    "div_strided": lambda d: d["m"][:, ::2] / (d["m"][:, 1::2].abs() + 1),
    "maximum_T": lambda d: pyframe.maximum(d["m"], d["m"].T),
    "pow": lambda d: d["x"].abs() ** 1.5,
    "compare": lambda d: d["x"] < d["y"],
    "where": lambda d: pyframe.where(d["x"] > 0, d["x"], d["y"]),
    "cast": lambda d: d["x"].to(pyframe.float16),
    "contiguous_T": lambda d: d["m"].T.contiguous(),
    "clamp": lambda d: d["x"].clamp(-0.5, 0.5),
    "half_exp": lambda d: d["h"].exp(),
    "int_mul": lambda d: d["i"] * d["i"] + 3,
    "int_floordiv": lambda d: d["i32"] // 7,
    "triu": lambda d: d["m"].triu(3),
    "masked_fill": lambda d: d["m"].masked_fill(d["m"] > 1, 0.0),
    "index": lambda d: d["m"][[5, 900, 2], ::3],
    # reductions
    "sum": lambda d: d["x"].sum(),
    "sum_f64": lambda d: d["d"].sum(),
    "sum_half": lambda d: d["h"].sum(),
    "sum_int": lambda d: d["i"].sum(),
    "sum_dim0": lambda d: d["m"].sum(0),
    "sum_dim1": lambda d: d["m"].sum(1),
    "sum_T": lambda d: d["m"].T.sum(1),
    "mean": lambda d: d["x"].mean(),
    "var": lambda d: d["x"].var(),
    "std_dim": lambda d: d["d"].std(0),
    "prod": lambda d: (d["x"].abs() * 0.001 + 1).prod(),
    "max": lambda d: d["x"].max(),
    "max_dim": lambda d: d["m"].max(1).values,
    "argmax": lambda d: d["x"].argmax(),
    "argmin_dim": lambda d: d["m"].argmin(0),
    "amax_tuple": lambda d: d["d"].amax((0, 1)),
    "norm": lambda d: d["x"].norm(),
    "any": lambda d: (d["x"] > 4.5).any(),
    "all_dim": lambda d: (d["m"] > -4).all(1),
    "logsumexp": lambda d: pyframe.logsumexp(d["m"], 1),
    "softmax_last": lambda d: d["m"].softmax(-1),
    "softmax_first": lambda d: d["m"].softmax(0),
    "log_softmax": lambda d: d["d"].log_softmax(1),
}


@pytest.mark.parametrize("name", list(OPS))
def test_one_and_two_threads_agree(name, data, restore_threads):
    pyframe.set_num_threads(1)
    assert pyframe.get_num_threads() == 1
    one = npy(OPS[name](data))
    pyframe.set_num_threads(2)
    assert pyframe.get_num_threads() == 2
    two = npy(OPS[name](data))
    np.testing.assert_array_equal(one, two)


def test_reductions_are_accurate_at_this_size(data):
    x = npy(data["x"]).astype(np.float64)
    np.testing.assert_allclose(data["x"].sum().item(), x.sum(), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(data["x"].var().item(), x.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(npy(data["m"].sum(0)), npy(data["m"]).astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)
    assert data["i"].sum().item() == int(npy(data["i"]).sum())


def test_set_num_threads_round_trip(restore_threads):
    pyframe.set_num_threads(1)
    assert pyframe.get_num_threads() == 1
    pyframe.set_num_threads(3)
    assert pyframe.get_num_threads() == 3
    with pytest.raises(ValueError, match="at most 1024"):  # not a MemoryError in the next matmul
        pyframe.set_num_threads(10**6)
    assert pyframe.get_num_threads() == 3


CHILD = r"""
import numpy as np
import pyframe
import pyframe.nn.functional as F

rng = np.random.default_rng(5)
t = lambda *s: pyframe.tensor(rng.standard_normal(s).astype(np.float32))
a, b = t(300, 200), t(200, 250)
v, w = t(1, 2000), t(2000, 300)
ba, bb = t(8, 64, 96), t(8, 96, 80)
x, k = t(16, 3, 32, 32), t(8, 3, 3, 3)
big = t(1000, 700)
cases = {
    "matmul": lambda: a @ b,
    "matmul_T": lambda: b.T @ a.T,
    "gemv": lambda: v @ w,
    "gemv_col": lambda: w.T @ v.T,
    "bmm": lambda: ba @ bb,
    "conv2d": lambda: F.conv2d(x, k, padding=1),
    "max_pool2d": lambda: F.max_pool2d(x, 2),
    "sum": lambda: big.sum(),
    "sum0": lambda: big.sum(0),
    "sum1": lambda: big.sum(1),
    "softmax": lambda: big.softmax(-1),
    "exp": lambda: big.exp(),
    "add": lambda: big + big,
}


def backward(fn, *leaves):
    # the gradients of sum(fn(*leaves) * probe): the backward kernels run in parallel too
    ls = [leaf.detach().requires_grad_() for leaf in leaves]
    out = fn(*ls)
    probe = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * pyframe.tensor(probe)).sum().backward()
    return np.concatenate([leaf.grad.numpy().ravel() for leaf in ls])


def opt_step(name):
    # three steps of an optimizer over one large parameter (its C kernel runs in parallel)
    p = pyframe.nn.Parameter(pyframe.tensor(np.linspace(-1, 1, 300_000, dtype=np.float32)))
    opt = getattr(pyframe.optim, name)([p], lr=0.01, **({"momentum": 0.9} if name == "SGD" else {}))
    for i in range(3):
        p.grad = pyframe.tensor(np.cos(np.arange(300_000, dtype=np.float32) * (i + 1)))
        opt.step()
    return p.detach()


rows = pyframe.arange(0, 1000).remainder(7)
x16, k16 = t(3, 16, 20, 20), t(24, 16, 3, 3)
probs = big.abs() + 0.01
sa, sb = t(64, 24, 24) + 10 * pyframe.eye(24), t(64, 24, 3)
spm, dn = (big * (big.abs() > 1.5)).to_sparse(), t(700, 64)
x5, k5, grid, lps = t(2, 3, 8, 16, 16), t(4, 3, 3, 3, 3), t(16, 20, 20, 2) * 0.6, t(50, 16, 6)
targets = pyframe.arange(0, 160).remainder(5).add(1).reshape(16, 10)
samples = t(16, 3, 2).abs().remainder(1.0)
# One case, at least, per C file with a parallel region: each must give the same bits
# whatever team OpenMP grants (the random streams included: they are counter-based).
cases.update({
    "index_select": lambda: big.index_select(0, rows),
    "gather": lambda: big.gather(1, rows.remainder(5).reshape(1000, 1).expand(1000, 300).contiguous()),
    "nonzero": lambda: (big > 0.5).nonzero(),
    "count_nonzero": lambda: pyframe.count_nonzero(big > 0.5),
    "embedding_bwd": lambda: backward(lambda wt: F.embedding(rows, wt), big),
    "scatter_add": lambda: pyframe.zeros(7, 700).scatter_add(0, rows.reshape(1000, 1).expand(1000, 700), big),
    "gather_rows": lambda: pyframe.utils.data.TensorDataset(big).collated_batch(rows)[0],
    "conv2d_bwd": lambda: backward(lambda xx, kk: F.conv2d(xx, kk, padding=1), x, k),
    # 16 channels: the input gradient by the direct kernels, the unfold transposed; stride 2
    "conv2d_bwd_wide": lambda: backward(lambda xx, kk: F.conv2d(xx, kk, padding=1), x16, k16),
    "conv2d_s2_bwd": lambda: backward(lambda xx, kk: F.conv2d(xx, kk, stride=2, padding=1), x16, k16),
    "max_pool2d_bwd": lambda: backward(lambda xx: F.max_pool2d(xx, 2), x),
    "avg_pool2d_bwd": lambda: backward(lambda xx: F.avg_pool2d(xx, 3, 2, 1, ceil_mode=True), x),
    "adaptive_avg_bwd": lambda: backward(lambda xx: F.adaptive_avg_pool2d(xx, 5), x),
    "adaptive_max_bwd": lambda: backward(lambda xx: F.adaptive_max_pool2d(xx, 5), x),
    "fractional_max": lambda: F.fractional_max_pool2d(x, 2, output_size=12, _random_samples=samples),
    "conv3d_bwd": lambda: backward(lambda xx, kk: F.conv3d(xx, kk, padding=1), x5, k5),
    "grid_sample_bwd": lambda: backward(lambda xx, gg: F.grid_sample(xx, gg, align_corners=False), x, grid),
    "embedding_bag_bwd": lambda: backward(lambda wt: F.embedding_bag(rows, wt, pyframe.arange(0, 1000, 10)), big),
    "ctc_loss_bwd": lambda: backward(lambda lp: F.ctc_loss(lp.log_softmax(-1), targets, [50] * 16, [10] * 16), lps),
    "batch_norm_bwd": lambda: backward(lambda xx: F.batch_norm(xx, None, None, training=True), x),
    "layer_norm_bwd": lambda: backward(lambda xx: F.layer_norm(xx, (700,)), big),
    "log_softmax_bwd": lambda: backward(lambda xx: xx.log_softmax(-1), big),
    "attention_bwd": lambda: backward(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True), ba),
    "gelu_bwd": lambda: backward(F.gelu, big),
    "cross_entropy_bwd": lambda: backward(lambda xx: F.cross_entropy(xx, rows), big),
    "cat": lambda: pyframe.cat([big, big[:, :100].contiguous(), big], 1),
    "cumsum": lambda: big.cumsum(1),
    "sort": lambda: big.sort(1)[0],
    "topk": lambda: big.topk(5, 1)[1],
    "scatter_reduce": lambda: pyframe.zeros(7, 700).scatter_reduce(0, rows.reshape(1000, 1).expand(1000, 700), big,
                                                                   "mean", include_self=False),  # fmt: skip
    "cummax": lambda: big.cummax(1)[1],
    "logcumsumexp": lambda: big.logcumsumexp(1),
    "searchsorted": lambda: pyframe.searchsorted(big.sort(1)[0], big),
    "mode": lambda: (big * 4).round().mode(1)[0],
    "rand": lambda: (pyframe.manual_seed(3), pyframe.rand(500_000))[1],
    "randn": lambda: (pyframe.manual_seed(3), pyframe.randn(500_000))[1],
    "multinomial": lambda: (pyframe.manual_seed(3), pyframe.multinomial(probs, 3))[1],
    "solve": lambda: pyframe.linalg.solve(sa, sb),
    "sparse_mm_bwd": lambda: backward(lambda vv, d: pyframe.sparse.mm(pyframe.sparse_coo_tensor(spm.indices(), vv,
                                                                                             spm.shape), d),
                                      spm.values(), dn),  # fmt: skip
    "sgd": lambda: opt_step("SGD"),
    "adam": lambda: opt_step("Adam"),
    "adagrad": lambda: opt_step("Adagrad"),
    "rmsprop": lambda: opt_step("RMSprop"),
})
ref = {
    "matmul": lambda: a.numpy().astype(np.float64) @ b.numpy(),
    "gemv": lambda: v.numpy().astype(np.float64) @ w.numpy(),
    "sum": lambda: big.numpy().astype(np.float64).sum(),
    "sum0": lambda: big.numpy().astype(np.float64).sum(0),
}
pyframe.set_num_threads(1)
one = {name: np.array(np.asarray(fn())) for name, fn in cases.items()}
pyframe.set_num_threads(4)
for name, fn in cases.items():
    got = np.array(np.asarray(fn()))
    assert np.isfinite(got).all(), f"{name}: non-finite values with 4 threads asked"
    np.testing.assert_array_equal(got, one[name], err_msg=name)
    if name in ref:
        np.testing.assert_allclose(got, ref[name](), rtol=1e-4, atol=1e-3, err_msg=name)
print("ok", len(cases))
"""


@pytest.mark.parametrize(
    "env", [{"OMP_THREAD_LIMIT": "1"}, {"OMP_DYNAMIC": "true"}, {}], ids=["limit1", "dynamic", "as-asked"]
)
def test_kernels_exact_when_fewer_threads_are_granted(env):
    full = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYFRAME_DISABLE_PLUGIN_AUTOLOAD": "1", **env}
    r = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok")
