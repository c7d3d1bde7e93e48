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
