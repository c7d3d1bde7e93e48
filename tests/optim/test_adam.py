"""optim.Adam and AdamW against torch's: trajectories on the least-squares problem (betas, eps, weight decay,
amsgrad), their state, defaults, and the fused C step of a whole group (mixed dtypes, loaded steps, its checks)."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe import optim
from pyframe._backend import NULL, lib
from tests.optim._least_squares import STEPS, TOL, make_params, run_both

torch = pytest.importorskip("torch")

ADAM_CASES = [
    (cls, dict(amsgrad=ams, weight_decay=wd, maximize=mx))
    for cls in ("Adam", "AdamW")
    for ams in (False, True)
    for wd in (0, 0.1)
    for mx in (False, True)
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "cls,kw", ADAM_CASES, ids=lambda c: c if isinstance(c, str) else "-".join(f"{k}={v}" for k, v in c.items())
)
def test_adam_matches_torch(dtype, cls, kw):
    pf_params, th_params = make_params(dtype)
    pf_opt = getattr(optim, cls)(pf_params, lr=0.05, **kw)
    th_opt = getattr(torch.optim, cls)(th_params, lr=0.05, **kw)
    run_both(pf_opt, th_opt, pf_params, th_params, dtype)
    for p, q in zip(pf_params, th_params, strict=True):
        ps, ts = pf_opt.state[p], th_opt.state[q]
        assert sorted(ps) == sorted(ts)
        assert float(ps["step"]) == float(ts["step"]) == STEPS
        assert ps["step"].dtype == pyframe.float32
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            if key in ts:
                np.testing.assert_allclose(ps[key].numpy(), ts[key].numpy(), rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_adam_other_betas_eps(cls):
    # beta1 = 0.3 takes torch's other lerp branch (weight 0.7 >= 0.5)
    pf_params, th_params = make_params("float64")
    kw = dict(lr=0.02, betas=(0.3, 0.8), eps=1e-3, weight_decay=0.05)
    run_both(getattr(optim, cls)(pf_params, **kw), getattr(torch.optim, cls)(th_params, **kw), pf_params, th_params,
             "float64")  # fmt: skip


def test_adamw_defaults():
    pf_params, th_params = make_params("float64")
    pf_opt, th_opt = optim.AdamW(pf_params), torch.optim.AdamW(th_params)
    assert pf_opt.defaults["weight_decay"] == 1e-2 and pf_opt.defaults["decoupled_weight_decay"] is True
    assert set(pf_opt.defaults) == set(th_opt.defaults)
    assert set(optim.SGD(pf_params).defaults) == set(torch.optim.SGD(th_params).defaults)
    run_both(pf_opt, th_opt, pf_params, th_params, "float64", steps=3)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_group_in_one_call_matches_torch(amsgrad):
    """Mixed float32/float64 parameters, one without a grad, a loaded number step: pf_optim_steps
    steps each like torch's AdamW, step counts included."""
    rng = np.random.default_rng(6)
    arrays = [
        rng.standard_normal(s).astype(dt) for s, dt in (((5, 3), "float32"), ((4,), "float64"), ((2,), "float32"))
    ]
    kw = dict(lr=0.01, betas=(0.9, 0.95), weight_decay=0.1, amsgrad=amsgrad)
    pp = [pyframe.nn.Parameter(pyframe.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    po, to = pyframe.optim.AdamW(pp, **kw), torch.optim.AdamW(tp, **kw)
    for i in range(4):
        for k, (p, t) in enumerate(zip(pp, tp, strict=True)):
            grad = None if k == 2 and i < 2 else rng.standard_normal(t.shape).astype(arrays[k].dtype)
            p.grad = None if grad is None else pyframe.tensor(grad)
            t.grad = None if grad is None else torch.tensor(grad)
        po.step()
        to.step()
        if i == 1:  # a state loaded with plain-number steps keeps counting
            po.state[pp[0]]["step"] = 2
    for p, t in zip(pp, tp, strict=True):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)
        assert float(po.state[p]["step"]) == float(to.state[t]["step"])
    assert po.state[pp[0]]["step"].dtype == pyframe.float32


def test_adam_group_core_checks_change_nothing():
    p, g = pyframe.zeros(3), pyframe.ones(3)
    m, v, step = pyframe.zeros(3), pyframe.zeros(3), pyframe.zeros((), dtype=pyframe.float32)
    ffi = pyframe._backend.ffi
    ptrs = [ffi.new("void *[]", [p._ptr, p._ptr]), ffi.new("void *[]", [g._ptr, g._ptr]),
            ffi.new("void *[]", [m._ptr, m._ptr]), ffi.new("void *[]", [v._ptr, NULL])]  # fmt: skip
    steps = ffi.new("float *[]", [ffi.cast("float *", step._ptr)] * 2)
    hp = ffi.new("double[9]", [0.1, 0.9, 0.99, 1e-8, 0.0, 0, 1, 0, 0])
    with pytest.raises(ValueError, match="parameter 1 needs its exp_avg_sq buffer"):
        pyframe._backend.check(lib.pf_optim_steps(lib.PF_OPTIM_ADAM, 0, 2, *ptrs, NULL, ffi.new("int64_t[]", [3, 3]),
                                                  steps, hp, 9))  # fmt: skip
    assert float(step) == 0.0 and float(p.sum()) == 0.0  # parameter 0 untouched too
