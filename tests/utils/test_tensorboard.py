"""pyframe.utils.tensorboard writes what torch.utils.tensorboard writes: the same events, read back by
TensorBoard's own loader, for the same calls."""

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

import pyframe as pf  # noqa: E402
from pyframe.utils.tensorboard import SummaryWriter  # noqa: E402


def events(run_dir) -> list:
    """Every event of the run's event files but the file header, wall time cleared."""
    out = []
    for path in sorted(run_dir.glob("events.out.tfevents.*")):
        for e in EventFileLoader(str(path)).Load():
            if e.HasField("file_version"):
                continue
            e.wall_time = 0
            out.append(e)
    return out


def log(lib, writer_cls, run_dir):
    rng = np.random.default_rng(0)
    w = writer_cls(log_dir=str(run_dir))
    for step in range(3):
        w.add_scalar("loss/train", lib.tensor(1.5 / (step + 1)), step)
        w.add_scalar("lr", 0.1 * step, global_step=step, new_style=True)
    w.add_scalars("run", {"a": 1.0, "b": lib.tensor([2.0])}, 7)
    w.add_histogram("weights", lib.tensor(rng.normal(size=500).astype(np.float32)), 3)
    w.add_histogram("few", np.array([0.0, 1.0, 1.0, 3.0]), 4, bins=4)
    w.add_histogram("merged", lib.tensor(rng.uniform(size=300)), 5, bins=30, max_bins=7)
    w.add_image("chw", lib.tensor(rng.uniform(size=(3, 6, 5)).astype(np.float32)), 1)
    w.add_image("hw", lib.tensor(rng.integers(0, 255, size=(4, 7)).astype(np.uint8)), 1, dataformats="HW")
    w.add_images("batch", lib.tensor(rng.uniform(size=(10, 1, 3, 4)).astype(np.float32)), 2)
    w.add_text("note", "**bold** text", 9)
    w.add_hparams({"lr": 0.1, "opt": "adam", "bs": 32, "flag": True}, {"hparam/acc": 0.9}, run_name="hp")
    w.close()


def test_events_read_back_by_tensorboard(tmp_path):
    log(pf, SummaryWriter, tmp_path / "pf")
    acc = EventAccumulator(str(tmp_path / "pf")).Reload()
    assert [(s.step, round(s.value, 6)) for s in acc.Scalars("loss/train")] == [(0, 1.5), (1, 0.75), (2, 0.5)]
    h = acc.Histograms("weights")[0].histogram_value
    assert h.num == 500 and sum(h.bucket) == 500 and h.min < -2 < 2 < h.max
    img = acc.Images("batch")[0]
    assert (img.height, img.width) == (6, 32)  # 10 images of 3x4, 8 a row: 2 rows, 8 columns
    assert sorted(p.name for p in (tmp_path / "pf").iterdir() if p.is_dir()) == ["hp", "run_a", "run_b"]


def test_same_events_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    log(pf, SummaryWriter, tmp_path / "pf")
    log(torch, TorchWriter, tmp_path / "torch")
    for sub in ("", "run_a", "run_b", "hp"):
        ours, theirs = events(tmp_path / "pf" / sub), events(tmp_path / "torch" / sub)
        assert len(ours) == len(theirs) > 0, sub
        for a, b in zip(ours, theirs, strict=True):
            assert a == b, f"{sub}: {a} != {b}"


def test_purge_step_and_reopen(tmp_path):
    w = SummaryWriter(tmp_path, purge_step=5)
    w.add_scalar("x", 1.0, 5)
    w.close()
    w.add_scalar("x", 2.0, 6)  # a closed writer opens a new event file
    w.flush()
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2
    first = events(tmp_path)
    assert first[0].step == 5 and first[0].session_log.status == first[0].session_log.START


def test_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        assert w.get_logdir().startswith("runs/") and w.get_logdir().endswith("_lr0.1")
    assert (tmp_path / w.get_logdir()).is_dir()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda w: w.add_scalar("x", pf.ones(3)), ValueError, "expected one value, got 3 values"),
        (lambda w: w.add_scalar("x", "1.0"), TypeError, "expected a Tensor, a NumPy array or a number, got str"),
        (lambda w: w.add_histogram("h", pf.tensor([])), ValueError, "values are empty"),
        (lambda w: w.add_histogram("h", pf.tensor([1.0, float("nan")])), ValueError, "nan or inf"),
        (lambda w: w.add_image("i", pf.ones(3, 4, 5), dataformats="CHWX"), ValueError, "dataformats must be"),
        (lambda w: w.add_image("i", pf.ones(4, 5)), ValueError, "does not match dataformats 'CHW'"),
        (lambda w: w.add_image("i", pf.ones(2, 4, 5)), ValueError, "1, 3 or 4 channels, got 2"),
        (lambda w: w.add_text("t", 3), TypeError, "expected a str"),
        (lambda w: w.add_hparams({"a": [1]}, {}), ValueError, "must be an int, float, str, bool or Tensor"),
        (lambda w: w.add_hparams({"a": 1}, {}, {"a": ["x"]}), TypeError, "hparam_domain_discrete"),
        (lambda w: w.add_scalars("m", [1.0]), TypeError, "expected a dict"),
    ],
)
def test_bad_input_says_what_is_allowed(tmp_path, call, error, match):
    with SummaryWriter(tmp_path) as w, pytest.raises(error, match=match):
        call(w)
