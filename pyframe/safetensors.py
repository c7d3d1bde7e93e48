"""safetensors files with ``safetensors.torch``'s names: ``save_file``, ``load_file``, ``save``, ``load``,
``save_model``, ``load_model`` and ``safe_open``, through the ``safetensors`` package's NumPy API
(``pip install pyframe-core[safetensors]``).

A safetensors file is a JSON header (names, dtypes, shapes, byte ranges, a str->str ``__metadata__``) and the
raw little-endian bytes of each tensor: no code, no pickle. Files written by torch's ``safetensors.torch`` load
bit for bit, and torch loads the files written here. The rules are ``safetensors.torch``'s: tensors must be
contiguous and must not share memory (``save_model`` drops the duplicates of tied weights, as torch's does,
and ``load_model`` knows them again); a dtype pyframe lacks (uint16, float8, complex, ...) is an error
naming the tensor. bfloat16, which NumPy lacks, travels as its raw 16-bit patterns.
"""

from __future__ import annotations

import collections
import json
import os
import struct

import numpy as np

from pyframe import _dtype
from pyframe.serialization.format import CheckpointError
from pyframe.tensor import Tensor, share_numpy

__all__ = ["save", "save_file", "load", "load_file", "save_model", "load_model", "safe_open", "SafetensorError"]

# safetensors' dtype codes for pyframe's dtypes, and the codes pyframe cannot load
_CODES = {"F32": _dtype.float32, "F64": _dtype.float64, "F16": _dtype.float16, "I64": _dtype.int64,
          "I32": _dtype.int32, "BOOL": _dtype.bool_, "U8": _dtype.uint8, "I8": _dtype.int8, "I16": _dtype.int16,
          "BF16": _dtype.bfloat16}  # fmt: skip
_NAMES = {
    "U16": "uint16", "U32": "uint32", "U64": "uint64", "C64": "complex64", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
}  # fmt: skip

MAX_HEADER_BYTES = 100_000_000  # the safetensors package's own limit


class SafetensorError(CheckpointError):
    """A safetensors file that cannot be read (damaged, or holding a dtype pyframe lacks)."""


def _numpy_api():
    try:
        import safetensors
        import safetensors.numpy
    except ImportError:
        raise ImportError(
            "pyframe.safetensors needs the safetensors package: pip install 'pyframe-core[safetensors]' "
            "(or pip install safetensors)"
        ) from None
    return safetensors, safetensors.numpy


# ---- saving -------------------------------------------------------------------------------------------


def _end(t: Tensor) -> int:
    """One past the last byte the tensor reaches in its storage."""
    isz = t.dtype.itemsize
    if not t._numel:
        return t._offset * isz
    return (t._offset + sum((n - 1) * s for n, s in zip(t._shape, t._strides, strict=True)) + 1) * isz


def _find_shared_tensors(tensors: dict) -> list[set]:
    """Names grouped by overlapping memory (as safetensors.torch's ``_find_shared_tensors``)."""
    by_storage: dict[int, set] = collections.defaultdict(set)
    for k, v in tensors.items():
        if v._storage.nbytes:
            by_storage[id(v._storage)].add(k)
    out = []
    for names in sorted(by_storage.values(), key=sorted):
        areas = sorted((tensors[n]._offset * tensors[n].dtype.itemsize, _end(tensors[n]), n) for n in names)
        _, last_stop, first = areas[0]
        out.append({first})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                out.append({name})
            else:
                out[-1].add(name)
            last_stop = max(last_stop, stop)
    return out


def _is_complete(t: Tensor) -> bool:
    return t._offset == 0 and t._numel * t.dtype.itemsize == t._storage.nbytes


def _remove_duplicate_names(state_dict: dict, *, preferred_names=None, discard_names=None) -> dict:
    """For each group of tensors sharing memory: the name kept (one covering the whole storage) -> the
    names dropped. Same choice as safetensors.torch."""
    preferred_names = set(preferred_names or [])
    discard_names = set(discard_names or [])
    to_remove: dict[str, list] = collections.defaultdict(list)
    for shared in _find_shared_tensors(state_dict):
        if len(shared) < 2:
            continue
        complete = {n for n in shared if _is_complete(state_dict[n])}
        if not complete:
            raise RuntimeError(
                f"Error while trying to find names to remove to save state dict, but found no suitable name to keep "
                f"for saving amongst: {shared}. None is covering the entire storage. Refusing to save/load the model "
                "since you could be storing much more memory than needed."
            )
        keep = sorted(complete)[0]
        preferred = complete - discard_names
        if preferred:
            keep = sorted(preferred)[0]
        if preferred_names & complete:
            keep = sorted(preferred_names & complete)[0]
        for name in sorted(shared):
            if name != keep:
                to_remove[keep].append(name)
    return to_remove


def _arrays(tensors) -> dict:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, pyframe.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise ValueError(f"Key `{k!r}` is invalid, expected a str")
        if not isinstance(v, Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected pyframe.Tensor but received {type(v)}")
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and potential differences when "
            f"loading them again: {failing}. A potential way to correctly save your model is to use `save_model`."
        )
    out = {}
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It either means you are "
                "trying to save tensors which are reference of each other in which case it's recommended to save only "
                "the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to pack "
                "it before saving."
            )
        arr = v.detach()._elements()  # bfloat16: its uint16 bit patterns
        arr = arr if arr.dtype.byteorder != ">" else arr.astype(arr.dtype.newbyteorder("<"))
        out[k] = (v.dtype.name if v.dtype is _dtype.bfloat16 else arr.dtype.name, np.asarray(arr, order="C"))
    return out


def _specs(arrays: dict, st) -> dict:
    """The safetensors package's descriptions of the arrays (its dtype names: NumPy's, and "bfloat16")."""
    return {
        k: st.TensorSpec(dtype=name, shape=arr.shape, data_ptr=arr.ctypes.data, data_len=arr.nbytes)
        for k, (name, arr) in arrays.items()
    }


def _check_metadata(metadata) -> None:
    if metadata is None:
        return
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise ValueError("metadata must be a dict of str to str (as safetensors stores it)")


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``tensors`` (str -> contiguous Tensor, none sharing memory)."""
    _check_metadata(metadata)
    st, _ = _numpy_api()
    arrays = _arrays(tensors)  # kept alive while the package reads their memory
    return bytes(st.serialize(_specs(arrays, st), metadata=metadata))


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write ``tensors`` (str -> contiguous Tensor, none sharing memory) to ``filename``."""
    _check_metadata(metadata)
    st, _ = _numpy_api()
    arrays = _arrays(tensors)
    st.serialize_file(_specs(arrays, st), os.fspath(filename), metadata=metadata)


def save_model(model, filename, metadata: dict | None = None, force_contiguous: bool = True) -> None:
    """``model.state_dict()`` to ``filename``, tied weights written once (the dropped names are recorded in the
    metadata as ``{dropped: kept}``), as safetensors.torch.save_model."""
    state_dict = dict(model.state_dict())
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {k: v.contiguous() for k, v in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(
            f"{e} Or use save_model(..., force_contiguous=True), read the docs for potential caveats."
        ) from None


# ---- loading ------------------------------------------------------------------------------------------


def _check_header(head: bytes, size: int | None, source: str) -> dict:
    """The header, read by pyframe first so that a dtype it lacks is named with its tensor."""
    if len(head) < 8:
        raise SafetensorError(f"{source}: truncated: a safetensors file starts with an 8-byte header length")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES or (size is not None and 8 + n > size):
        raise SafetensorError(f"{source}: corrupted: the header length {n} is past the file or over the limit")
    raw = head[8 : 8 + n]
    if len(raw) < n:
        raise SafetensorError(f"{source}: truncated: the header is cut short")
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise SafetensorError(f"{source}: corrupted: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorError(f"{source}: corrupted: the header is not a JSON object")
    for name, info in header.items():
        if name == "__metadata__":
            continue
        code = info.get("dtype") if isinstance(info, dict) else None
        if code not in _CODES:
            what = _NAMES.get(code, repr(code)) if isinstance(code, str) else repr(code)
            raise SafetensorError(
                f"{source}: tensor {name!r} has dtype {what}, which pyframe cannot load (pyframe's dtypes: "
                f"{', '.join(d.name for d in _dtype.ALL)})"
            )
    return header


def _to_tensors(arrays: dict, dtypes: dict | None = None) -> dict:
    """Tensors over the arrays; ``dtypes`` names each array's dtype where NumPy's does not say it (bfloat16)."""
    out = {}
    for k, arr in arrays.items():
        dt = (dtypes or {}).get(k) or _dtype.from_numpy_dtype(arr.dtype.newbyteorder("="))
        if arr.dtype.byteorder == ">" or not arr.flags.c_contiguous or arr.ctypes.data % max(dt.itemsize, 1):
            arr = np.ascontiguousarray(arr, dtype=dt.np)
        if not arr.flags.writeable:
            arr = arr.copy()
        if dt is _dtype.bool_ and arr.size and arr.view(np.uint8).max() > 1:
            raise SafetensorError(f"tensor {k!r} is bool but holds a byte other than 0 and 1")
        out[k] = share_numpy(arr, dt)
    return out


def _wrap(e: Exception, source: str) -> SafetensorError:
    return SafetensorError(f"{source}: corrupted: {e}")


def load(data: bytes) -> dict:
    """The tensors in safetensors ``data`` (bytes), as pyframe Tensors."""
    st, _ = _numpy_api()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"load() takes the file's bytes, got {type(data).__name__}; use load_file for a path")
    data = bytes(data)
    (n,) = struct.unpack("<Q", data[:8]) if len(data) >= 8 else (0,)
    _check_header(data[: 8 + min(n, MAX_HEADER_BYTES)], len(data), "<bytes>")
    return _deserialize(data, st, "<bytes>")


def _deserialize(data: bytes, st, source: str) -> dict:
    """The tensors in ``data`` through the package's own parser, which gives each one's raw bytes: its NumPy
    API would refuse bfloat16."""
    try:
        arrays, dtypes = {}, {}
        for k, info in st.deserialize(data):
            dt = dtypes[k] = _CODES[info["dtype"]]
            arrays[k] = np.frombuffer(info["data"], dtype=dt.np).reshape(info["shape"])
    except (st.SafetensorError, ValueError, TypeError, OverflowError) as e:
        raise _wrap(e, source) from None
    return _to_tensors(arrays, dtypes)


def _read_header_of(filename) -> dict:
    path = os.fspath(filename)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else 0
        head += fh.read(min(n, MAX_HEADER_BYTES))
    return _check_header(head, size, path)


def load_file(filename, device="cpu") -> dict:
    """The tensors in the safetensors file ``filename``, as pyframe Tensors (``device`` must be the CPU)."""
    if str(device) != "cpu" and not str(device).startswith("cpu:"):
        raise ValueError(f"pyframe runs on the CPU only; device={device!r} is not supported")
    st, _ = _numpy_api()
    _read_header_of(filename)
    with open(os.fspath(filename), "rb") as fh:
        data = fh.read()
    return _deserialize(data, st, os.fspath(filename))


def load_model(model, filename, strict: bool = True, device="cpu") -> tuple[list, list]:
    """Load ``filename`` into ``model`` as safetensors.torch.load_model: tied weights written once by
    :func:`save_model` are filled through the name that was kept. Returns ``(missing, unexpected)``."""
    state_dict = load_file(filename, device=device)
    to_removes = _remove_duplicate_names(dict(model.state_dict()), preferred_names=state_dict.keys())
    result = model.load_state_dict(state_dict, strict=False)
    missing, unexpected = set(result[0]), list(result[1])
    for group in to_removes.values():
        for name in group:
            if name not in missing:
                unexpected.append(name)
            else:
                missing.remove(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {type(model).__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return sorted(missing), unexpected


class safe_open:  # noqa: N801 - safetensors' name
    """``with safe_open(filename, framework="pt") as f``: ``f.keys()``, ``f.get_tensor(name)`` (read when asked)
    and ``f.metadata()`` (the str->str dict saved with the file, or None), as safetensors.safe_open."""

    def __init__(self, filename, framework: str = "pt", device="cpu") -> None:
        if framework not in ("pt", "pyframe", "np", "numpy"):
            raise ValueError(f"framework must be 'pt' (pyframe tensors), got {framework!r}")
        if str(device) != "cpu":
            raise ValueError(f"pyframe runs on the CPU only; device={device!r} is not supported")
        st, _ = _numpy_api()
        self._path = os.fspath(filename)
        self._header = _read_header_of(self._path)
        try:
            self._f = st.safe_open(self._path, framework="np")
        except (st.SafetensorError, ValueError) as e:
            raise _wrap(e, self._path) from None
        self._error = st.SafetensorError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._f = None

    def keys(self) -> list[str]:
        """The names of the tensors in the file."""
        return list(self._f.keys())

    def metadata(self) -> dict | None:
        """The str -> str metadata saved with the file, or None."""
        return self._f.metadata()

    def get_tensor(self, name: str) -> Tensor:
        """The tensor ``name``, read from the file now (KeyError for a name the file lacks)."""
        if name not in set(self._f.keys()):
            raise KeyError(f"{self._path}: the file has no tensor named {name!r}")
        dt = _CODES[self._header[name]["dtype"]]
        try:
            # NumPy has no bfloat16: its raw bytes, from the header's offsets
            arr = self._raw(name, dt) if dt is _dtype.bfloat16 else self._f.get_tensor(name)
        except (self._error, ValueError, OSError) as e:
            raise _wrap(e, self._path) from None
        return _to_tensors({name: arr}, {name: dt})[name]

    def _raw(self, name: str, dt) -> np.ndarray:
        info = self._header[name]
        begin, end = info["data_offsets"]
        with open(self._path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            fh.seek(8 + n + begin)
            data = fh.read(end - begin)
        shape = tuple(info["shape"])
        if len(data) != end - begin or len(data) != int(np.prod(shape, dtype=np.int64)) * dt.itemsize:
            raise ValueError(f"tensor {name!r}: its byte range does not match its shape")
        return np.frombuffer(data, dtype=dt.np).reshape(shape)
