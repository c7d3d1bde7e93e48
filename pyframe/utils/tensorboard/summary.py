"""The ``Summary`` protocol buffers a ``SummaryWriter`` records, built from tensors, arrays and numbers.

Each builder checks what it is given and says what is allowed. Values leave pyframe through ``numpy()`` (interop:
encoding a log record is not a tensor op), as torch's writer does with its tensors."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

# torch's module fails to import without the package too; say what to install
NEEDS_TENSORBOARD = "pyframe.utils.tensorboard needs the tensorboard package: pip install 'pyframe-core[tensorboard]'"
try:
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
except ImportError as e:
    raise ImportError(NEEDS_TENSORBOARD) from e

__all__ = ["as_array", "scalar", "histogram", "image", "text", "hparams", "default_bins"]


def as_array(value: Any, what: str) -> np.ndarray:
    """A tensor (detached), array or number as a NumPy array."""
    from pyframe.tensor import Tensor

    if isinstance(value, Tensor):
        return value.detach().numpy()
    if isinstance(value, np.ndarray | int | float | bool | np.generic | list | tuple):
        return np.asarray(value)
    raise TypeError(f"{what}: expected a Tensor, a NumPy array or a number, got {type(value).__name__}")


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> Summary:
    """One number: as ``simple_value`` (float32, what TensorBoard has always read) or, ``new_style``, as a tensor."""
    a = as_array(value, "add_scalar").squeeze()
    if a.ndim != 0:
        raise ValueError(f"add_scalar: expected one value, got {a.size} values of shape {a.shape}")
    x = float(a)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=x)])
    proto = TensorProto(double_val=[x], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[x], dtype="DT_FLOAT")  # fmt: skip
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


def default_bins() -> list[float]:
    """TensorFlow's histogram buckets: +-1e-12 growing by 10% up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """The distribution of ``values``; ``bins`` as ``numpy.histogram`` takes it ("tensorflow": ``default_bins``).
    Only the buckets from the first to the last non-empty one are kept, plus one empty bucket on the left, since
    TensorBoard stores right edges only."""
    a = as_array(values, "add_histogram").astype(np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("add_histogram: the values are empty")
    if not np.isfinite(a).all():
        raise ValueError("add_histogram: the values contain nan or inf, which a histogram cannot place")
    counts, edges = np.histogram(a, bins=default_bins() if isinstance(bins, str) and bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge runs of k neighbours
        k = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % k)).reshape(-1, k).sum(axis=1)
        edges = np.append(edges[:-1:k], edges[-1])
    nonzero = np.flatnonzero(counts)
    first, last = int(nonzero[0]), int(nonzero[-1])
    kept = counts[first - 1 : last + 1] if first > 0 else np.concatenate([[0], counts[: last + 1]])
    proto = HistogramProto(min=a.min(), max=a.max(), num=a.size, sum=a.sum(), sum_squares=a.dot(a),
                           bucket_limit=edges[first : last + 2].tolist(), bucket=kept.tolist())  # fmt: skip
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def _grid(nchw: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (N, C, H, W) tiled edge to edge into one (C, H', W'), ``ncols`` a row, as torch lays them out."""
    n, c, h, w = nchw.shape
    if c == 1:
        nchw = np.repeat(nchw, 3, axis=1)
        c = 3
    cols = min(n, ncols)
    out = np.zeros((c, math.ceil(n / cols) * h, cols * w), dtype=nchw.dtype)
    for i in range(n):
        r, q = divmod(i, cols)
        out[:, r * h : (r + 1) * h, q * w : (q + 1) * w] = nchw[i]
    return out


def _to_hwc(a: np.ndarray, dataformats: str) -> np.ndarray:
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW") or len(fmt) not in (2, 3, 4):
        raise ValueError(f"dataformats must be letters of NCHW, each at most once (CHW, HWC, NCHW, HW...), got "
                         f"{dataformats!r}")  # fmt: skip
    if a.ndim != len(fmt):
        raise ValueError(f"image of {a.ndim} dimensions {a.shape} does not match dataformats {dataformats!r}")
    if len(fmt) == 4:
        return _grid(a.transpose([fmt.index(x) for x in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 2:
        return np.stack([a.transpose([fmt.index(x) for x in "HW"])] * 3, axis=2)
    hwc = a.transpose([fmt.index(x) for x in "HWC"])
    if hwc.shape[2] not in (1, 3, 4):
        raise ValueError(f"an image has 1, 3 or 4 channels, got {hwc.shape[2]}")
    return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc


def image(tag: str, img: Any, dataformats: str = "CHW", rescale: float = 1) -> Summary:
    """An image (or a grid of them, ``N`` in ``dataformats``) as PNG: float values in [0, 1], integer ones in
    [0, 255], clipped."""
    from PIL import Image  # Pillow: matplotlib's dependency, and torch's writer's too

    a = as_array(img, "add_image")
    scale = 1 if a.dtype == np.uint8 else 255
    hwc = (_to_hwc(a, dataformats).astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    h, w, c = hwc.shape
    picture = Image.fromarray(hwc)
    if rescale != 1:
        picture = picture.resize((int(w * rescale), int(h * rescale)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    proto = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def text(tag: str, text_string: str) -> Summary:
    """A string (Markdown) for the Text tab."""
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    if not isinstance(text_string, str):
        raise TypeError(f"add_text: expected a str, got {type(text_string).__name__}")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))  # fmt: skip
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf-8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))  # fmt: skip
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)])


def hparams(hparam_dict: dict, metric_dict: dict, domains: dict | None = None) -> tuple[Summary, Summary, Summary]:
    """The HParams tab's three records: the experiment (names and types of the hyperparameters and metrics), the
    session start (this run's values) and its end."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    from pyframe.tensor import Tensor

    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
    domains = domains or {}
    if not isinstance(domains, dict):
        raise TypeError("add_hparams: hparam_domain_discrete must be a dict of lists")
    for k, values in domains.items():
        if k not in hparam_dict or not isinstance(values, list) or \
                not all(isinstance(v, type(hparam_dict[k])) for v in values):  # fmt: skip
            raise TypeError(f"add_hparams: hparam_domain_discrete[{k!r}] must be a list of values of the type of "
                            f"hparam_dict[{k!r}]")  # fmt: skip
    start, infos = SessionStartInfo(), []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(as_array(v, "add_hparams").reshape(-1)[0])
        # a bool is an int: filed as a number, as torch's writer does
        if isinstance(v, int | float):
            start.hparams[k].number_value, kind, field = v, "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            start.hparams[k].string_value, kind, field = v, "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError(f"add_hparams: the value of {k!r} must be an int, float, str, bool or Tensor, got "
                             f"{type(v).__name__}")  # fmt: skip
        domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[k]]) \
            if k in domains else None  # fmt: skip
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=domain))

    def record(tag: str, **content) -> Summary:
        data = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content).SerializeToString()
        md = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME, content=data))
        return Summary(value=[Summary.Value(tag=tag, metadata=md)])

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (
        record(metadata.EXPERIMENT_TAG, experiment=experiment),
        record(metadata.SESSION_START_INFO_TAG, session_start_info=start),
        record(metadata.SESSION_END_INFO_TAG, session_end_info=end),
    )
