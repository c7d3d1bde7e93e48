"""optim.LBFGS follows torch's path step for step (fixed step and strong Wolfe line search), minimises
Rosenbrock, and refuses bad input."""

import numpy as np
import pytest

import pyframe


def rosenbrock(lib, xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def run(lib, line_search, dtype_name, steps=5):
    dtype = getattr(lib, dtype_name)
    xy = lib.tensor([-1.5, 2.0], dtype=dtype, requires_grad=True)
    w = lib.tensor([[0.5, -0.25], [0.1, 0.3]], dtype=dtype, requires_grad=True)
    opt = lib.optim.LBFGS([xy, w], lr=0.5, max_iter=10, history_size=4, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(lib, xy) + (w @ xy - 1).pow(2).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure)) for _ in range(steps)]
    return losses, xy.detach().numpy().copy(), opt.state[xy]["func_evals"]


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search):
    torch = pytest.importorskip("torch")
    ours = run(pyframe, line_search, "float64")
    theirs = run(torch, line_search, "float64")
    # torch keeps step sizes as 0-d tensors, pyframe as floats: the paths agree to rounding
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[2] == theirs[2]


@pytest.mark.parametrize(("line_search", "lr"), [(None, 0.1), ("strong_wolfe", 1.0)])
def test_lbfgs_minimises_rosenbrock(line_search, lr):
    xy = pyframe.tensor([-1.5, 2.0], dtype=pyframe.float64, requires_grad=True)
    opt = pyframe.optim.LBFGS([xy], lr=lr, max_iter=50, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(pyframe, xy)
        loss.backward()
        return loss

    for _ in range(20):
        opt.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), [1.0, 1.0], atol=1e-3)


def test_lbfgs_bad_input():
    p = pyframe.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn"):
        pyframe.optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="parameter groups"):
        pyframe.optim.LBFGS([{"params": [p]}, {"params": [pyframe.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="closure"):
        pyframe.optim.LBFGS([p]).step(None)
