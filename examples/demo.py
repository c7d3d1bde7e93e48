"""pyframe's demo: a small CNN learns handwritten digits, and installed plugins change training with no code change.

The data set is scikit-learn's 8x8 digits (1,797 images, shipped inside the package: nothing is downloaded). The
images arrive as float64, and this model is written in float64 to match. ``make demo`` installs the three shipped
plugins next to pyframe and points ``PYFRAME_CONFIG`` at ``examples/demo.toml``; then:

- float32-enforcer registers every parameter as float32 (half the memory, faster GEMMs), so the model below
  trains in float32 although it asks for float64 (``feed`` gives the model its parameters' dtype);
- grad-clipper rescales every gradient tensor flowing backward between layers to at most ``max_norm``;
- nan-detector checks every output and incoming gradient for NaN and Inf.

The script prints the active plugins, a progress bar per epoch, what each plugin did, the test accuracy, and writes
a checkpoint. Then it trains the same model from the same start again with the plugins switched off
(``pyframe.plugins.disabled``) and writes a PNG of loss and accuracy per epoch with both runs drawn, the plugins and
their settings named on it: the comparison the demo exists for. Run it alone with ``python examples/demo.py`` (the
plugins are then whatever is installed).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F


def load_digits(seed: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The 8x8 digits as (N, 1, 8, 8) float64 images in [0, 1] and int64 labels: 1,497 to train, 300 to test."""
    from sklearn.datasets import load_digits as sklearn_digits

    data = sklearn_digits()
    images = (data.images / 16.0).reshape(-1, 1, 8, 8)
    labels = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    test, train = order[:300], order[300:]
    return (images[train], labels[train]), (images[test], labels[test])


def make_model() -> nn.Module:
    """Two conv blocks and a linear classifier, in float64 like the data."""
    f64 = pf.float64
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, dtype=f64),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 8x8 -> 4x4
        nn.Conv2d(16, 32, 3, padding=1, dtype=f64),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 4x4 -> 2x2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 10, dtype=f64),
    )


def feed(model: nn.Module, images: np.ndarray) -> pf.Tensor:
    """A batch as a tensor of the model's own parameter dtype (float32 once float32-enforcer converted them)."""
    dtype = next(iter(model.parameters())).dtype
    return pf.from_numpy(np.ascontiguousarray(images)).to(dtype)


def evaluate(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    with pf.no_grad():
        predicted = model(feed(model, images)).argmax(dim=1)
        return (predicted == pf.from_numpy(labels)).float().mean().item()


def train(model, train_set, test_set, *, epochs: int, batch: int, seed: int, title: str) -> dict[str, list[float]]:
    """Adam on shuffled mini-batches; a progress bar per epoch with loss, accuracy and samples/s."""
    from tqdm import tqdm

    images, labels = train_set
    opt = pf.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(seed)
    history: dict[str, list[float]] = {"loss": [], "train accuracy": [], "test accuracy": [], "samples/s": []}
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(labels))
        seen = correct = 0
        total_loss = 0.0
        start = time.perf_counter()
        bar = tqdm(range(0, len(order), batch), desc=f"{title} epoch {epoch:2d}/{epochs}", unit="batch", leave=True)
        for i in bar:
            idx = order[i : i + batch]
            x, y = feed(model, images[idx]), pf.from_numpy(labels[idx])
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            seen += len(idx)
            total_loss += loss.item() * len(idx)
            correct += int((logits.argmax(dim=1) == y).sum().item())
            rate = seen / (time.perf_counter() - start)
            bar.set_postfix(loss=f"{total_loss / seen:.4f}", acc=f"{correct / seen:.3f}", samples_s=f"{rate:,.0f}")
        history["loss"].append(total_loss / seen)
        history["train accuracy"].append(correct / seen)
        history["test accuracy"].append(evaluate(model, *test_set))
        history["samples/s"].append(seen / (time.perf_counter() - start))
    return history


def plot(runs: dict[str, dict[str, list[float]]], caption: str, path: Path) -> None:
    """Loss and accuracy per epoch of each run (with the plugins, without), the plugins and config as a caption."""
    import matplotlib

    matplotlib.use("Agg")  # a file, no window
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4.4))
    styles = {
        "with plugins": dict(color="tab:blue", marker="o"),
        "without plugins": dict(color="tab:orange", marker="s"),
    }
    lowest = 1.0
    for label, history in runs.items():
        epochs = range(1, len(history["loss"]) + 1)
        style = styles.get(label, {})
        # clip_on=False: a marker on the axis limit (accuracy 1.0, the first loss) is drawn whole
        ax_loss.plot(epochs, history["loss"], label=label, clip_on=False, **style)
        ax_acc.plot(epochs, history["test accuracy"], label=label, clip_on=False, **style)
        lowest = min(lowest, *history["test accuracy"])
    # log scale: the two runs differ by a few percent of a loss that falls a hundredfold
    ax_loss.set(title="training loss (log scale)", xlabel="epoch", ylabel="cross-entropy", yscale="log")
    ax_loss.margins(y=0.08)
    ax_acc.set(title="test accuracy (300 images)", xlabel="epoch", ylim=(max(0.0, lowest - 0.03), 1.01))
    for ax in (ax_loss, ax_acc):
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="upper right" if ax is ax_loss else "lower right")
    fig.suptitle("pyframe demo: a small CNN on scikit-learn's 8x8 digits, with and without plugins")
    fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize="small", wrap=True)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def print_summary() -> None:
    report = pf.plugins.summary()
    if not report:
        print("plugin summary: no installed plugin is active")
        return
    print("plugin summary:")
    for name, counts in report.items():
        print(
            f"  {name}: "
            + ", ".join(f"{what} {n:,}" if isinstance(n, int) else f"{what} {n}" for what, n in counts.items())
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument(
        "--compare-epochs",
        type=int,
        default=None,
        help="epochs without plugins (default: --epochs; 0: skip)",
    )
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-images", type=int, default=1497, help="train on the first N training images")
    parser.add_argument("--out", type=Path, default=Path("build/demo"), help="folder for the checkpoint and the PNG")
    args = parser.parse_args(argv)
    if args.compare_epochs is None:
        args.compare_epochs = args.epochs

    header = pf.plugins.report_header()
    print(header)
    pf.manual_seed(args.seed)
    train_set, test_set = load_digits(args.seed)
    train_set = (train_set[0][: args.train_images], train_set[1][: args.train_images])
    model = make_model()
    params = list(model.parameters())
    print(
        f"model: {sum(p.numel() for p in params):,} parameters in {params[0].dtype.name} "
        f"(written as float64); data: {len(train_set[1])} training and {len(test_set[1])} test images\n"
    )
    history = train(model, train_set, test_set, epochs=args.epochs, batch=args.batch, seed=args.seed, title="train")
    print()
    print_summary()
    accuracy = evaluate(model, *test_set)
    print(f"accuracy: {accuracy:.2f}")

    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = args.out / "digits_cnn.pyframe"
    pf.save({"model": model.state_dict(), "epochs": args.epochs, "accuracy": accuracy}, checkpoint)
    restored = make_model()
    restored.load_state_dict(pf.load(checkpoint)["model"])
    same = evaluate(restored, *test_set) == accuracy
    print(f"checkpoint: {checkpoint} ({os.path.getsize(checkpoint):,} bytes; reloaded model agrees: {same})")
    active = [p.name for p in pf.plugins.list() if p.enabled and p.source != "built-in"]
    runs = {"with plugins" if active else "this run": history}
    if args.compare_epochs and active:
        print(f"\nthe same model for {args.compare_epochs} epochs with {', '.join(active)} switched off:")
        pf.manual_seed(args.seed)
        with pf.plugins.disabled(*active):
            plain = make_model()
            print(f"model parameters in {next(iter(plain.parameters())).dtype.name}")
            off = train(plain, train_set, test_set, epochs=args.compare_epochs, batch=args.batch, seed=args.seed,
                        title="off  ")  # fmt: skip
        runs["without plugins"] = off
        n = min(args.compare_epochs, args.epochs)
        print(
            f"after {n} epochs: loss {history['loss'][n - 1]:.4f} with plugins, {off['loss'][n - 1]:.4f} without; "
            f"test accuracy {history['test accuracy'][n - 1]:.3f} with, {off['test accuracy'][n - 1]:.3f} without; "
            f"samples/s {history['samples/s'][n - 1]:,.0f} with, {off['samples/s'][n - 1]:,.0f} without"
        )
    png = args.out / "digits_cnn.png"
    files = pf.plugins.effective_config()["files"]
    config = ", ".join(os.path.relpath(f) for f in files) if files else "no config file"
    plot(runs, f"{header}\nconfig: {config}", png)
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
