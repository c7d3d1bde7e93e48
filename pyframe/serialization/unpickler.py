"""Reading the pickle inside a torch checkpoint without running it.

``WeightsUnpickler`` is a pickle machine for the opcodes ``torch.save`` writes (protocol 2). It never imports
a module and never calls a function named by the file: a ``GLOBAL`` is looked up by its name in ``ALLOWED``,
a table of pyframe's own stand-ins for the names torch's weights-only unpickler allows (``collections.OrderedDict``,
``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, the dtypes, ...), and any other name is refused
with ``WeightsOnlyError`` naming it. ``FullUnpickler`` (``weights_only=False``) is Python's own unpickler for
trusted files: the same stand-ins for torch's names, ordinary imports for the rest.

What a name stands for is a pyframe object: tensors come back as ``pyframe.Tensor`` / ``nn.Parameter`` over
the storages read from the file, dtypes as pyframe dtypes. Something pyframe cannot represent (a complex or
quantized tensor, a sparse one) becomes an ``Unsupported`` marker, so that the loader can name the key it sits
under before refusing the file.
"""

from __future__ import annotations

import _compat_pickle
import collections
import math
import pickle
import struct
from typing import Any

import numpy as np

from pyframe import _device, _dtype
from pyframe.serialization.format import CheckpointError, _parameter_class
from pyframe.tensor import MAX_DIMS, Size, Tensor, _new

__all__ = ["WeightsOnlyError", "WeightsUnpickler", "FullUnpickler", "Unsupported", "LoadedStorage"]


class WeightsOnlyError(CheckpointError, pickle.UnpicklingError):
    """A torch checkpoint asked for something ``weights_only=True`` does not load (an arbitrary global, a call,
    an opcode outside protocol 2). Also a ``pickle.UnpicklingError``, which is what torch raises."""


# torch's dtypes by the name its pickles use (``GLOBAL torch float32``), with the storage class of each
TORCH_DTYPES = {
    "float32": ("FloatStorage", _dtype.float32), "float64": ("DoubleStorage", _dtype.float64),
    "float16": ("HalfStorage", _dtype.float16), "int64": ("LongStorage", _dtype.int64),
    "int32": ("IntStorage", _dtype.int32), "bool": ("BoolStorage", _dtype.bool_),
    "uint8": ("ByteStorage", _dtype.uint8), "int8": ("CharStorage", _dtype.int8),
    "int16": ("ShortStorage", _dtype.int16), "bfloat16": ("BFloat16Storage", _dtype.bfloat16),
    "complex64": ("ComplexFloatStorage", None), "complex128": ("ComplexDoubleStorage", None),
    "complex32": (None, None), "qint8": ("QInt8Storage", None),
    "quint8": ("QUInt8Storage", None), "qint32": ("QInt32Storage", None), "quint4x2": ("QUInt4x2Storage", None),
    "quint2x4": ("QUInt2x4Storage", None), "uint16": (None, None), "uint32": (None, None), "uint64": (None, None),
    "float8_e4m3fn": (None, None), "float8_e5m2": (None, None), "float8_e4m3fnuz": (None, None),
    "float8_e5m2fnuz": (None, None), "float8_e8m0fnu": (None, None), "float4_e2m1fn_x2": (None, None),
    "bits8": (None, None), "bits16": (None, None), "bits1x8": (None, None), "bits2x4": (None, None),
    "bits4x2": (None, None),
}  # fmt: skip
TORCH_ITEMSIZE = {
    "uint8": 1, "int8": 1, "int16": 2, "bfloat16": 2, "complex64": 8, "complex128": 16, "complex32": 4, "qint8": 1,
    "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1, "uint16": 2, "uint32": 4, "uint64": 8,
}  # fmt: skip
STORAGE_DTYPE = {s: name for name, (s, _) in TORCH_DTYPES.items() if s}
PYFRAME_TO_TORCH = {d.name: name for name, (_, d) in TORCH_DTYPES.items() if d is not None}

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")  # torch never allows these, even when a user allowlists them

# what a call's arguments cost against the pickle's budget: their length (a tensor counts 1: len() of a 0-d one fails)
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray, collections.OrderedDict, collections.Counter)


class Unsupported:
    """Something in the file pyframe cannot represent: ``what`` says what (``a complex64 tensor``)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return f"<unsupported: {self.what}>"


class TorchName:
    """A torch global that is only meaningful as an argument (a storage class, ``torch.Tensor``, a
    quantization scheme, ``_get_layout``): never returned to the caller as such."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: str | None = None) -> None:
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return self.name


class LoadedStorage:
    """A storage read from the file: its pyframe Storage (None for a dtype pyframe lacks), the dtype the
    file named for it, and its length in elements of that dtype."""

    __slots__ = ("storage", "dtype", "numel", "key", "nbytes", "array")

    def __init__(self, storage, dtype: str, numel: int, key: str, nbytes: int) -> None:
        self.storage, self.dtype, self.numel, self.key, self.nbytes = storage, dtype, numel, key, nbytes
        self.array = None

    def __repr__(self) -> str:
        return f"<storage {self.key} ({self.dtype}, {self.numel} elements)>"


def _fail(msg: str):
    raise CheckpointError(f"corrupted: {msg}")


def _ints(x, what: str) -> tuple:
    if type(x) not in (tuple, list, Size) or not all(type(n) is int and 0 <= n < 1 << 63 for n in x):
        _fail(f"a tensor's {what} is {x!r}, not a tuple of non-negative ints")
    return tuple(x)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    """torch._utils._rebuild_tensor_v2: a tensor viewing ``storage``, every bound checked first."""
    if isinstance(storage, Unsupported):
        return storage
    if not isinstance(storage, LoadedStorage):
        _fail(f"a tensor is built over {type(storage).__name__}, not a storage from the file")
    if type(storage_offset) is not int or storage_offset < 0:
        _fail(f"a tensor has storage offset {storage_offset!r}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride):
        _fail(f"a tensor has size {list(size)} and stride {list(stride)} of different lengths")
    if type(requires_grad) is not bool:
        _fail(f"a tensor has requires_grad {requires_grad!r}")
    if backward_hooks:  # torch writes an empty OrderedDict; hooks are never saved
        _fail("a tensor carries backward hooks")
    if metadata:
        return Unsupported(f"a tensor with {', '.join(sorted(map(str, metadata)))} bits set (complex views)")
    if storage.storage is None:
        return Unsupported(f"a {storage.dtype} tensor (pyframe's dtypes: {', '.join(d.name for d in _dtype.ALL)})")
    numel = math.prod(size)
    if numel:
        last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
        if last >= storage.numel:
            _fail(
                f"a tensor (size {list(size)}, stride {list(stride)}, offset {storage_offset}) reaches element "
                f"{last} of storage {storage.key!r}, which has {storage.numel}"
            )
    elif storage_offset > storage.numel:
        _fail(f"an empty tensor has offset {storage_offset} in storage {storage.key!r} of {storage.numel} elements")
    if len(size) > MAX_DIMS:
        return Unsupported(f"a tensor with {len(size)} dims (pyframe tensors have at most {MAX_DIMS})")
    if numel >= 1 << 63:
        _fail(f"a tensor of size {list(size)} has more than 2**63 elements")
    dt = TORCH_DTYPES[storage.dtype][1]
    if requires_grad and not dt.is_floating_point:
        _fail(f"a {dt.name} tensor requires grad")
    t = _new(storage.storage, size, stride, storage_offset, dt)
    t.requires_grad = requires_grad
    return t


def rebuild_tensor(storage, storage_offset, size, stride):
    return rebuild_tensor_v2(storage, storage_offset, size, stride)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch._utils._rebuild_tensor_v3: the storage's bytes read as ``dtype`` (torch writes an untyped storage
    and names the dtype here for the dtypes without a storage class, such as uint16)."""
    if isinstance(dtype, Unsupported):
        return dtype
    if not isinstance(dtype, _dtype.dtype):
        _fail(f"a tensor names the dtype {dtype!r:.80}")
    name = PYFRAME_TO_TORCH[dtype.name]
    if isinstance(storage, LoadedStorage) and storage.storage is not None and storage.dtype != name:
        if storage.nbytes % dtype.itemsize:
            _fail(f"storage {storage.key!r} of {storage.nbytes} bytes is read as {dtype.name}")
        storage = LoadedStorage(storage.storage, name, storage.nbytes // dtype.itemsize, storage.key, storage.nbytes)
    return rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    """torch._utils._rebuild_parameter (and _with_state): an ``nn.Parameter`` sharing ``data``'s storage."""
    if isinstance(data, Unsupported):
        return data
    if type(data) is not Tensor:
        _fail(f"a Parameter is built from {type(data).__name__}, not a tensor")
    if type(requires_grad) is not bool:
        _fail(f"a Parameter has requires_grad {requires_grad!r}")
    if backward_hooks:
        _fail("a Parameter carries backward hooks")
    if state:
        return Unsupported("a Parameter with Python attributes")
    if requires_grad and not data.dtype.is_floating_point:
        _fail(f"a {data.dtype.name} Parameter requires grad")
    cls = _parameter_class()
    return cls(data, requires_grad=requires_grad) if cls else data


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return rebuild_parameter(data, requires_grad, backward_hooks, state)


def rebuild_from_type_v2(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: ``func(*args)`` as ``new_type``; only Tensor and Parameter."""
    if func not in _REBUILDERS or type(args) is not tuple:
        _fail(f"_rebuild_from_type_v2 with {func!r}")
    out = func(*args)
    if isinstance(out, Unsupported):
        return out
    if not (isinstance(new_type, TorchName) and new_type.name in ("torch.Tensor", "torch.nn.parameter.Parameter")):
        return Unsupported(f"a tensor subclass {new_type!r}")
    if state:
        return Unsupported("a tensor with Python attributes")
    if new_type.name == "torch.nn.parameter.Parameter":
        return rebuild_parameter(out, out.requires_grad)
    return out


def _unsupported_rebuild(what: str):
    def rebuild(*args, **kwargs):
        return Unsupported(what)

    rebuild.__name__ = f"rebuild_{what.replace(' ', '_')}"
    return rebuild


def _parameter(data=None, requires_grad=True):
    """torch.nn.parameter.Parameter(data, requires_grad) (as NEWOBJ or REDUCE)."""
    return rebuild_parameter(data, requires_grad)


def _device_of(spec, index=None):
    """torch.device(...): a pyframe device when it names the CPU; a string otherwise (data, not a place)."""
    if type(spec) is not str or (index is not None and type(index) is not int):
        _fail(f"torch.device({spec!r}, {index!r})")
    if spec.split(":")[0] == "cpu":
        return _device.device(spec, index)
    return spec if index is None else f"{spec}:{index}"


def _encode(obj, encoding="latin1"):
    """_codecs.encode as protocol 2 pickles bytes: a str and the latin1 codec only."""
    if type(obj) is not str or encoding not in ("latin1", "latin-1"):
        _fail(f"_codecs.encode({type(obj).__name__}, {encoding!r})")
    return obj.encode("latin1")


def _bytearray(data=b""):
    if type(data) not in (bytes, list):  # never bytearray(int): that allocates what the file asks
        _fail(f"bytearray({type(data).__name__})")
    return bytearray(data)


def _size(dims=()):
    return Size(_ints(dims, "torch.Size"))


def _counter(data=()):
    if type(data) not in (dict, collections.OrderedDict, tuple, list):
        _fail(f"Counter({type(data).__name__})")
    return collections.Counter(data)


def _ordered_dict(data=()):
    if type(data) not in (dict, collections.OrderedDict, tuple, list):
        _fail(f"OrderedDict({type(data).__name__})")
    return collections.OrderedDict(data)


def _set(data=()):
    if type(data) not in (tuple, list, set, frozenset):
        _fail(f"set({type(data).__name__})")
    return set(data)


def _complex(re=0.0, im=0.0):
    if type(re) not in (int, float) or type(im) not in (int, float):
        _fail("complex() of a non-number")
    return complex(re, im)


_REBUILDERS = {
    rebuild_tensor_v2: "torch._utils._rebuild_tensor_v2",
    rebuild_tensor: "torch._utils._rebuild_tensor",
    rebuild_tensor_v3: "torch._utils._rebuild_tensor_v3",
    rebuild_parameter: "torch._utils._rebuild_parameter",
    rebuild_parameter_with_state: "torch._utils._rebuild_parameter_with_state",
}


def _allowed() -> dict[str, Any]:
    """torch's weights-only allowlist, name by name, each mapped to pyframe's stand-in."""
    rc: dict[str, Any] = {name: fn for fn, name in _REBUILDERS.items()}
    rc.update({
        "collections.OrderedDict": _ordered_dict, "collections.Counter": _counter,
        "torch.nn.parameter.Parameter": _parameter, "torch.Size": _size, "torch.device": _device_of,
        "_codecs.encode": _encode, "builtins.bytearray": _bytearray, "builtins.set": _set,
        "builtins.complex": _complex, "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
        "torch.Tensor": TorchName("torch.Tensor"), "torch.serialization._get_layout": TorchName("a layout"),
    })  # fmt: skip
    for what, name in (
        ("a quantized tensor", "_rebuild_qtensor"),
        ("a sparse tensor", "_rebuild_sparse_tensor"),
        ("a meta tensor", "_rebuild_meta_tensor_no_storage"),
        ("a nested tensor", "_rebuild_nested_tensor"),
        ("a tensor subclass", "_rebuild_wrapper_subclass"),
        ("a device tensor", "_rebuild_device_tensor_from_numpy"),
        ("a device tensor", "_rebuild_device_tensor_from_cpu_tensor"),
    ):
        rc[f"torch._utils.{name}"] = _unsupported_rebuild(what)
    for name, (storage, dt) in TORCH_DTYPES.items():
        rc[f"torch.{name}"] = dt if dt is not None else Unsupported(f"the dtype torch.{name}")
        if storage:
            rc[f"torch.{storage}"] = TorchName(f"torch.{storage}", name)
            rc[f"torch.cuda.{storage}"] = TorchName(f"torch.cuda.{storage}", name)
    rc["torch.storage.UntypedStorage"] = TorchName("torch.storage.UntypedStorage", "uint8")
    rc["torch.UntypedStorage"] = rc["torch.storage.UntypedStorage"]
    rc["torch.storage.TypedStorage"] = TorchName("torch.storage.TypedStorage")
    for prefix in ("", "cuda."):
        for kind in ("Float", "Double", "Half", "Long", "Int", "Bool", "Byte", "Char", "Short", "BFloat16"):
            rc[f"torch.{prefix}{kind}Tensor"] = TorchName(f"torch.{prefix}{kind}Tensor")
    for q in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
              "per_channel_affine_float_qparams"):  # fmt: skip
        rc[f"torch.{q}"] = TorchName(f"torch.{q}")
    return rc


ALLOWED = _allowed()
_CALLABLE = {id(v): v for v in ALLOWED.values() if callable(v) and not isinstance(v, TorchName)}
_CALLABLE.update({id(f): f for f in (rebuild_tensor_v2, rebuild_parameter)})


# names torch's pickles use for numpy; allowed only after pyframe.serialization.add_safe_globals, as in torch
def _np_reconstruct(cls, shape, dtype_code):
    if not (isinstance(cls, TorchName) and cls.name == "numpy.ndarray"):
        _fail(f"numpy _reconstruct of {cls!r}")
    return _NdarrayBuilder()


class _NdarrayBuilder:
    """An ndarray under construction: ``_reconstruct`` makes it, BUILD gives it (version, shape, dtype,
    fortran, raw bytes); the data is copied out of the pickle, never interpreted as objects."""

    __slots__ = ("array",)

    def __init__(self) -> None:
        self.array = None

    def setstate(self, state) -> None:
        if type(state) is not tuple or len(state) != 5:
            _fail("an ndarray state that is not (version, shape, dtype, is_fortran, data)")
        _, shape, dt, fortran, raw = state
        dt = dt.dtype if isinstance(dt, _NpDtype) else dt
        shape = _ints(shape, "ndarray shape")
        if not isinstance(dt, np.dtype) or dt.hasobject or type(raw) not in (bytes, bytearray):
            _fail("an ndarray of objects, or without raw bytes")
        if math.prod(shape) * dt.itemsize != len(raw):
            _fail(f"an ndarray of shape {list(shape)} and dtype {dt} with {len(raw)} bytes")
        arr = np.frombuffer(bytearray(raw), dtype=dt).reshape(shape, order="F" if fortran else "C")
        self.array = arr


def _np_dtype(spec, align=False, copy=False):
    if type(spec) is not str or spec[:1] not in "fiub?c" or spec[:1] == "O":
        _fail(f"numpy.dtype({spec!r})")
    try:
        return _NpDtype(np.dtype(spec))
    except TypeError:
        _fail(f"numpy.dtype({spec!r})")


class _NpDtype:
    """A numpy dtype being unpickled (its BUILD state names the byte order)."""

    __slots__ = ("dtype",)

    def __init__(self, dt) -> None:
        self.dtype = dt

    def setstate(self, state) -> None:
        if type(state) is not tuple or len(state) < 2 or state[1] not in ("<", ">", "|", "="):
            _fail(f"a numpy dtype state {state!r}")
        if state[1] in "<>":
            self.dtype = self.dtype.newbyteorder(state[1])


def _np_scalar(dt, raw=b""):
    dt = dt.dtype if isinstance(dt, _NpDtype) else dt
    if not isinstance(dt, np.dtype) or dt.hasobject or type(raw) is not bytes or len(raw) != dt.itemsize:
        _fail("a numpy scalar that is not a plain number")
    return np.frombuffer(raw, dtype=dt)[0]


NUMPY_NAMES = {}
for _mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    NUMPY_NAMES[f"{_mod}._reconstruct"] = _np_reconstruct
    NUMPY_NAMES[f"{_mod}.scalar"] = _np_scalar
NUMPY_NAMES["numpy.ndarray"] = TorchName("numpy.ndarray")
NUMPY_NAMES["numpy.dtype"] = _np_dtype
for _d in ("Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
           "Bool"):  # fmt: skip
    NUMPY_NAMES[f"numpy.dtypes.{_d}DType"] = TorchName(f"numpy.dtypes.{_d}DType")


# what add_safe_globals allowlisted: the dotted name a pickle uses -> the object it stands for (NumPy's names map to
# pyframe's readers of NumPy's bytes; anything else is the user's own object, never imported by name)
_user_globals: dict[str, Any] = {}


def user_allowed() -> dict[str, Any]:
    return dict(_user_globals)


def _user_class(obj) -> bool:
    return isinstance(obj, type) and any(obj is v for v in _user_globals.values())


def weights_only_message(detail: str) -> str:
    return (
        "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
        "only if you trust the source of the checkpoint.\n\t(1) Re-running `pyframe.load` with `weights_only` set "
        "to `False` will likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
        "file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please check the "
        f"recommended steps in the following error message.\n\tWeightsUnpickler error: {detail}"
    )


def _unsupported_global(full: str) -> str:
    if full.split(".")[0] in _BLOCKED_MODULES:
        return f"Trying to load unsupported GLOBAL {full} whose module {full.split('.')[0]} is blocked."
    shown = full[len("builtins.") :] if full.startswith("builtins.") else full
    what = repr(shown) if full in NUMPY_NAMES else shown
    hint = (
        f"Please use `pyframe.serialization.add_safe_globals([{what}])` or the "
        f"`pyframe.serialization.safe_globals([{what}])` context manager to allowlist this global "
        "if you trust this class/function."
    )
    return f"Unsupported global: GLOBAL {shown} was not an allowed global by default. {hint}"


# the opcodes of protocol 2 that torch's weights-only unpickler reads, and nothing else
_OPS = {getattr(pickle, n)[0]: n for n in (
    "GLOBAL", "NEWOBJ", "REDUCE", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK", "TUPLE", "TUPLE1",
    "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE", "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET",
    "BININT", "BININT1", "BININT2", "BINFLOAT", "BINUNICODE", "SHORT_BINSTRING", "BINPERSID", "BINGET",
    "LONG_BINGET", "BINPUT", "LONG_BINPUT", "LONG1", "PROTO", "STOP",
)}  # fmt: skip


class WeightsUnpickler:
    """The weights-only pickle machine over ``data`` (the whole pickle, in memory). ``persistent_load(pid)``
    turns a storage id into a ``LoadedStorage``. Work is bounded by the pickle's length: each opcode reads
    its bytes, and a call copies at most ``budget`` elements in all."""

    def __init__(self, data: bytes, persistent_load, *, encoding: str = "ASCII") -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.budget = 64 * len(data) + (1 << 16)

    def _read(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise CheckpointError(f"truncated: the pickle ends inside an opcode at byte {self.pos}")
        b = bytes(self.data[self.pos : end])
        self.pos = end
        return b

    def _readline(self) -> bytes:
        end = bytes(self.data[self.pos : self.pos + 4096]).find(b"\n")
        if end < 0:
            raise CheckpointError(f"corrupted: a GLOBAL name at byte {self.pos} has no end of line")
        b = bytes(self.data[self.pos : self.pos + end])
        self.pos += end + 1
        return b

    def _call(self, func, args):
        if id(func) in _CALLABLE or func in user_allowed().values():
            if type(args) is not tuple:
                _fail(f"a call with arguments {type(args).__name__}")
            self.budget -= sum(len(a) if type(a) in _SIZED else 1 for a in args) + 1
            if self.budget < 0:
                raise CheckpointError("refused: the pickle builds far more than its size (a pickle bomb?)")
            try:
                return func(*args)
            except TypeError as e:
                _fail(f"{getattr(func, '__name__', func)} called with bad arguments ({e})")
        raise WeightsOnlyError(weights_only_message(f"Trying to call reduce for unrecognized function {func!r}"))

    def load(self):
        stack: list = []
        metastack: list = []
        memo: dict = {}
        read = self._read
        while True:
            if self.pos >= len(self.data):
                raise CheckpointError("truncated: the pickle ends before its STOP opcode")
            op = self.data[self.pos]
            self.pos += 1
            name = _OPS.get(op)
            try:
                if name is None:
                    raise WeightsOnlyError(weights_only_message(f"Unsupported operand {op}"))
                if name == "GLOBAL":
                    module = self._readline().decode("utf-8", "replace")
                    gname = self._readline().decode("utf-8", "replace")
                    if (module, gname) in _compat_pickle.NAME_MAPPING:  # Python 2 names, as torch maps them
                        module, gname = _compat_pickle.NAME_MAPPING[(module, gname)]
                    elif module in _compat_pickle.IMPORT_MAPPING:
                        module = _compat_pickle.IMPORT_MAPPING[module]
                    full = f"{module}.{gname}"
                    if full in ALLOWED:
                        stack.append(ALLOWED[full])
                    elif full in _user_globals and module.split(".")[0] not in _BLOCKED_MODULES:
                        stack.append(_user_globals[full])
                    else:
                        err = WeightsOnlyError(weights_only_message(_unsupported_global(full)))
                        err.global_name = full
                        raise err
                elif name == "NEWOBJ" and _user_class(stack[-2]):
                    args = stack.pop()
                    if type(args) is not tuple:
                        _fail(f"NEWOBJ with arguments {type(args).__name__}")
                    stack[-1] = stack[-1].__new__(stack[-1], *args)  # copyreg's protocol 2: __new__, then BUILD
                elif name in ("REDUCE", "NEWOBJ"):
                    args = stack.pop()
                    stack[-1] = self._call(stack[-1], args)
                elif name == "BUILD":
                    state = stack.pop()
                    self._build(stack[-1], state)
                elif name == "APPEND":
                    item = stack.pop()
                    if type(stack[-1]) is not list:
                        _fail(f"APPEND to {type(stack[-1]).__name__}")
                    stack[-1].append(item)
                elif name == "APPENDS":
                    items, stack = stack, metastack.pop()
                    if type(stack[-1]) is not list:
                        _fail(f"APPENDS to {type(stack[-1]).__name__}")
                    stack[-1].extend(items)
                elif name == "SETITEM":
                    v, k = stack.pop(), stack.pop()
                    self._setitems(stack[-1], [k, v])
                elif name == "SETITEMS":
                    items, stack = stack, metastack.pop()
                    self._setitems(stack[-1], items)
                elif name == "MARK":
                    metastack.append(stack)
                    stack = []
                elif name == "TUPLE":
                    items, stack = stack, metastack.pop()
                    stack.append(tuple(items))
                elif name == "TUPLE1":
                    stack[-1] = (stack[-1],)
                elif name == "TUPLE2":
                    stack[-2:] = [(stack[-2], stack[-1])]
                elif name == "TUPLE3":
                    stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
                elif name == "NONE":
                    stack.append(None)
                elif name in ("NEWFALSE", "NEWTRUE"):
                    stack.append(name == "NEWTRUE")
                elif name == "EMPTY_TUPLE":
                    stack.append(())
                elif name == "EMPTY_LIST":
                    stack.append([])
                elif name == "EMPTY_DICT":
                    stack.append({})
                elif name == "EMPTY_SET":
                    stack.append(set())
                elif name == "BININT":
                    stack.append(struct.unpack("<i", read(4))[0])
                elif name == "BININT1":
                    stack.append(read(1)[0])
                elif name == "BININT2":
                    stack.append(struct.unpack("<H", read(2))[0])
                elif name == "BINFLOAT":
                    stack.append(struct.unpack(">d", read(8))[0])
                elif name == "BINUNICODE":
                    (n,) = struct.unpack("<I", read(4))
                    stack.append(str(read(n), "utf-8", "surrogatepass"))
                elif name == "SHORT_BINSTRING":
                    s = read(read(1)[0])
                    stack.append(s if self.encoding == "bytes" else s.decode(self.encoding, "strict"))
                elif name == "BINPERSID":
                    stack.append(self.persistent_load(stack.pop()))
                elif name in ("BINGET", "LONG_BINGET"):
                    i = read(1)[0] if name == "BINGET" else struct.unpack("<I", read(4))[0]
                    if i not in memo:
                        _fail(f"the pickle reads memo entry {i}, never written")
                    stack.append(memo[i])
                elif name in ("BINPUT", "LONG_BINPUT"):
                    i = read(1)[0] if name == "BINPUT" else struct.unpack("<I", read(4))[0]
                    memo[i] = stack[-1]
                elif name == "LONG1":
                    stack.append(pickle.decode_long(read(read(1)[0])))
                elif name == "PROTO":
                    if read(1)[0] > 5:
                        _fail("the pickle claims a protocol above 5")
                elif name == "STOP":
                    if len(stack) != 1 or metastack:
                        _fail("the pickle stops with a stack that does not hold exactly one object")
                    return stack[0]
            except IndexError:
                raise CheckpointError(f"corrupted: the pickle's stack underflows at byte {self.pos - 1}") from None
            except (UnicodeDecodeError, struct.error, OverflowError, ValueError) as e:
                if isinstance(e, CheckpointError):
                    raise
                raise CheckpointError(f"corrupted: the pickle at byte {self.pos - 1}: {e}") from None
            except TypeError as e:  # an unhashable key, a wrong argument count
                raise CheckpointError(f"corrupted: the pickle at byte {self.pos - 1}: {e}") from None

    def _setitems(self, target, items: list) -> None:
        if type(target) not in (dict, collections.OrderedDict, collections.Counter):
            _fail(f"SETITEM on {type(target).__name__}")
        for i in range(0, len(items) - 1, 2):
            target[items[i]] = items[i + 1]

    def _build(self, inst, state) -> None:
        if isinstance(inst, (_NdarrayBuilder, _NpDtype)):
            inst.setstate(state)
        elif type(inst) is collections.OrderedDict:
            if type(state) is not dict or not all(type(k) is str and not k.startswith("__") for k in state):
                _fail("an OrderedDict's state is not a dict of plain attribute names")
            inst.__dict__.update(state)
        elif isinstance(inst, Tensor) and not state:
            pass
        elif _user_class(type(inst)):  # an allowlisted class: its state as pickle's BUILD restores it
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
                return
            slots = None
            if type(state) is tuple and len(state) == 2:
                state, slots = state
            if state:
                if not isinstance(state, dict):
                    _fail(f"the state of a {type(inst).__name__} is {type(state).__name__}, not a dict")
                inst.__dict__.update(state)
            for k, v in (slots or {}).items():
                setattr(inst, k, v)
        else:
            raise WeightsOnlyError(
                weights_only_message(
                    f"Can only build Tensor, Parameter, OrderedDict or types allowlisted via `add_safe_globals`, "
                    f"but got {type(inst).__name__}"
                )
            )


class FullUnpickler(pickle.Unpickler):
    """``weights_only=False``: Python's unpickler, which imports and calls what the file names (trusted files
    only), with torch's names mapped to pyframe's stand-ins. A torch class pyframe has no stand-in for is
    refused rather than imported (pyframe never imports torch)."""

    def __init__(self, file, persistent_load, **kwargs) -> None:
        super().__init__(file, **kwargs)
        self._persistent_load = persistent_load

    def persistent_load(self, pid):
        return self._persistent_load(pid)

    def find_class(self, module: str, name: str):
        full = f"{module}.{name}"
        if full in ALLOWED:
            return ALLOWED[full]
        if full in NUMPY_NAMES and full.endswith(("scalar", "_reconstruct")):
            return super().find_class(module, name)
        if module == "torch" or module.startswith("torch."):
            raise CheckpointError(
                f"this file holds {full}, a torch object; pyframe loads torch's tensors, containers and plain "
                "values but never imports torch (save the object's state_dict() with torch instead)"
            )
        return super().find_class(module, name)


def _global_name(g) -> tuple[str, Any]:
    """(the dotted name a pickle uses for ``g``, what that name loads as)."""
    if isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str):
        obj, name = g
    elif isinstance(g, str):
        if g not in NUMPY_NAMES:
            raise ValueError(
                f"pyframe cannot allowlist {g!r} by name: a name given as a string must be one of NumPy's "
                f"({', '.join(sorted(NUMPY_NAMES))}); give any other class or function as the object itself"
            )
        return g, NUMPY_NAMES[g]
    else:
        obj = g
        name = f"{getattr(g, '__module__', '')}.{getattr(g, '__qualname__', getattr(g, '__name__', ''))}"
    if name in NUMPY_NAMES:
        return name, NUMPY_NAMES[name]  # read by pyframe's own code from the array's bytes
    if name.split(".")[0] in _BLOCKED_MODULES or not callable(obj):
        raise ValueError(
            f"pyframe cannot allowlist {name!r}: only classes and functions can be, and never from the modules "
            f"{', '.join(_BLOCKED_MODULES)}"
        )
    return name, obj


def add_safe_globals(safe_globals: list) -> None:
    """Same as torch.serialization.add_safe_globals: ``weights_only`` loading then also reads these globals.

    Args:
        safe_globals: classes and functions (or ``(obj, "module.name")`` pairs for a name the pickle uses instead
            of ``obj``'s own). A pickle naming an allowlisted class builds it as pickle does (``cls.__new__``,
            then its state through ``__setstate__`` or ``__dict__``): so ``torch.save(model)`` of your own module
            loads with its class and the layers it holds allowlisted. NumPy's names for arrays, dtypes and
            scalars (``numpy.ndarray``, ``numpy.dtype``, ``numpy._core.multiarray._reconstruct``, ...) may also be
            given as strings; pyframe reads those with its own code, never NumPy's unpickling.

    Raises:
        ValueError: for another string, something not callable, or anything from ``sys``/``os``, which torch
            never allows either."""
    _user_globals.update(_global_name(g) for g in safe_globals)


def get_safe_globals() -> list[str]:
    """The names added by :func:`add_safe_globals`."""
    return sorted(_user_globals)


def clear_safe_globals() -> None:
    """Same as torch.serialization.clear_safe_globals: forgets every name added by ``add_safe_globals``."""
    _user_globals.clear()


class safe_globals:  # noqa: N801 - torch's name
    """Same as torch.serialization.safe_globals: :func:`add_safe_globals` for the duration of a ``with``."""

    def __init__(self, safe_globals: list) -> None:
        self.globals = dict(_global_name(g) for g in safe_globals)

    def __enter__(self):
        self.added = {k: v for k, v in self.globals.items() if k not in _user_globals}
        _user_globals.update(self.added)

    def __exit__(self, *exc) -> None:
        for k in self.added:
            _user_globals.pop(k, None)
