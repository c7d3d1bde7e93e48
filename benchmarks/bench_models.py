"""Models people train on a CPU, pyframe beside torch: training throughput, peak memory, inference latency.

Models (one model code for both libraries, written for ``import pyframe as torch``):
  gpt       nanoGPT's shakespeare-char configuration: 6 layers, 6 heads, d=384, block 256, dropout 0.2,
            no biases, vocab 65, AdamW (lr 1e-3, betas 0.9/0.99, weight decay 0.1), gradient clip 1.0;
            batch 4 (nanoGPT's is 64: on a 2-core CPU a step of 4 already takes seconds)
  resnet    CIFAR ResNet-18 (3x3 stem, no max-pool, 64-128-256-512), batch 32 of 3x32x32, SGD momentum 0.9
  lstm      word_language_model's LSTM LM at its 2x650 configuration (emsize 650, nhid 650, dropout 0.5,
            bptt 35, batch 20, lr 20, clip 0.25, manual SGD update), a vocabulary of 2,000 words
  encoder   TransformerEncoder classifier: embedding 5,000 x 256, 4 layers of nhead 4, feed-forward 1024,
            batch_first, mean-pooled, 4 classes, sequence 128, batch 16, Adam
  mnist     pytorch/examples' MNIST CNN, batch 64, Adadelta lr 1.0
  gpt-gen   inference: the gpt above generating 64 tokens at batch 1 from a 1-token prompt (nanoGPT's
            generate: the whole context every token, temperature 1, top-k 200, multinomial)
  resnet-1  inference: the resnet above, eval mode, one 3x32x32 image
Data are synthetic (seeded random tokens and images) made here. Each (library, model, threads)
runs in a fresh process of its own; rounds alternate which library goes first; a figure is
the median over rounds of each process's median step time. Peak memory is the child's own
high-water mark (``VmHWM``, read by the child at its end: ``ru_maxrss`` from ``os.wait4`` also
counts the parent's resident size, since a child started by vfork shares its memory until exec);
"after import" is its resident size once the library and NumPy are imported, so the difference is
what the model, its data and training took.

    python benchmarks/bench_models.py [--quick] [--models gpt,resnet,...] [--threads 1,2] [--rounds 3]
                                      [--seconds 6] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (description, unit of throughput, items per step)
CASES = {
    "gpt": ("nanoGPT shakespeare-char 6x384 T256 b4", "tok/s", 4 * 256),
    "resnet": ("CIFAR ResNet-18 b32", "img/s", 32),
    "lstm": ("LSTM LM 2x650 bptt35 b20", "tok/s", 35 * 20),
    "encoder": ("TransformerEncoder 4x256 T128 b16", "seq/s", 16),
    "mnist": ("pytorch/examples MNIST CNN b64", "img/s", 64),
    "gpt-gen": ("GPT generate 64 tokens, batch 1", "ms", 0),
    "resnet-1": ("ResNet-18 inference, batch 1", "ms", 0),
}


# ---------------------------------------------------------------- models (any `lib` with torch's API)


def gpt_model(lib, n_layer=6, n_head=6, n_embd=384, block_size=256, vocab_size=65, dropout=0.2):
    """nanoGPT's model.py, bias=False (its LayerNorm with an optional bias), weights tied."""
    nn, F = lib.nn, lib.nn.functional

    class LayerNorm(nn.Module):
        def __init__(self, ndim):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(ndim))

        def forward(self, x):
            return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
            self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
            self.resid_dropout = nn.Dropout(dropout)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            p = dropout if self.training else 0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=False)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = LayerNorm(n_embd), CausalSelfAttention()
            self.ln_2, self.mlp = LayerNorm(n_embd), MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
            self.drop = nn.Dropout(dropout)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.wte.weight = self.lm_head.weight
            for pn, p in self.named_parameters():
                if pn.endswith("weight") and p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * n_layer) if pn.endswith("c_proj.weight") else 0.02
                    nn.init.normal_(p, mean=0.0, std=std)

        def forward(self, idx, targets=None):
            t = idx.size(1)
            x = self.drop(self.wte(idx) + self.wpe(lib.arange(0, t, dtype=lib.long)))
            for block in self.h:
                x = block(x)
            x = self.ln_f(x)
            if targets is None:
                return self.lm_head(x[:, [-1], :])
            logits = self.lm_head(x)
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        @lib.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
            for _ in range(max_new_tokens):
                idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
                logits = self(idx_cond)[:, -1, :] / temperature
                if top_k is not None:
                    v, _ = lib.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx = lib.cat((idx, lib.multinomial(probs, num_samples=1)), dim=1)
            return idx

    return GPT()


def resnet18(lib, num_classes=10):
    """The CIFAR ResNet-18 of kuangliu/pytorch-cifar (BasicBlock, 3x3 stem, 4x4 average pool)."""
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.linear = nn.Linear(512, num_classes)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
            out = F.avg_pool2d(out, 4)
            return self.linear(out.view(out.size(0), -1))

    return ResNet()


def lstm_lm(lib, ntoken=2000, ninp=650, nhid=650, nlayers=2, dropout=0.5):
    """word_language_model's RNNModel('LSTM', ...), tied=False, as written there."""
    nn, F = lib.nn, lib.nn.functional

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

        def forward(self, input, hidden):  # noqa: A002
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output)).view(-1, ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            return weight.new_zeros((nlayers, bsz, nhid)), weight.new_zeros((nlayers, bsz, nhid))

    return RNNModel()


def encoder_classifier(lib, vocab=5000, d=256, nhead=4, layers=4, ff=1024, classes=4):
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, nhead, ff, dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            return self.head(self.encoder(self.emb(x) * math.sqrt(d)).mean(dim=1))

    return Classifier()


def mnist_net(lib):
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


# ---------------------------------------------------------------- one step of each benchmark


def build(lib, name: str):
    """A zero-argument function doing one training step (or one inference call) of `name`."""
    import numpy as np

    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    data = lambda a, dt: lib.from_numpy(np.ascontiguousarray(a, dtype=dt))  # noqa: E731
    if name in ("gpt", "gpt-gen"):
        model = gpt_model(lib)
        if name == "gpt-gen":
            model.eval()
            idx = lib.zeros((1, 1), dtype=lib.long)
            return lambda: model.generate(idx, 64, top_k=200)
        x = data(rng.integers(0, 65, (4, 256)), "int64")
        y = data(rng.integers(0, 65, (4, 256)), "int64")
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)

        def step():
            loss = model(x, y)
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)

        return step
    if name in ("resnet", "resnet-1"):
        model = resnet18(lib)
        if name == "resnet-1":
            model.eval()
            img = data(rng.normal(size=(1, 3, 32, 32)), "float32")

            def infer():
                with lib.no_grad():
                    return model(img)

            return infer
        x, y = data(rng.normal(size=(32, 3, 32, 32)), "float32"), data(rng.integers(0, 10, 32), "int64")
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        loss_fn = lib.nn.CrossEntropyLoss()

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()

        return step
    if name == "lstm":
        model = lstm_lm(lib)
        model.train()
        x, y = data(rng.integers(0, 2000, (35, 20)), "int64"), data(rng.integers(0, 2000, 35 * 20), "int64")
        criterion, lr = lib.nn.NLLLoss(), 20.0
        state = {"hidden": model.init_hidden(20)}

        def step():
            hidden = tuple(h.detach() for h in state["hidden"])  # repackage_hidden
            model.zero_grad()
            output, state["hidden"] = model(x, hidden)
            criterion(output, y).backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

        return step
    if name == "encoder":
        model = encoder_classifier(lib)
        x, y = data(rng.integers(0, 5000, (16, 128)), "int64"), data(rng.integers(0, 4, 16), "int64")
        opt = lib.optim.Adam(model.parameters(), lr=1e-4)
        loss_fn = lib.nn.CrossEntropyLoss()
    elif name == "mnist":
        model = mnist_net(lib)
        x, y = data(rng.normal(size=(64, 1, 28, 28)), "float32"), data(rng.integers(0, 10, 64), "int64")
        opt = lib.optim.Adadelta(model.parameters(), lr=1.0)
        loss_fn = lib.nn.functional.nll_loss
    else:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(CASES)}")

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


# ---------------------------------------------------------------- processes


def _rss_mb(field: str = "VmRSS") -> float:
    """This process's resident MB now (VmRSS), or the most it has been (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(lib_name: str, name: str, threads: int, seconds: float, cpu: bool = False) -> None:
    """Prints {"ms": median step ms, "steps": n, "base_mb": resident MB after import, "peak_mb": the most}.

    With ``cpu`` a step's time is the process's CPU time (every thread's), which another job on the machine barely
    moves: at 1 thread it is the step's cost, at more threads the cost summed over them (not its wall time)."""
    import gc

    import numpy  # noqa: F401  (in the baseline for both libraries)

    if lib_name == "torch":
        import torch as lib
    else:
        import pyframe as lib
    lib.set_num_threads(threads)
    base = _rss_mb()
    step = build(lib, name)
    step()  # warm-up: first allocations, lazy initialisation
    step()
    gc.collect()
    clock = time.process_time if cpu else time.perf_counter
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = clock()
        step()
        times.append(clock() - t0)
    print(json.dumps({"ms": statistics.median(times) * 1e3, "steps": len(times), "base_mb": base,
                      "peak_mb": _rss_mb("VmHWM")}))  # fmt: skip


def run_child(lib_name: str, name: str, threads: int, seconds: float, cpu: bool = False) -> dict:
    """One fresh process: its result, with its own peak resident MB."""
    env = dict(os.environ, PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    args = [sys.executable, __file__, "--child", lib_name, name, str(threads), str(seconds), str(int(cpu))]
    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        out = p.stdout.read()
        if p.wait() != 0:
            err.seek(0)
            raise RuntimeError(f"{lib_name} {name} ({threads} threads) failed:\n{err.read()}")
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    ap.add_argument("--models", default=",".join(CASES), help=f"comma-separated, from {','.join(CASES)}")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0, help="timed seconds per process (after 2 warm-up steps)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round, 1 thread, 0.5 s per process")
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="time steps by the process's CPU time (robust to other jobs; at 1 thread the step's cost)",
    )
    ns = ap.parse_args()
    if ns.child:
        _child(ns.child[0], ns.child[1], int(ns.child[2]), float(ns.child[3]), ns.child[4] == "1")
        return
    if ns.quick:
        ns.rounds, ns.threads, ns.seconds = 1, "1", 0.5
    models = [m for m in ns.models.split(",") if m]
    for m in models:
        if m not in CASES:
            ap.error(f"unknown model {m!r}; choose from {', '.join(CASES)}")
    try:
        import torch  # noqa: F401

        libs = ["pyframe", "torch"]
    except ImportError:
        libs = ["pyframe"]
    print(f"{os.cpu_count()} cores; medians of {ns.rounds} rounds, each a fresh process per library, the order")
    print(f"alternating; {ns.seconds:g} s timed per process. Throughput: higher is better; latency and memory:")
    if ns.cpu:
        print("step times are CPU time (process_time: every thread's), not wall time.")
    print("lower. 'vs torch' is pyframe's advantage (throughput ratio, or torch's ms / pyframe's ms) from the two")
    print("medians; 'paired' the median over rounds of the same ratio within each round, whose two processes ran")
    print("back to back: drift of the machine's speed over minutes cancels more in it.")
    print(f"load (1, 5, 15-min averages) at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    head = (f"{'model':<40}{'thr':>4}{'pyframe':>11}{'torch':>11}{'vs torch':>9}{'paired':>8}{'unit':>7}"
            f"{'peak MB pf':>12}{'torch':>7}{'train MB pf':>13}{'torch':>7}{'load':>6}")  # fmt: skip
    print(f"{head}\n{'-' * len(head)}", flush=True)
    for name in models:
        desc, unit, items = CASES[name]
        for threads in (int(t) for t in ns.threads.split(",")):
            res: dict[str, list[dict]] = {lib: [] for lib in libs}
            for r in range(ns.rounds):
                for lib in libs if r % 2 == 0 else libs[::-1]:
                    res[lib].append(run_child(lib, name, threads, ns.seconds, ns.cpu))
            med = {lib: {k: statistics.median(x[k] for x in rs) for k in ("ms", "peak_mb")} for lib, rs in res.items()}
            for lib, rs in res.items():
                med[lib]["train_mb"] = statistics.median(x["peak_mb"] - x["base_mb"] for x in rs)
            val = {lib: (items * 1e3 / m["ms"] if items else m["ms"]) for lib, m in med.items()}
            line = f"{desc:<40}{threads:>4}{val['pyframe']:>11.1f}"
            t = val.get("torch")
            if t is not None:
                ratio = val["pyframe"] / t if items else t / val["pyframe"]
                paired = statistics.median(b["ms"] / a["ms"] for a, b in zip(res["pyframe"], res["torch"], strict=True))
                line += f"{t:>11.1f}{ratio:>8.2f}x{paired:>7.2f}x"
            else:
                line += f"{'-':>11}{'-':>9}{'-':>8}"
            line += f"{unit:>7}{med['pyframe']['peak_mb']:>12.0f}"
            line += f"{med['torch']['peak_mb']:>7.0f}" if t is not None else f"{'-':>7}"
            line += f"{med['pyframe']['train_mb']:>13.0f}"
            line += f"{med['torch']['train_mb']:>7.0f}" if t is not None else f"{'-':>7}"
            print(f"{line}{os.getloadavg()[0]:>6.1f}", flush=True)
    print(f"\nload (1, 5, 15-min averages) at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
