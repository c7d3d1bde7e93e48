"""Writing torch's zip checkpoint format: ``pyframe.save(obj, f, format="torch")``, and whole-object saves.

The layout is the one ``torch.save`` writes: ``archive/data.pkl`` (a protocol-2 pickle), ``.format_version``,
``.storage_alignment``, ``byteorder``, ``data/<key>`` per storage (stored uncompressed, its bytes starting on
a multiple of 64 in the file), ``version`` and ``.data/serialization_id``. In the pickle a tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())`` and a
Parameter ``torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())``; storages are persistent
ids ``('storage', torch.FloatStorage, key, 'cpu', numel)``. The names are written as text: torch is never
imported. Anything else in the object is pickled as Python pickles it (a Module, for a whole-object save),
which ``torch.load(weights_only=True)`` and ``pyframe.load`` refuse unless ``weights_only=False``.
"""

from __future__ import annotations

import collections
import io
import pickle
import secrets
import struct
import sys
import zipfile

from pyframe import _device, _dtype
from pyframe.serialization.unpickler import PYFRAME_TO_TORCH, TORCH_DTYPES
from pyframe.tensor import Size, Tensor, _new

__all__ = ["write_torch"]


class _Global:
    """A name written into the pickle as ``GLOBAL module name`` (torch's functions and classes)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable; this one is only ever written
        raise TypeError(f"{self.module}.{self.name} is a name in a torch file, not a function")


_GLOBALS: dict[str, _Global] = {}


def _g(full: str) -> _Global:
    g = _GLOBALS.get(full)
    if g is None:
        module, _, name = full.rpartition(".")
        g = _GLOBALS[full] = _Global(module, name)
    return g


class _StorageRef:
    __slots__ = ("storage", "dtype", "key")

    def __init__(self, storage, dtype, key: str) -> None:
        self.storage, self.dtype, self.key = storage, dtype, key


def _is_parameter(t: Tensor) -> bool:
    return any(c.__name__ == "Parameter" and c.__module__.startswith("pyframe.") for c in type(t).__mro__)


class _Pickler(pickle._Pickler):  # the Python pickler: its save_global can write a name without importing it
    def __init__(self, file) -> None:
        super().__init__(file, protocol=2)
        self.storages: dict[int, _StorageRef] = {}
        self._alive: list = []

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            dt = obj.dtype
            storage_class = TORCH_DTYPES[PYFRAME_TO_TORCH[dt.name]][0]
            return ("storage", _g(f"torch.{storage_class}"), obj.key, "cpu", obj.storage.nbytes // dt.itemsize)
        return None

    def _storage(self, t: Tensor) -> _StorageRef:
        ref = self.storages.get(id(t._storage))
        if ref is None:
            ref = self.storages[id(t._storage)] = _StorageRef(t._storage, t.dtype, str(len(self.storages)))
            self._alive.append(t._storage)
        elif ref.dtype is not t.dtype:
            raise RuntimeError(
                "Cannot save multiple tensors or storages that view the same data as different types "
                f"({ref.dtype.name} and {t.dtype.name})"
            )
        return ref

    def reducer_override(self, obj):
        t = type(obj)
        if t is _Global:
            return obj.name  # a str: pickle calls save_global, below
        if isinstance(obj, Tensor):
            if t is not Tensor and not _is_parameter(obj):
                raise TypeError(
                    f"cannot save a {t.__name__}, a Tensor subclass, in torch's format; save x.detach() instead"
                )
            ref = self._storage(obj)
            if t is not Tensor:
                data = _new(obj._storage, obj._shape, obj._strides, obj._offset, obj.dtype)
                self._alive.append(data)
                return (_g("torch._utils._rebuild_parameter"), (data, obj.requires_grad, collections.OrderedDict()))
            args = (ref, obj._offset, tuple(obj._shape), tuple(obj._strides), obj.requires_grad)
            return (_g("torch._utils._rebuild_tensor_v2"), (*args, collections.OrderedDict()))
        if t is _dtype.dtype:
            return PYFRAME_TO_TORCH[obj.name]  # a str: written by save_global as GLOBAL torch float32
        if t is _device.device:
            return (_g("torch.device"), (str(obj),))
        if t is Size:
            return (_g("torch.Size"), (tuple(obj),))
        return NotImplemented

    def save_global(self, obj, name=None):
        if type(obj) is _dtype.dtype:
            obj = _g(f"torch.{PYFRAME_TO_TORCH[obj.name]}")
        if type(obj) is _Global:
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
            self.memoize(obj)
            return
        super().save_global(obj, name)


def _pad_extra(pos: int, name: str) -> bytes:
    """A zip extra field ('FB', as torch writes it) that makes the member's data start on a multiple of 64."""
    k = -(pos + 30 + len(name.encode()) + 4) % 64
    return b"FB" + struct.pack("<H", k) + b"Z" * k


def _storage_bytes(st, dt) -> memoryview:
    n = st.nbytes // dt.itemsize
    if not n:
        return memoryview(b"")
    arr = _new(st, (n,), (1,), 0, dt)._elements()
    return memoryview(arr).cast("B")


def write_torch(obj, fh) -> None:
    """Write ``obj`` to the binary file ``fh`` in torch's zip format."""
    pkl = io.BytesIO()
    p = _Pickler(pkl)
    try:
        p.dump(obj)
    except RecursionError:
        raise ValueError("obj: nested too deeply to save (deeper than Python's recursion limit allows)") from None
    records = [("data.pkl", pkl.getvalue()), (".format_version", b"1"), (".storage_alignment", b"64")]
    records.append(("byteorder", sys.byteorder.encode()))
    records += [(f"data/{ref.key}", (ref.storage, ref.dtype)) for ref in p.storages.values()]
    records += [("version", b"3\n"), (".data/serialization_id", str(secrets.randbits(128)).zfill(40).encode())]
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            info = zipfile.ZipInfo(f"archive/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.extra = _pad_extra(zf.start_dir, info.filename)
            if isinstance(data, bytes):
                zf.writestr(info, data)
                continue
            buf = _storage_bytes(*data)
            info.file_size = len(buf)
            info.extra = _pad_extra(zf.start_dir, info.filename) if len(buf) * 1.05 <= zipfile.ZIP64_LIMIT else b""
            with zf.open(info, "w", force_zip64=len(buf) * 1.05 > zipfile.ZIP64_LIMIT) as w:
                for i in range(0, len(buf), 1 << 24):
                    w.write(buf[i : i + (1 << 24)])
