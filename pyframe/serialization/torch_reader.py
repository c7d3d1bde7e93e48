"""Reading files written by ``torch.save``: the zip format (torch 1.6 and later) and the legacy single-pickle
format. The pickle goes through ``unpickler.py`` (nothing it names is imported or called); storages are read
into new memory, or memory-mapped copy-on-write with ``mmap=True``, after their sizes have been checked
against the file, so a file cannot make ``load`` allocate more than it holds. Every zip member's CRC32 is
checked (except with ``mmap=True``, which reads nothing until it is used)."""

from __future__ import annotations

import collections
import encodings.cp437  # noqa: F401 - zipfile decodes member names with it: imported here, never while loading
import io
import mmap as _mmap
import os
import struct
import sys
import types
import zipfile
import zlib

import numpy as np

from pyframe import _dtype
from pyframe.serialization.format import CheckpointError, _fmt
from pyframe.serialization.unpickler import (
    TORCH_DTYPES,
    FullUnpickler,
    LoadedStorage,
    TorchName,
    Unsupported,
    WeightsOnlyError,
    WeightsUnpickler,
    _NdarrayBuilder,
    _NpDtype,
)
from pyframe.tensor import Tensor, share_numpy

__all__ = ["ZIP_MAGIC", "LEGACY_MAGIC", "load_torch", "MAX_PICKLE_BYTES", "MAX_MEMBERS"]

ZIP_MAGIC = b"PK\x03\x04"

# pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2): the first bytes of torch's legacy format
LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."

LEGACY_PROTOCOL = 1001

MAX_PICKLE_BYTES = 1 << 26  # data.pkl holds the structure, not the tensor data: 64 MiB is far beyond any

MAX_MEMBERS = 1 << 20

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader


def _err(source: str, msg: str) -> CheckpointError:
    return CheckpointError(f"{source}: {msg}")


class _Location:
    """What ``map_location`` asks for, as a check on each storage's saved location."""

    def __init__(self, map_location) -> None:
        self.map = map_location

    def check(self, location: str, source: str, storage) -> None:
        m = self.map
        if m is None:
            target = location
        elif callable(m) and not isinstance(m, (str, dict)):
            if m(storage, location) is not storage:
                raise _err(source, "map_location returned another storage; pyframe loads storages on the CPU only")
            return
        elif isinstance(m, dict):
            target = m.get(location, location)
        else:
            target = m
        target = str(target)
        if target != "cpu" and not target.startswith("cpu:"):
            raise _err(
                source,
                f"a storage was saved on {location!r} and would be loaded on {target!r}; pyframe runs on the CPU "
                "only: pass map_location='cpu'",
            )


class _Zip:
    """The members of a torch zip checkpoint, checked: no duplicate names, one ``data.pkl``, storages stored
    uncompressed inside the file."""

    def __init__(self, fh, source: str, use_mmap: bool) -> None:
        self.fh, self.source = fh, source
        try:
            self.zf = zipfile.ZipFile(fh)
            infos = self.zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error) as e:
            raise _err(source, f"corrupted: not a readable zip file ({e})") from None
        except NotImplementedError as e:
            raise _err(source, f"corrupted: {e}") from None
        if len(infos) > MAX_MEMBERS:
            raise _err(source, f"refused: {len(infos)} zip members")
        self.by_name: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            if info.filename in self.by_name:
                raise _err(source, f"corrupted: the zip member {info.filename!r} appears twice")
            self.by_name[info.filename] = info
        pkls = sorted((n for n in self.by_name if n.endswith("/data.pkl") or n == "data.pkl"), key=len)
        if not pkls:
            raise _err(source, "corrupted: a zip file without a data.pkl member (not a torch checkpoint)")
        if "constants.pkl" in {n.rpartition("/")[2] for n in self.by_name}:
            raise _err(source, "a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
        self.prefix = pkls[0][: -len("data.pkl")]
        self.size = fh.seek(0, io.SEEK_END)
        self.mm = None
        if use_mmap:
            try:
                self.mm = _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_COPY) if self.size else None
            except (OSError, ValueError, AttributeError, io.UnsupportedOperation) as e:
                raise _err(source, f"mmap=True needs a file on disk ({e})") from None

    def member(self, name: str) -> zipfile.ZipInfo | None:
        return self.by_name.get(self.prefix + name)

    def read_small(self, name: str, limit: int) -> bytes | None:
        info = self.member(name)
        if info is None:
            return None
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _err(
                self.source, f"refused: the member {info.filename!r} uses compression method {info.compress_type}"
            )
        if info.file_size > limit:
            raise _err(self.source, f"refused: the member {info.filename!r} is {info.file_size} bytes (limit {limit})")
        try:
            with self.zf.open(info) as f:
                data = f.read(info.file_size + 1)  # never inflate more than the directory declares
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError) as e:
            raise _err(self.source, f"corrupted: the member {info.filename!r} cannot be read ({e})") from None
        if len(data) != info.file_size:
            raise _err(self.source, f"corrupted: the member {info.filename!r} does not hold its declared size")
        return data

    def data_start(self, info: zipfile.ZipInfo) -> int:
        fh = self.fh
        fh.seek(info.header_offset)
        raw = fh.read(_LOCAL_HEADER.size)
        if len(raw) != _LOCAL_HEADER.size:
            raise _err(self.source, f"truncated: the local header of {info.filename!r} is cut short")
        fields = _LOCAL_HEADER.unpack(raw)
        if fields[0] != b"PK\x03\x04":
            raise _err(self.source, f"corrupted: the local header of {info.filename!r} has a bad signature")
        name = fh.read(fields[10])
        if name.decode("utf-8", "replace") != info.filename and name.decode("cp437", "replace") != info.filename:
            raise _err(self.source, f"corrupted: the local header of {info.filename!r} names {name!r}")
        return info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11]

    def storage_bytes(self, key: str, nbytes: int) -> np.ndarray:
        """The storage member's bytes as a writable uint8 array (copied, or a copy-on-write mapping)."""
        info = self.member(f"data/{key}")
        if info is None:
            raise _err(self.source, f"corrupted: the storage {key!r} has no zip member data/{key}")
        if info.file_size != nbytes:
            raise _err(
                self.source,
                f"corrupted: the storage {key!r} declares {nbytes} bytes, its zip member holds {info.file_size}",
            )
        if info.compress_type != zipfile.ZIP_STORED:
            raise _err(self.source, f"refused: the storage member data/{key} is compressed (torch stores them as is)")
        if info.compress_size != info.file_size:
            raise _err(self.source, f"corrupted: the stored member data/{key} has two sizes")
        start = self.data_start(info)
        if start + nbytes > self.size:
            raise _err(self.source, f"truncated: the storage {key!r} runs past the end of the file")
        if self.mm is not None and start % 64 == 0:
            return np.frombuffer(self.mm, dtype=np.uint8, count=nbytes, offset=start)
        arr = np.empty(nbytes, dtype=np.uint8)
        self.fh.seek(start)
        got = self.fh.readinto(memoryview(arr)) if nbytes else 0
        if got != nbytes:
            raise _err(self.source, f"truncated: the storage {key!r} is cut short")
        if self.mm is None and zlib.crc32(arr) != info.CRC:
            raise _err(self.source, f"corrupted: CRC32 mismatch in the storage member data/{key}")
        return arr


class _Storages:
    """``persistent_load`` for both formats: each storage id checked and turned into a ``LoadedStorage``."""

    def __init__(self, source: str, location: _Location, fetch, swap: bool) -> None:
        self.source, self.location, self.fetch, self.swap = source, location, fetch, swap
        self.roots: dict[str, LoadedStorage] = {}

    def __call__(self, pid):
        src = self.source
        if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
            raise WeightsOnlyError(f"{src}: Only persistent_load of storage is allowed, but got {pid!r:.80}")
        if len(pid) not in (5, 6):
            raise _err(src, f"corrupted: a storage id with {len(pid)} fields")
        stype, key, location, numel = pid[1:5]
        view = pid[5] if len(pid) == 6 else None
        if isinstance(location, bytes):
            location = location.decode("ascii", "replace")
        if not isinstance(stype, TorchName) or stype.dtype is None:
            raise _err(src, f"corrupted: a storage of type {stype!r}")
        if type(key) is not str or type(location) is not str or type(numel) is not int or numel < 0:
            raise _err(src, f"corrupted: the storage id {pid!r:.120}")
        name = stype.dtype
        dt = TORCH_DTYPES[name][1]
        if dt is None:
            return LoadedStorage(None, name, numel, key, 0)
        nbytes = numel * dt.itemsize
        root = self.roots.get(key)
        if root is None:
            arr = self.fetch(key, nbytes)
            if dt is _dtype.bool_ and arr.size and arr.max() > 1:
                raise _err(src, f"corrupted: the bool storage {key!r} holds a byte other than 0 and 1")
            if self.swap and dt.itemsize > 1:
                arr = arr.view(dt.np).byteswap().view(np.uint8)
            t = share_numpy(arr.view(dt.np), dt)
            root = self.roots[key] = LoadedStorage(t._storage, name, numel, key, nbytes)
            root.array = arr
            self.location.check(location, src, root)
        elif nbytes > root.nbytes:
            raise _err(src, f"corrupted: the storage {key!r} is read as {nbytes} bytes, it has {root.nbytes}")
        out = root if name == root.dtype else LoadedStorage(root.storage, name, numel, key, root.nbytes)
        if view is not None:
            out = self._view(out, view)
        return out

    def _view(self, root: LoadedStorage, view) -> LoadedStorage:
        """A legacy storage view: (view key, offset, size) in elements of the root's dtype."""
        if type(view) is not tuple or len(view) != 3 or not all(type(v) is int and v >= 0 for v in view[1:]):
            raise _err(self.source, f"corrupted: a storage view {view!r:.80}")
        vkey, off, size = view
        if off + size > root.numel:
            raise _err(self.source, f"corrupted: a storage view reaches past its storage {root.key!r}")
        dt = TORCH_DTYPES[root.dtype][1]
        base = self.roots[root.key].array
        isz = dt.itemsize
        t = share_numpy(base[off * isz : (off + size) * isz].view(dt.np), dt)
        return LoadedStorage(t._storage, root.dtype, size, f"{root.key}[{off}:{off + size}]", size * isz)


def _check_seekable(fh):
    try:
        if fh.seekable():
            return fh
    except (AttributeError, OSError, ValueError):
        pass
    return io.BytesIO(fh.read())


def load_torch(fh, source: str, head: bytes, *, map_location, weights_only, use_mmap, encoding="ASCII"):
    """The object in the torch checkpoint ``fh`` (positioned at its start; ``head`` its first bytes)."""
    location = _Location(map_location)
    if head[:4] == ZIP_MAGIC:
        fh = _check_seekable(fh)
        z = _Zip(fh, source, use_mmap)
        pkl = z.read_small("data.pkl", MAX_PICKLE_BYTES)
        version = z.read_small("version", 64) or z.read_small(".data/version", 64)
        if version is None:
            raise _err(source, "corrupted: the torch zip file has no version member")
        try:
            v = int(version.strip())
        except ValueError:
            raise _err(source, f"corrupted: the version member holds {version!r:.40}") from None
        if not 1 <= v <= 10:
            raise _err(source, f"unsupported torch file format version {v} (written by a newer torch?)")
        order = z.read_small("byteorder", 16)
        if order not in (None, b"little", b"big"):
            raise _err(source, f"corrupted: the byteorder member holds {order!r:.40}")
        swap = (order or b"little").decode() != sys.byteorder
        storages = _Storages(source, location, z.storage_bytes, swap)
        return _unpickle(pkl, storages, source, weights_only, encoding)
    if use_mmap:
        raise _err(source, "mmap can only be used with files saved by torch.save(_use_new_zipfile_serialization=True)")
    return _load_legacy(fh.read(), source, location, weights_only, encoding)


def _load_legacy(data: bytes, source: str, location: _Location, weights_only, encoding):
    """magic, protocol, sys_info, the object, the storage keys, then each storage: int64 length and bytes."""
    mv = memoryview(data)
    pos = 0

    def plain(what: str):
        nonlocal pos
        u = WeightsUnpickler(mv[pos:], _no_storage, encoding=encoding)
        try:
            out = u.load()
        except CheckpointError as e:
            raise _err(source, f"{e} (in the {what})") from None
        pos += u.pos
        return out

    if plain("magic number") != 0x1950A86A20F9469CFC6C:
        raise _err(source, "not a torch checkpoint: bad magic number")
    if plain("protocol version") != LEGACY_PROTOCOL:
        raise _err(source, "unsupported torch legacy protocol version")
    info = plain("system information")
    if type(info) is not dict:
        raise _err(source, "corrupted: the system information is not a dict")
    little = info.get("little_endian", True)
    pending: dict[str, np.ndarray] = {}
    budget = [len(data)]

    def fetch(key: str, nbytes: int) -> np.ndarray:
        budget[0] -= nbytes
        if budget[0] < 0:
            raise _err(source, "truncated: the storages declared are larger than the file")
        arr = pending[key] = np.zeros(nbytes, dtype=np.uint8)
        return arr

    storages = _Storages(source, location, fetch, swap=False)
    start = pos
    sub = mv[pos:]
    if weights_only is False:
        f = io.BytesIO(sub)
        obj = _full(f, storages, source, encoding)
        pos += f.tell()
    else:
        u = WeightsUnpickler(sub, storages, encoding=encoding)
        obj = _checked_load(u, source)
        pos += u.pos
    del start
    keys = plain("storage keys")
    if type(keys) is not list or not all(type(k) is str for k in keys) or len(set(keys)) != len(keys):
        raise _err(source, "corrupted: the storage key list")
    if set(keys) != set(pending):
        raise _err(source, "corrupted: the storage key list does not match the storages the object uses")
    for key in keys:
        arr = pending[key]
        root = storages.roots[key]
        if pos + 8 > len(data):
            raise _err(source, f"truncated: the file ends before storage {key!r}")
        (n,) = struct.unpack_from("<q", data, pos)
        pos += 8
        if n != root.numel:
            raise _err(source, f"corrupted: storage {key!r} declares {root.numel} elements, its data {n}")
        if pos + arr.size > len(data):
            raise _err(source, f"truncated: the file ends inside storage {key!r}")
        arr[:] = np.frombuffer(data, dtype=np.uint8, count=arr.size, offset=pos)
        pos += arr.size
        dt = TORCH_DTYPES[root.dtype][1]
        if dt is _dtype.bool_ and arr.size and arr.max() > 1:
            raise _err(source, f"corrupted: the bool storage {key!r} holds a byte other than 0 and 1")
        if (not little) and dt.itemsize > 1:
            arr.view(dt.np).byteswap(inplace=True)
    return resolve(obj, source)


def _no_storage(pid):
    raise CheckpointError("corrupted: a storage id outside the object pickle")


def _checked_load(u: WeightsUnpickler, source: str):
    try:
        return u.load()
    except WeightsOnlyError as e:
        err = WeightsOnlyError(f"{source}: {e}")
        err.global_name = getattr(e, "global_name", None)
        raise err from None
    except CheckpointError as e:
        if str(e).startswith(source):
            raise
        raise _err(source, str(e)) from None
    except RecursionError:
        raise _err(source, "corrupted: the pickle nests too deeply") from None
    except MemoryError:
        raise _err(source, "refused: the pickle asks for more memory than there is") from None


def _full(f, storages, source, encoding):
    try:
        return FullUnpickler(f, storages, encoding=encoding).load()
    except CheckpointError:
        raise
    except (EOFError, IndexError, KeyError, ValueError, TypeError, AttributeError) as e:
        raise _err(source, f"corrupted: the pickle cannot be read ({type(e).__name__}: {e})") from None


def _unpickle(pkl: bytes, storages, source: str, weights_only, encoding):
    if weights_only is False:
        obj = _full(io.BytesIO(pkl), storages, source, encoding)
    else:
        obj = _checked_load(WeightsUnpickler(pkl, storages, encoding=encoding), source)
    return resolve(obj, source)


def _leaf(x, path, source: str):
    if isinstance(x, Unsupported):
        raise _err(source, f"{_fmt(path)} is {x.what}, which pyframe cannot load")
    if isinstance(x, _NdarrayBuilder):
        if x.array is None:
            raise _err(source, f"corrupted: {_fmt(path)}: a NumPy array without its data")
        return x.array
    if isinstance(x, _NpDtype):
        return x.dtype
    if isinstance(x, (LoadedStorage, TorchName)):
        raise _err(source, f"{_fmt(path)} is a bare {x!r}, which pyframe cannot load (save tensors instead)")
    return x


_CONTAINERS = (list, tuple, dict, collections.OrderedDict, collections.Counter, set, frozenset)


def resolve(root, source: str = "<file>"):
    """Check every value the pickle built, at any depth (no recursion): a value pyframe cannot load raises an
    error naming its key; NumPy arrays under construction become arrays."""
    order, seen, stack = [], set(), [(root, "obj")]
    while stack:
        x, path = stack.pop()
        if type(x) not in _CONTAINERS and not _has_state(x):
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        order.append((x, path))
        for k, v in _items(x):
            stack.append((v, (path, k)))
    done: dict[int, object] = {}
    for x, path in reversed(order):
        t = type(x)
        if t is list:
            for i, v in enumerate(x):
                x[i] = _leaf(done.get(id(v), v), (path, i), source)
        elif t is tuple:
            new = tuple(_leaf(done.get(id(v), v), (path, i), source) for i, v in enumerate(x))
            if any(a is not b for a, b in zip(new, x, strict=True)):
                done[id(x)] = new
        elif t in (set, frozenset):
            for v in x:
                _leaf(v, (path, "<item>"), source)
        else:
            d = x if isinstance(x, dict) else vars(x)
            for k in list(d):
                _leaf(k, (path, k), source)
                v = d[k]
                d[k] = _leaf(done.get(id(v), v), (path, k), source)
    return _leaf(done.get(id(root), root), "obj", source)


def _has_state(x) -> bool:
    """A dict, or an instance (of a class loaded by ``weights_only=False``) whose attributes are walked too."""
    if isinstance(x, dict):
        return True
    if isinstance(x, (type, Tensor, np.ndarray, types.ModuleType, types.FunctionType, types.MethodType)):
        return False
    return type(x).__module__ != "builtins" and type(getattr(x, "__dict__", None)) is dict


def _items(x):
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, (list, tuple)):
        return list(enumerate(x))
    if isinstance(x, (set, frozenset)):
        return [("<item>", v) for v in x]
    return list(vars(x).items())


def is_path(f) -> bool:
    return isinstance(f, (str, bytes, os.PathLike))
