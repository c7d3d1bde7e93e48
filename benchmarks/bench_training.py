"""Training-step cost, pyframe beside torch, at 1 and 2 threads: an MLP, a CNN, a small GPT and the MNIST CNN.

Each (library, threads, model) is timed in a fresh process of its own, and the rounds
alternate which library goes first, so a burst of load from elsewhere hits both columns
and neither library's idle OpenMP threads spin while the other is measured. The table
shows each column's median over the rounds. Target: every step no slower than
torch's at 1 and at 2 threads. Usage: bench_training.py [--rounds N] [--threads 1,2]
[--models mlp,cnn,gpt,mnist]. torch's column is left out when torch is not installed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10)
    )


def cnn(lib):
    block = lambda cin, cout: [  # noqa: E731
        lib.nn.Conv2d(cin, cout, 3, padding=1), lib.nn.BatchNorm2d(cout), lib.nn.ReLU(), lib.nn.MaxPool2d(2)
    ]  # fmt: skip
    return lib.nn.Sequential(*block(1, 16), *block(16, 32), lib.nn.Flatten(), lib.nn.Linear(32 * 7 * 7, 10))


def mnist(lib):
    """pytorch/examples' mnist/main.py Net, as written there."""
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = lib.flatten(self.dropout1(x), 1)
            x = self.dropout2(F.relu(self.fc1(x)))
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


def gpt(lib, n_layer=2, d=64, n_head=4, block=32, vocab=65):
    """A nanoGPT-style decoder (pre-norm blocks, causal SDPA, GELU MLP, tied head)."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def attn(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.proj(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.wte.weight = self.head.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.size(1)))
            for b in self.h:
                x = b(x)
            return self.head(self.ln_f(x))

    return GPT()


class _SeqLoss:
    """Cross-entropy over (B, T, V) logits, as nanoGPT computes it."""

    def __init__(self, lib):
        self.f = lib.nn.functional.cross_entropy

    def __call__(self, logits, y):
        return self.f(logits.view(-1, logits.size(-1)), y.view(-1))


def step_fn(lib, model, opt, x, y, loss_fn=None):
    loss_fn = loss_fn or lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step


def build(lib, name: str):
    """(step, description) for one of the four training steps, same weights in both libraries."""
    import numpy as np

    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    if name == "mlp":
        model, x, y = mlp(lib), rng.normal(size=(128, 784)), rng.integers(0, 10, 128)
        opt = lambda m: lib.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)  # noqa: E731
    elif name == "cnn":
        model, x, y = cnn(lib), rng.normal(size=(64, 1, 28, 28)), rng.integers(0, 10, 64)
        opt = lambda m: lib.optim.Adam(m.parameters())  # noqa: E731
    elif name == "mnist":
        model, x, y = mnist(lib), rng.normal(size=(32, 1, 28, 28)), rng.integers(0, 10, 32)
        opt = lambda m: lib.optim.Adam(m.parameters(), lr=1e-3)  # noqa: E731
    else:
        model, x, y = gpt(lib), rng.integers(0, 65, (8, 32)), rng.integers(0, 65, (8, 32))
        opt = lambda m: lib.optim.AdamW(m.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)  # noqa: E731
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.from_numpy(rng.normal(0, 1 / math.sqrt(max(p.shape[-1], 1)), tuple(p.shape)).astype("float32")))
    tx = lib.from_numpy(np.ascontiguousarray(x, dtype="int64" if name == "gpt" else "float32"))
    ty = lib.from_numpy(np.ascontiguousarray(y, dtype="int64"))
    loss_fn = lib.nn.functional.nll_loss if name == "mnist" else _SeqLoss(lib) if name == "gpt" else None
    return step_fn(lib, model, opt(model), tx, ty, loss_fn)


CASES = {
    "mlp": "MLP 784-256-256-10 SGD b128",
    "cnn": "CNN 2x(conv+BN+ReLU+pool) Adam b64",
    "gpt": "GPT 2 layers d64 T32 AdamW b8",
    "mnist": "pytorch/examples MNIST Adam b32",
}


def _child(lib_name: str, name: str, threads: int) -> None:
    sys.path.insert(0, HERE)
    from _harness import best_time

    if lib_name == "torch":
        import torch as lib
    else:
        import pyframe as lib
    lib.set_num_threads(threads)
    print(json.dumps(best_time(build(lib, name), min_time=1.0, repeats=5) * 1e3))


def _time(lib_name: str, name: str, threads: int) -> float:
    env = dict(os.environ, PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    args = [sys.executable, __file__, "--child", lib_name, name, str(threads)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{lib_name} {name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="mlp,cnn,gpt,mnist")
    ns = ap.parse_args()
    if ns.child:
        _child(ns.child[0], ns.child[1], int(ns.child[2]))
        return
    try:
        import torch  # noqa: F401

        libs = ["pyframe", "torch"]
    except ImportError:
        libs = ["pyframe"]
    load0 = os.getloadavg()[0]
    print(f"\ntraining step, ms, median of {ns.rounds} alternating rounds, one process each (lower is better)")
    head = f"{'case':<38}{'threads':>8}{'pyframe ms':>12}{'torch ms':>10}{'pyframe/torch':>15}"
    print(f"{head}\n{'-' * len(head)}")
    for name in ns.models.split(","):
        for threads in (int(t) for t in ns.threads.split(",")):
            times: dict[str, list[float]] = {lib: [] for lib in libs}
            for r in range(ns.rounds):
                for lib in libs if r % 2 == 0 else libs[::-1]:
                    times[lib].append(_time(lib, name, threads))
            p = statistics.median(times["pyframe"])
            line = f"{CASES[name]:<38}{threads:>8}{p:>12.3f}"
            if "torch" in times:
                t = statistics.median(times["torch"])
                line += f"{t:>10.3f}{p / t:>14.2f}x"
            print(line, flush=True)
    print(f"load (1-min average) before / after: {load0:.2f} / {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
