"""``SummaryWriter``: torch's interface for logging to TensorBoard, over the ``tensorboard`` package's event file
writer (records are queued and written by its own thread, flushed every ``flush_secs``)."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from pyframe.utils.tensorboard import summary

try:
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:
    raise ImportError(summary.NEEDS_TENSORBOARD) from e

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Same as torch.utils.tensorboard.writer.FileWriter: the events of one run directory."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: Any = None, walltime: float | None = None) -> None:
        """Record ``event`` at ``step`` (any integer-like), stamped ``walltime`` (now by default)."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary_proto, global_step: Any = None, walltime: float | None = None) -> None:
        """Record a ``Summary`` protocol buffer."""
        self.add_event(Event(summary=summary_proto), global_step, walltime)

    def flush(self) -> None:
        """Write the queued events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """Open a new event file in the same directory after ``close``."""
        self.event_writer.reopen()


class SummaryWriter:
    """Same as torch.utils.tensorboard.SummaryWriter: writes scalars, histograms, images, text and hyperparameters
    to an event file in ``log_dir`` (``runs/MONTHDAY_HH-MM-SS_HOSTNAME{comment}`` by default).

    Args:
        log_dir: the run's directory.
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: on resuming a crashed run, events at and after this step are hidden by TensorBoard.
        max_queue: events queued before a write.
        flush_secs: seconds between writes to disk.
        filename_suffix: appended to the event file's name.

    Not here: ``add_graph``, ``add_embedding``, ``add_video``, ``add_audio``, ``add_mesh``, ``add_pr_curve`` and
    custom scalar layouts."""

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:  # fmt: skip
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self.default_bins = summary.default_bins()
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The run's writer, opened again after ``close``."""
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # TensorBoard hides what a crashed run wrote from this step on
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:  # fmt: skip
        """A number (a float, or a one-element tensor or array) at ``global_step``."""
        self._get_file_writer().add_summary(summary.scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)  # fmt: skip

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:  # fmt: skip
        """Several numbers on one chart: each ``tag`` goes to a run of its own, ``log_dir/main_tag_tag``."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"add_scalars: expected a dict of tag -> value, got {type(tag_scalar_dict).__name__}")
        base = self._get_file_writer().get_logdir()
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            path = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(path)
            if writer is None:
                writer = self.all_writers[path] = FileWriter(path, self.max_queue, self.flush_secs,
                                                             self.filename_suffix)  # fmt: skip
            writer.add_summary(summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:  # fmt: skip
        """The distribution of ``values``; ``bins`` as ``numpy.histogram`` takes it, or "tensorflow"."""
        self._get_file_writer().add_summary(summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:  # fmt: skip
        """An image: float values in [0, 1] or uint8 in [0, 255], laid out as ``dataformats`` says (CHW, HWC, HW)."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:  # fmt: skip
        """A batch of images, shown as one grid of 8 a row."""
        self._get_file_writer().add_summary(summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:  # fmt: skip
        """A matplotlib figure (or a list of them, as a grid) rendered to an image."""
        import numpy as np

        figures = figure if isinstance(figure, list) else [figure]
        pictures = []
        for fig in figures:
            fig.canvas.draw()
            pictures.append(np.asarray(fig.canvas.buffer_rgba())[..., :3].transpose(2, 0, 1))
            if close:
                import matplotlib.pyplot as plt

                plt.close(fig)
        if isinstance(figure, list):
            self.add_images(tag, np.stack(pictures), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, pictures[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:  # fmt: skip
        """A string (Markdown) for the Text tab."""
        self._get_file_writer().add_summary(summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:  # fmt: skip
        """A run's hyperparameters and final metrics for the HParams tab, in a run of their own
        (``log_dir/run_name``, the current time by default) as torch writes them."""
        experiment, start, end = summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        path = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=path) as w:
            for record in (experiment, start, end):
                w.file_writer.add_summary(record, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def flush(self) -> None:
        """Write every queued event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; a later ``add_*`` opens a new one."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
