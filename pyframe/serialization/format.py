"""pyframe's checkpoint format, byte by byte (``docs/serialization.md``): a fixed preamble, a JSON header
and raw little-endian storages. Encoding turns Python objects into the header and storage list; decoding checks
every field and byte (CRCs, zero padding, bounds) and rebuilds the objects without importing or calling anything
the file names."""

from __future__ import annotations

import collections
import importlib
import json
import math
import os
import struct
import sys
import zlib
from typing import Any

import numpy as np

from pyframe import _dtype
from pyframe._backend import alloc, check, ffi, lib
from pyframe.tensor import MAX_DIMS, Storage, Tensor, _new, contiguous_strides, empty_tensor

__all__ = [
    "CheckpointError", "MAGIC", "FORMAT_VERSION",
]  # fmt: skip


MAGIC = b"PYFRAME\x00"


FORMAT_VERSION = 1


ALIGN = 64  # the data section and every storage start on a multiple of this many bytes


# magic, format version (u32), CRC32 of the header bytes (u32), header length in bytes (u64)
_PREAMBLE = struct.Struct("<8sIIQ")


_TENSOR_CLASSES = ("Tensor", "Parameter")  # the only classes a file may name


_TAGS = ("$tensor", "$ndarray", "$tuple", "$dict", "$odict", "$counter", "$float")


_MAX_INT = 1 << 62  # bound for offsets and sizes in bytes read from a file


_MAX_DIM = 1 << 63  # bound for a tensor's sizes, strides and element count: int64, as pyframe's tensors


MAX_DEPTH = 100  # containers nested in containers: save refuses deeper objects, load refuses deeper files


_CHUNK = 1 << 24  # read and hash in pieces of this size


# JSON costs about 10x its size in Python objects to parse: a header past these bounds is refused
# before it is read (real checkpoints need a few hundred bytes per tensor)
MAX_HEADER_BYTES = 16 << 20


MAX_ENTRIES = 1 << 17  # storages, and tensors


_LITTLE = sys.byteorder == "little"  # a module global, so tests can exercise the byte-swapping path


class CheckpointError(ValueError):
    """A file that is not a pyframe checkpoint, or one that is truncated or corrupted."""


def _end(storages: list) -> int:
    return storages[-1]["offset"] + storages[-1]["nbytes"] if storages else 0


def _pad(n: int) -> int:
    return -n % ALIGN


def _describe(x) -> str:
    """'a function', 'a set', ... for error messages about things that cannot be saved."""
    import types

    if isinstance(x, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.LambdaType)):
        return "a function"
    if isinstance(x, type):
        return f"a class ({x.__qualname__})"
    if isinstance(x, types.ModuleType):
        return f"a module ({x.__name__})"
    if isinstance(x, np.ndarray):
        return (
            f"a NumPy array of dtype {x.dtype} (arrays of bool, uint8, int8, int16, int32, int64, float16, float32, "
            "float64 are saved)"
        )
    for c in type(x).__mro__:
        if c.__name__ == "Module" and c.__module__.startswith("pyframe.nn"):
            return f"a Module ({type(x).__name__}); save its state_dict() instead"
    name = type(x).__qualname__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"


_SUPPORTED = "tensors, NumPy arrays, dicts (str or int keys), lists, tuples, None, bool, int, float and str"


_MAPPING_TAGS = {dict: "$dict", collections.OrderedDict: "$odict", collections.Counter: "$counter"}


class _Encoder:
    """Turns the object into its JSON form, collecting tensors and the storages they view."""

    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self._tensor_index: dict[int, int] = {}  # id(tensor) -> index in self.tensors
        self._groups: dict[tuple, int] = {}  # (id(storage), dtype name) -> index in self._members
        self._members: list[tuple[Storage, Any, list]] = []  # (storage, dtype, [(tensor, entry), ...])
        self._active: set[int] = set()  # containers being encoded: a cycle would recurse forever
        self._alive: list = []  # keeps every seen object alive, so no id() is reused while saving

    def encode(self, x, path, depth: int = 0):
        t = type(x)
        if x is None or t is bool or t is str or t is int:
            if t is int and x.bit_length() > 13000:  # JSON readers (Python's included) limit digits
                digits = int(x.bit_length() * math.log10(2))
                raise ValueError(f"{_fmt(path)}: int with about {digits} digits is too large to save (limit: 3900)")
            return x
        if t is float:
            return x if math.isfinite(x) else {"$float": "nan" if x != x else ("inf" if x > 0 else "-inf")}
        if isinstance(x, Tensor):
            return {"$tensor": self._tensor(x, path)}
        if isinstance(x, np.generic) and isinstance(x, (np.bool_, np.integer, np.floating)):
            return self.encode(x.item() if not isinstance(x, np.floating) else float(x), path)
        if t is np.ndarray:
            return {"$ndarray": self._ndarray(x, path)}
        if t in (list, tuple, dict, collections.OrderedDict, collections.Counter):
            if id(x) in self._active:
                raise ValueError(f"{_fmt(path)}: cannot save a recursive structure (this {t.__name__} contains itself)")
            if depth >= MAX_DEPTH:
                where = _fmt(path)
                where = where if len(where) <= 60 else where[:60] + "..."
                raise ValueError(
                    f"obj: nested more than {MAX_DEPTH} containers deep (at {where}); pyframe checkpoints hold at "
                    f"most {MAX_DEPTH} levels"
                )
            self._active.add(id(x))
            try:
                if t is list:
                    return [self.encode(v, (path, i), depth + 1) for i, v in enumerate(x)]
                if t is tuple:
                    return {"$tuple": [self.encode(v, (path, i), depth + 1) for i, v in enumerate(x)]}
                return {_MAPPING_TAGS[t]: self._mapping(x, path, depth + 1)}
            finally:
                self._active.discard(id(x))
        if isinstance(x, (list, tuple, dict)):
            base = next(b for b in (list, tuple, dict) if isinstance(x, b))
            raise TypeError(
                f"{_fmt(path)}: cannot save {_describe(x)} (a {base.__name__} subclass); convert it to a plain "
                f"{base.__name__} first"
            )
        raise TypeError(f"{_fmt(path)}: cannot save {_describe(x)}; checkpoints hold {_SUPPORTED}")

    def _mapping(self, x: dict, path, depth: int):
        for k in x:
            if type(k) is not str and type(k) is not int:
                raise TypeError(
                    f"{_fmt(path)}: cannot save a dict key of type {type(k).__name__} ({k!r}); keys must be str or int"
                )
        if all(type(k) is str for k in x):
            return {k: self.encode(v, (path, k), depth) for k, v in x.items()}
        return [[k, self.encode(v, (path, k), depth)] for k, v in x.items()]

    def _ndarray(self, x: np.ndarray, path) -> int:
        """A NumPy array is stored as data, like a tensor (never pickled), and loads as a NumPy array."""
        from pyframe.tensor import from_numpy

        try:
            _dtype.from_numpy_dtype(x.dtype)
        except (TypeError, ValueError):
            raise TypeError(f"{_fmt(path)}: cannot save {_describe(x)}") from None
        i = self._tensor_index.get(id(x))
        if i is None:
            t = from_numpy(np.array(x, order="C", copy=True))  # a copy: later writes to x don't reach the file
            self._alive.append(x)
            i = self._tensor_index[id(x)] = self._tensor(t, path)
        return i

    def _tensor(self, x: Tensor, path) -> int:
        i = self._tensor_index.get(id(x))
        if i is not None:
            return i
        cls = _tensor_class(x)
        if cls is None:
            raise TypeError(
                f"{_fmt(path)}: cannot save {_describe(x)}, a Tensor subclass; only Tensor and nn.Parameter are saved "
                "(pass x.detach() to save its data as a Tensor)"
            )
        if any(s < 0 for s in x._strides):  # pragma: no cover - pyframe never makes negative strides
            raise ValueError(
                f"{_fmt(path)}: cannot save a tensor with negative strides {x._strides}; save x.contiguous()"
            )
        key = (id(x._storage), x.dtype.name)
        g = self._groups.get(key)
        if g is None:
            g = self._groups[key] = len(self._members)
            self._members.append((x._storage, x.dtype, []))
        entry = {
            "class": cls,
            "storage": g,
            "shape": list(x._shape),
            "stride": list(x._strides),
            "offset": x._offset,
            "requires_grad": bool(x.requires_grad),
        }
        self._members[g][2].append((x, entry))
        self._alive.append(x)
        i = self._tensor_index[id(x)] = len(self.tensors)
        self.tensors.append(entry)
        return i

    def layout(self) -> tuple[list[dict], list]:
        """Storage entries (with 64-byte aligned offsets) and the bytes to write for each.

        A storage is written from the first to the last element its saved tensors reach, and their
        offsets are rebased; a storage seen through a single tensor that skips elements is written as a
        contiguous copy of that tensor, so saving a strided slice never writes the whole base tensor."""
        storages, chunks, pos = [], [], 0
        for st, dt, members in self._members:
            isz = dt.itemsize
            live = [t for t, _ in members if t._numel]
            if len(live) == 1 and _span(live[0]) > live[0]._numel:
                t = live[0]
                copy = empty_tensor(t._shape, dt)
                check(lib.pf_copy(t._d(), copy._d()))
                self._alive.append(copy)  # the buffer below points into it
                data, lo, hi = copy._storage.data, 0, t._numel
                for m, e in members:
                    e["offset"] = 0
                    if m is t:
                        e["stride"] = list(contiguous_strides(t._shape))
            else:
                data = st.data
                lo = min((t._offset for t in live), default=0)
                hi = max((t._offset + _span(t) for t in live), default=0)
                for m, e in members:
                    e["offset"] = min(max(m._offset - lo, 0), hi - lo)
            nbytes = (hi - lo) * isz
            buf = ffi.buffer(data + lo * isz, nbytes) if nbytes else b""
            if not _LITTLE and isz > 1 and nbytes:
                buf = np.frombuffer(buf, dtype=dt.np).byteswap().tobytes()
            pos += _pad(pos)
            storages.append({"dtype": dt.name, "nbytes": nbytes, "offset": pos, "crc32": _crc32(buf)})
            for m, e in members:  # what load would refuse is refused here: whatever save writes, load reads
                problem = _tensor_problem(e, storages[-1])
                if problem:
                    raise ValueError(f"cannot save a tensor of shape {list(m._shape)}: {problem}")
            chunks.append(buf)
            pos += nbytes
        return storages, chunks


def _fmt(path) -> str:
    """A location inside the saved object, as Python would index it: ``obj['model'][0]``.
    Paths are built as (parent, key) pairs and only formatted for an error message."""
    keys = []
    while isinstance(path, tuple):
        path, key = path
        keys.append(f"[{key!r}]")
    return path + "".join(reversed(keys))


def _span(t: Tensor) -> int:
    """Elements from the tensor's first to its last, inclusive (0 for an empty tensor)."""
    if not t._numel:
        return 0
    return sum((n - 1) * s for n, s in zip(t._shape, t._strides, strict=True)) + 1


def _crc32(buf) -> int:
    mv = memoryview(buf).cast("B")
    crc = 0
    for i in range(0, len(mv), _CHUNK):
        crc = zlib.crc32(mv[i : i + _CHUNK], crc)
    return crc


def _tensor_class(x: Tensor) -> str | None:
    """'Tensor', 'Parameter' (pyframe.nn's, or a subclass of it), or None for another Tensor subclass."""
    if type(x) is Tensor:
        return "Tensor"
    for c in type(x).__mro__:
        if c.__name__ == "Parameter" and c.__module__.startswith("pyframe."):
            return "Parameter"
    return None


def _check_json(x, path: str):
    """A copy of ``x`` as plain JSON (tuples become lists), or TypeError/ValueError naming the bad part."""
    t = type(x)
    if x is None or t is bool or t is str or t is int:
        return x
    if t is float:
        if not math.isfinite(x):
            raise ValueError(f"{path}: {x} is not valid JSON; metadata floats must be finite")
        return x
    if isinstance(x, (list, tuple)):
        return [_check_json(v, f"{path}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, dict):
        for k in x:
            if type(k) is not str:
                raise TypeError(f"{path}: metadata dict keys must be str, got {type(k).__name__} ({k!r})")
        return {k: _check_json(v, f"{path}[{k!r}]") for k, v in x.items()}
    raise TypeError(
        f"{path}: cannot store {_describe(x)} in metadata; metadata is JSON: dicts with str keys, lists, "
        "str, int, finite float, bool and None"
    )


def _read_exact(fh, n: int, what: str, source: str) -> bytes:
    parts, got = [], 0
    while got < n:
        b = fh.read(min(n - got, _CHUNK))
        if not b:
            break
        parts.append(b)
        got += len(b)
    if got < n:
        raise CheckpointError(f"{source}: truncated: expected {n} bytes of {what}, the file ends after {got}")
    return b"".join(parts)


def _check_zero(pad: bytes, where: str, source: str) -> None:
    if pad.count(0) != len(pad):
        raise CheckpointError(f"{source}: corrupted: nonzero bytes in the padding {where}")


def _read_header(fh, source: str, size: int | None) -> tuple[dict, int]:
    """The verified header, and the position where it ends."""
    first = fh.read(_PREAMBLE.size)
    if first[:4] == b"PK\x03\x04":
        raise CheckpointError(
            f"{source}: not a pyframe checkpoint: this is a zip file (a PyTorch checkpoint?); pyframe reads only "
            "its own format and never unpickles"
        )
    if first[:1] == b"\x80" and first[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise CheckpointError(f"{source}: not a pyframe checkpoint: this is a pickle, and pyframe never unpickles")
    if len(first) < len(MAGIC) or first[: len(MAGIC)] != MAGIC:
        if MAGIC.startswith(first) and first:
            raise CheckpointError(f"{source}: truncated: the file ends after {len(first)} bytes, inside the magic")
        if not first:
            raise CheckpointError(f"{source}: truncated: the file is empty")
        raise CheckpointError(
            f"{source}: not a pyframe checkpoint: it starts with {first[:8]!r}, expected the magic bytes {MAGIC!r}"
        )
    if len(first) < _PREAMBLE.size:
        raise CheckpointError(
            f"{source}: truncated: the file ends after {len(first)} bytes, inside the {_PREAMBLE.size}-byte preamble"
        )
    _, version, hcrc, hlen = _PREAMBLE.unpack(first)
    if version != FORMAT_VERSION:
        newer = " (written by a newer pyframe?)" if version > FORMAT_VERSION else ""
        raise CheckpointError(
            f"{source}: unsupported checkpoint format version {version}{newer}; this pyframe reads version "
            f"{FORMAT_VERSION}"
        )
    if size is not None and _PREAMBLE.size + hlen > size:
        raise CheckpointError(
            f"{source}: truncated: preamble says the header is {hlen} bytes, the file has "
            f"{size - _PREAMBLE.size} after the preamble"
        )
    if hlen > MAX_HEADER_BYTES:
        raise CheckpointError(
            f"{source}: refused: the header is {hlen} bytes, more than the {MAX_HEADER_BYTES} this pyframe reads "
            "(pyframe.serialization.format.MAX_HEADER_BYTES)"
        )
    hbytes = _read_exact(fh, hlen, "header", source)
    if zlib.crc32(hbytes) != hcrc:
        raise CheckpointError(f"{source}: corrupted: the header's CRC32 does not match (the header was altered)")
    try:
        header = json.loads(hbytes.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise CheckpointError(f"{source}: corrupted: the header is not valid JSON ({e})") from None
    except ValueError as e:  # e.g. a number with too many digits
        raise CheckpointError(f"{source}: corrupted: the header is not valid JSON ({e})") from None
    _validate_header(header, source)
    hend = _PREAMBLE.size + hlen
    if size is not None:
        have = size - hend - _pad(hend)
        if have < header["data_nbytes"]:
            raise CheckpointError(
                f"{source}: truncated: header says {header['data_nbytes']} bytes of tensor data, file has "
                f"{max(have, 0)}"
            )
    return header, hend


def _no_constant(name: str):
    raise CheckpointError(f"header holds the non-standard JSON constant {name}")


def _is_int(x, lo: int = 0, hi: int = _MAX_INT) -> bool:
    return type(x) is int and lo <= x < hi


def _validate_header(h, source: str) -> None:
    def bad(msg: str):
        raise CheckpointError(f"{source}: corrupted: {msg}")

    if type(h) is not dict:
        bad("the header is not a JSON object")
    for key in ("format", "metadata", "data_nbytes", "storages", "tensors", "object"):
        if key not in h:
            bad(f"the header has no {key!r}")
    if h["format"] != FORMAT_VERSION or type(h["format"]) is not int:
        bad(f"the header says format {h['format']!r}, the preamble says {FORMAT_VERSION}")
    if type(h["metadata"]) is not dict:
        bad("'metadata' is not a JSON object")
    if not _is_int(h["data_nbytes"]):
        bad(f"'data_nbytes' is {h['data_nbytes']!r}")
    if type(h["storages"]) is not list or type(h["tensors"]) is not list:
        bad("'storages' and 'tensors' must be lists")
    for key in ("storages", "tensors"):
        if len(h[key]) > MAX_ENTRIES:
            raise CheckpointError(
                f"{source}: refused: {len(h[key])} {key}, more than the {MAX_ENTRIES} this pyframe reads "
                "(pyframe.serialization.format.MAX_ENTRIES)"
            )
    end = 0
    for i, s in enumerate(h["storages"]):
        if type(s) is not dict:
            bad(f"storages[{i}] is not an object")
        dt = _dtype._BY_NAME.get(s.get("dtype")) if isinstance(s.get("dtype"), str) else None
        if dt is None:
            bad(f"storages[{i}] has unknown dtype {s.get('dtype')!r}")
        nbytes, offset, crc = s.get("nbytes"), s.get("offset"), s.get("crc32")
        if not _is_int(nbytes) or nbytes % dt.itemsize:
            bad(f"storages[{i}] has nbytes {nbytes!r}, not a multiple of {dt.itemsize} ({dt.name})")
        if not _is_int(offset) or offset % ALIGN or offset < end:
            bad(f"storages[{i}] has offset {offset!r}; offsets are multiples of {ALIGN} after the previous storage")
        if not _is_int(crc, 0, 1 << 32):
            bad(f"storages[{i}] has crc32 {crc!r}")
        end = offset + nbytes
    if end != h["data_nbytes"]:
        bad(f"'data_nbytes' is {h['data_nbytes']} but the storages end at byte {end}")
    for i, t in enumerate(h["tensors"]):
        if type(t) is not dict:
            bad(f"tensors[{i}] is not an object")
        if t.get("class") not in _TENSOR_CLASSES:
            bad(f"tensors[{i}] has class {t.get('class')!r}; a checkpoint may only name {', '.join(_TENSOR_CLASSES)}")
        si = t.get("storage")
        if not _is_int(si, 0, len(h["storages"])):
            bad(f"tensors[{i}] names storage {si!r}, the file has {len(h['storages'])}")
        problem = _tensor_problem(t, h["storages"][si])
        if problem:
            bad(f"tensors[{i}] {problem}")


def _tensor_problem(t: dict, st: dict) -> str | None:
    """What is wrong with the tensor entry ``t`` over the (checked) storage entry ``st``, or None. The one rule
    for both sides: save checks every entry it writes with it, load every entry it reads."""
    shape, stride, off = t.get("shape"), t.get("stride"), t.get("offset")
    if t.get("class") not in _TENSOR_CLASSES:
        return f"has class {t.get('class')!r}; a checkpoint may only name {', '.join(_TENSOR_CLASSES)}"
    if type(shape) is not list or len(shape) > MAX_DIMS or not all(_is_int(n, 0, _MAX_DIM) for n in shape):
        return f"has shape {shape!r}"
    if type(stride) is not list or len(stride) != len(shape) or not all(_is_int(n, 0, _MAX_DIM) for n in stride):
        return f"has stride {stride!r} for shape {shape!r}"
    if not _is_int(off):
        return f"has offset {off!r}"
    if type(t.get("requires_grad")) is not bool:
        return f"has requires_grad {t.get('requires_grad')!r}"
    dt = _dtype._BY_NAME[st["dtype"]]
    if t["requires_grad"] and not dt.is_floating_point:
        return f"is {dt.name} but requires grad"
    numel = math.prod(shape)
    if numel >= _MAX_DIM:
        return f"has shape {shape!r}, more than 2**63 elements"
    have = st["nbytes"] // dt.itemsize
    last = off + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if numel else off - 1
    if last >= have or off > have:
        return f"(shape {shape}, stride {stride}, offset {off}) reaches element {last}, but its storage has {have}"
    return None


def _read_storages(
    fh, source: str, header: dict, hend: int, size: int | None, is_path: bool, use_mmap: bool = False
) -> list:
    """(Storage, dtype) for each storage entry, read into new C memory and checked against its CRC32.

    ``size`` (None for a stream of unknown length) has been checked against the header's sizes, so the
    memory allocated is memory the file fills; a stream is read in pieces before allocating, so that a
    lying header fails at the end of the stream instead of allocating what it claims. With ``use_mmap``
    (a file on disk) the storages are views of the file mapped copy-on-write, read only when used."""
    _check_zero(_read_exact(fh, _pad(hend), "padding", source), "after the header", source)
    if use_mmap:
        return _map_storages(fh, source, header, size, is_path)
    data_nbytes, pos, out = header["data_nbytes"], 0, []
    for i, s in enumerate(header["storages"]):
        gap = s["offset"] - pos
        if gap:
            _check_zero(_read_exact(fh, gap, "padding", source), f"before storage {i}", source)
        nbytes = s["nbytes"]
        raw = _read_exact(fh, nbytes, f"tensor data in storage {i}", source) if size is None else None
        data = alloc(nbytes)
        mv = memoryview(ffi.buffer(data, nbytes) if nbytes else b"").cast("B")
        if raw:
            mv[:] = raw
            del raw
        got = nbytes if size is None else 0
        while got < nbytes:
            n = fh.readinto(mv[got : min(nbytes, got + _CHUNK)])
            if not n:
                raise CheckpointError(
                    f"{source}: truncated: header says {data_nbytes} bytes of tensor data, file has {s['offset'] + got}"
                )
            got += n
        if _crc32(mv) != s["crc32"]:
            raise CheckpointError(
                f"{source}: corrupted: CRC32 mismatch in storage {i} ({s['dtype']}, {nbytes} bytes at data "
                f"offset {s['offset']}); the tensor data was altered"
            )
        dt = _dtype._BY_NAME[s["dtype"]]
        if dt is _dtype.bool_ and nbytes and np.frombuffer(mv, dtype=np.uint8).max() > 1:
            # the CRC only proves the bytes are the writer's; a bool byte other than 0 or 1 would
            # make sum() and == lie, so every value must also be valid for its dtype
            bad = int(np.flatnonzero(np.frombuffer(mv, dtype=np.uint8) > 1)[0])
            raise CheckpointError(
                f"{source}: corrupted: storage {i} is bool but byte {bad} holds {mv[bad]}; bool bytes are 0 or 1"
            )
        if not _LITTLE and dt.itemsize > 1 and nbytes:
            np.frombuffer(mv, dtype=dt.np).byteswap(inplace=True)
        out.append((Storage(data, nbytes), dt))
        pos = s["offset"] + nbytes
    if is_path:
        extra = size - hend - _pad(hend) - data_nbytes
        if extra > 0:
            raise CheckpointError(f"{source}: corrupted: {extra} unexpected bytes after the tensor data")
    return out


def _map_storages(fh, source: str, header: dict, size: int | None, is_path: bool) -> list:
    """``_read_storages`` for ``load(mmap=True)``: as torch's mmap load, the bytes are not read, so the
    CRC32s are not checked (bool storages are, as a wrong byte there would make comparisons lie)."""
    import mmap as _mmap

    try:
        fileno = fh.fileno()
    except (AttributeError, OSError, ValueError):
        fileno = None
    if size is None or fileno is None or not _LITTLE:
        why = "a file on disk" if _LITTLE else "a little-endian machine"
        raise CheckpointError(f"{source}: mmap=True needs {why}; load it without mmap")
    base, data_nbytes = fh.tell(), header["data_nbytes"]
    have = os.fstat(fileno).st_size - base
    if have < data_nbytes or (is_path and have > data_nbytes):
        what = "truncated" if have < data_nbytes else "corrupted"
        raise CheckpointError(f"{source}: {what}: header says {data_nbytes} bytes of tensor data, file has {have}")
    mm = _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY) if data_nbytes else None
    out = []
    for i, s in enumerate(header["storages"]):
        nbytes, dt = s["nbytes"], _dtype._BY_NAME[s["dtype"]]
        if s["offset"] + nbytes > data_nbytes:
            raise CheckpointError(f"{source}: truncated: storage {i} runs past the end of the tensor data")
        if not nbytes:
            out.append((Storage(alloc(0), 0), dt))
            continue
        arr = np.frombuffer(mm, dtype=np.uint8, count=nbytes, offset=base + s["offset"])
        if dt is _dtype.bool_ and arr.max() > 1:
            raise CheckpointError(f"{source}: corrupted: storage {i} is bool but holds a byte other than 0 and 1")
        out.append((Storage(ffi.cast("char *", arr.__array_interface__["data"][0]), nbytes, owner=arr), dt))
    return out


def _build_tensors(entries: list, storages: list) -> list:
    param_cls = None
    out = []
    for e in entries:
        st, dt = storages[e["storage"]]
        shape, stride = tuple(e["shape"]), tuple(e["stride"])
        t = _new(st, shape, stride, e["offset"], dt)
        if e["class"] == "Parameter":
            if param_cls is None:
                param_cls = _parameter_class()
            if param_cls is not False:
                t = param_cls(t, requires_grad=e["requires_grad"])
        t.requires_grad = e["requires_grad"]
        out.append(t)
    return out


def _parameter_class():
    """pyframe.nn's Parameter, or False when pyframe.nn is not available (Parameters load as Tensors)."""
    for modname in ("pyframe.nn.parameter", "pyframe.nn"):
        try:
            cls = getattr(importlib.import_module(modname), "Parameter", None)
        except ImportError:
            continue
        if isinstance(cls, type) and issubclass(cls, Tensor):
            return cls
    return False


class _Decoder:
    """The JSON form back into Python objects, checking every tag."""

    def __init__(self, tensors: list, source: str, entries: list | None = None) -> None:
        self.tensors = tensors
        self.source = source
        self.entries = entries
        self.arrays: dict[int, np.ndarray] = {}  # tensor index -> the array it loaded as
        self.as_tensor: set[int] = set()

    def bad(self, path, msg: str):
        raise CheckpointError(f"{self.source}: corrupted: {_fmt(path)}: {msg}")

    def decode(self, x, path, depth: int = 0):
        t = type(x)
        if x is None or t in (bool, int, float, str):
            return x
        container = t is list or (t is dict and len(x) == 1 and next(iter(x)) in _CONTAINER_TAGS)
        if container and depth >= MAX_DEPTH:
            raise CheckpointError(
                f"{self.source}: refused: the object nests more than {MAX_DEPTH} containers deep (pyframe "
                "never writes such a file)"
            )
        if t is list:
            return [self.decode(v, (path, i), depth + 1) for i, v in enumerate(x)]
        if t is not dict or len(x) != 1:
            self.bad(path, "expected a value or an object with one tag")
        ((tag, v),) = x.items()
        if tag == "$tensor":
            if not _is_int(v, 0, len(self.tensors)):
                self.bad(path, f"tensor reference {v!r}, the file has {len(self.tensors)} tensors")
            if v in self.arrays:
                self.bad(path, f"tensor {v} is also loaded as a NumPy array; the two would share memory")
            self.as_tensor.add(v)
            return self.tensors[v]
        if tag == "$ndarray":
            return self._ndarray(v, path)
        if tag == "$tuple":
            if type(v) is not list:
                self.bad(path, "$tuple needs a list")
            return tuple(self.decode(e, (path, i), depth + 1) for i, e in enumerate(v))
        if tag == "$float":
            if v not in ("nan", "inf", "-inf"):
                self.bad(path, f"$float {v!r}; expected 'nan', 'inf' or '-inf'")
            return float(v)
        if tag in ("$dict", "$odict", "$counter"):
            out = {"$dict": dict, "$odict": collections.OrderedDict, "$counter": collections.Counter}[tag]()
            if type(v) is dict:
                items = v.items()
            elif type(v) is list:
                items = []
                for i, kv in enumerate(v):
                    if type(kv) is not list or len(kv) != 2 or type(kv[0]) not in (str, int):
                        self.bad(path, f"item {i} of {tag} is not a [str or int key, value] pair")
                    items.append(kv)
            else:
                self.bad(path, f"{tag} needs an object or a list of pairs")
            for k, val in items:
                if k in out:
                    self.bad(path, f"duplicate key {k!r}")
                out[k] = self.decode(val, (path, k), depth + 1)
            return out
        self.bad(path, f"unknown tag {tag!r}; expected one of {', '.join(_TAGS)}")

    def _ndarray(self, v, path) -> np.ndarray:
        """A NumPy array: as written, a C-contiguous Tensor entry of its own storage, used by nothing else."""
        if not _is_int(v, 0, len(self.tensors)):
            self.bad(path, f"array reference {v!r}, the file has {len(self.tensors)} tensors")
        if v in self.arrays:
            return self.arrays[v]
        if v in self.as_tensor:
            self.bad(path, f"tensor {v} is also loaded as a tensor; the two would share memory")
        if self.entries is not None:
            e = self.entries[v]
            if e["class"] != "Tensor" or e["requires_grad"]:
                self.bad(path, f"array {v} is stored as a {e['class']} requiring grad={e['requires_grad']}")
            want = contiguous_strides(e["shape"])
            if any(n > 1 and s != w for n, s, w in zip(e["shape"], e["stride"], want, strict=True)):
                self.bad(
                    path,
                    f"array {v} has strides {e['stride']} for shape {e['shape']}; arrays are stored C-contiguous "
                    f"(strides {list(want)})",
                )
            if sum(1 for o in self.entries if o["storage"] == e["storage"]) != 1:
                self.bad(path, f"array {v} shares its storage with another tensor; arrays are stored on their own")
        arr = self.arrays[v] = self.tensors[v].detach()._elements()
        return arr


_CONTAINER_TAGS = ("$tuple", "$dict", "$odict", "$counter")
