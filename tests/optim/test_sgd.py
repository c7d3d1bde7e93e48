"""optim.SGD against torch.optim.SGD: trajectories on the least-squares problem with momentum, dampening,
nesterov, weight decay and maximize, and the momentum buffers."""

from __future__ import annotations

import numpy as np
import pytest

from pyframe import optim
from tests.optim._least_squares import TOL, make_params, run_both

torch = pytest.importorskip("torch")

SGD_CASES = [
    dict(momentum=m, dampening=d, weight_decay=wd, nesterov=n, maximize=mx)
    for m, d, n in ((0, 0, False), (0.9, 0, False), (0.9, 0, True), (0.9, 0.5, False))
    for wd in (0, 0.1)
    for mx in (False, True)
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", SGD_CASES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_sgd_matches_torch(dtype, kw):
    pf_params, th_params = make_params(dtype)
    pf_opt = optim.SGD(pf_params, lr=0.05, **kw)
    th_opt = torch.optim.SGD(th_params, lr=0.05, **kw)
    run_both(pf_opt, th_opt, pf_params, th_params, dtype)
    if kw["momentum"]:
        for p, q in zip(pf_params, th_params, strict=True):
            np.testing.assert_allclose(
                pf_opt.state[p]["momentum_buffer"].numpy(), th_opt.state[q]["momentum_buffer"].numpy(),
                rtol=TOL[dtype], atol=TOL[dtype],
            )  # fmt: skip


@pytest.mark.parametrize("opt", ["SGD", "Adadelta", "RMSprop"])
def test_one_call_over_mixed_parameters_matches_torch(opt):
    # the step goes over all parameters in one C call per (dtype, per-parameter numbers): float32 and float64
    # parameters in one group, and one that gets its first gradient a step later (SGD's first-step flag differs)
    import pyframe

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in ((5, 3), (7,), (4, 2), (3,))]
    dtypes = ["float32", "float64", "float32", "float64"]
    pairs = list(zip(arrays, dtypes, strict=True))
    pf_p = [pyframe.tensor(a, dtype=getattr(pyframe, d), requires_grad=True) for a, d in pairs]
    th_p = [torch.tensor(a, dtype=getattr(torch, d), requires_grad=True) for a, d in pairs]
    kw = dict(lr=0.05, momentum=0.9) if opt != "Adadelta" else dict(lr=0.5)
    pf_opt, th_opt = getattr(optim, opt)(pf_p, **kw), getattr(torch.optim, opt)(th_p, **kw)
    for step in range(4):
        for lib, params, o in ((pyframe, pf_p, pf_opt), (torch, th_p, th_opt)):
            o.zero_grad(set_to_none=True)
            used = params if step else params[:2]  # the last two join at step 1
            sum(((p * p).sum() * (i + 1) for i, p in enumerate(used)), lib.zeros(())).backward()
            o.step()
    for p, q, d in zip(pf_p, th_p, dtypes, strict=True):
        assert p.dtype == getattr(pyframe, d)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=TOL[d], atol=TOL[d])
