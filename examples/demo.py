"""pyframe's demo: the C core at work until the training demo lands.

Fits a linear model by gradient descent with hand-written gradients (autograd comes
next), then times a float32 matmul against NumPy.
"""

import time

import numpy as np

import pyframe as pf


def fit_linear_model() -> None:
    pf.manual_seed(0)
    n, d = 4096, 16
    true_w = pf.randn(d, 1)
    x = pf.randn(n, d)
    y = x @ true_w + 0.01 * pf.randn(n, 1)
    w = pf.zeros(d, 1)
    lr = 0.1
    for step in range(101):
        residual = x @ w - y
        loss = (residual * residual).mean()
        grad = x.T @ residual * (2.0 / n)  # d(loss)/dw, transposed input read in place
        w -= lr * grad
        if step % 25 == 0:
            print(f"  step {step:3d}  loss {loss.item():.6f}")
    err = (w - true_w).abs().max().item()
    print(f"  max |w - true_w| = {err:.4f}")


def time_matmul(n: int = 1024) -> None:
    a, b = pf.rand(n, n), pf.rand(n, n)
    an, bn = a.numpy(), b.numpy()

    def best(fn, reps: int = 5) -> float:
        fn()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    tp, tn = best(lambda: a @ b), best(lambda: an @ bn)
    flops = 2 * n**3
    print(
        f"  {n}x{n} float32 matmul: pyframe {flops / tp / 1e9:.0f} GFLOP/s, "
        f"NumPy {flops / tn / 1e9:.0f} GFLOP/s, ratio {tn / tp:.2f}"
    )
    diff = np.abs((a @ b).numpy() - an.astype(np.float64) @ bn.astype(np.float64)).max()
    print(f"  max abs difference from a float64 reference: {diff:.2e}")


def main() -> None:
    pf.show_config()
    x = pf.arange(12.0).reshape(3, 4)
    print("\nviews share memory: x.T[1:, ::2] =", x.T[1:, ::2].tolist())
    print("softmax rows sum to", x.softmax(dim=1).sum(dim=1).tolist())
    print("\nlinear regression by gradient descent:")
    fit_linear_model()
    print("\nGEMM:")
    time_matmul()


if __name__ == "__main__":
    main()
