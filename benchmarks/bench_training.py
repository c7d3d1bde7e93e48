"""Training-step cost, pyframe vs torch side by side in one run (torch's column is left
out when it is not installed; NumPy has no autograd, so it has no column here).

Targets (issue 3): an MLP 784-256-256-10 SGD step at batch 128 within 1.2x of torch's
time; a CNN step (two 3x3 conv + BN + ReLU + maxpool blocks, 28x28 inputs, batch 64,
Adam) within 1.5x; a Linear(4, 4) call under no_grad within 1.5x of torch's.
"""

from _harness import best_time, table, torch

import pyframe as pf
import pyframe.nn as nn
import pyframe.optim as optim


def mlp(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10)
    )


def cnn(lib):
    block = lambda cin, cout: [  # noqa: E731
        lib.nn.Conv2d(cin, cout, 3, padding=1), lib.nn.BatchNorm2d(cout), lib.nn.ReLU(), lib.nn.MaxPool2d(2)
    ]  # fmt: skip
    return lib.nn.Sequential(*block(1, 16), *block(16, 32), lib.nn.Flatten(), lib.nn.Linear(32 * 7 * 7, 10))


def step_fn(lib, model, opt, x, y):
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def case(make_model, make_opt, x_shape, batch):
    pf.manual_seed(0)
    model = make_model(pf)
    x, y = pf.randn(*x_shape), pf.randint(0, 10, (batch,))
    r = {"pyframe": best_time(step_fn(pf, model, make_opt(optim, model), x, y), min_time=1.0) * 1e3}
    if torch is not None:
        tmodel = make_model(torch)
        tmodel.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
        tx, ty = torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy())
        r["torch"] = best_time(step_fn(torch, tmodel, make_opt(torch.optim, tmodel), tx, ty), min_time=1.0) * 1e3
    return r


def main() -> None:
    rows = [
        ("MLP 784-256-256-10 SGD b128", case(mlp, lambda o, m: o.SGD(m.parameters(), lr=0.01), (128, 784), 128)),
        ("CNN 2x(conv+BN+ReLU+pool) Adam b64", case(cnn, lambda o, m: o.Adam(m.parameters()), (64, 1, 28, 28), 64)),
    ]
    table("training step (lower is better)", "ms", rows, higher_is_better=False)

    lin, x = nn.Linear(4, 4), pf.randn(1, 4)
    with pf.no_grad():
        r = {"pyframe": best_time(lambda: lin(x), min_time=0.5) * 1e6}
    if torch is not None:
        tlin, tx = torch.nn.Linear(4, 4), torch.randn(1, 4)
        with torch.no_grad():
            r["torch"] = best_time(lambda: tlin(tx), min_time=0.5) * 1e6
    table("Linear(4, 4) call under no_grad (lower is better)", "us", [("Linear(4, 4)(x[1, 4])", r)], False)


if __name__ == "__main__":
    main()
