"""Devices: pyframe computes on the CPU only, so ``device`` names the CPU and asking for any
accelerator is one clear error wherever it is asked (factories, ``to``, ``Module.to``, ``device()``)."""

from __future__ import annotations

__all__ = [
    "device", "DeviceError", "as_device", "check_device", "wants_meta", "set_default_device", "get_default_device",
    "memory_format", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d", "layout", "strided",
]  # fmt: skip

_ACCELERATORS = ("cuda", "mps", "xpu", "xla", "hip", "mtia", "ipu", "vulkan", "hpu", "privateuseone")


class DeviceError(RuntimeError, ValueError):
    """An accelerator was asked for: a RuntimeError as torch raises, and a ValueError (a bad argument)."""


def _refuse(spec) -> DeviceError:
    return DeviceError(
        f"pyframe runs on the CPU only; device {str(spec)!r} is not available "
        "(pyframe.cuda.is_available() and pyframe.accelerator.is_available() are False). Use 'cpu', or write "
        "`device = 'cuda' if torch.cuda.is_available() else 'cpu'`"
    )


class device:  # noqa: N801 - torch's name
    """Same as torch.device, for the CPU: ``device("cpu")``, ``device("cpu:0")``, ``device("cpu", 0)``, and
    ``device("meta")`` (tensors with a shape and no memory). A device is also a context manager making itself
    the default device of the factories inside (``with pyframe.device("meta"): model = Net()``).

    Differs: a device also compares equal to its string (``device("cpu") == "cpu"``), and any
    accelerator type ("cuda", "mps", ...) raises ``DeviceError`` at construction."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002 - torch's name
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(device, index): give the index in the string or the int, not both")
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            raise _refuse(f"cuda:{type}")  # torch reads a bare int as an accelerator ordinal
        if not isinstance(type, str):
            raise TypeError(f"device(): expected a string like 'cpu', got {type.__class__.__name__}")
        name, sep, ordinal = type.strip().partition(":")
        if name in _ACCELERATORS:
            raise _refuse(type)
        if name not in ("cpu", "meta"):
            raise ValueError(
                f"Expected one of cpu, cuda, mps, ... device type at start of device string: {type!r} "
                "(pyframe supports 'cpu' and 'meta')"
            )
        if sep:
            if index is not None:
                raise ValueError(f"device({type!r}, {index}): the index is given twice")
            if not ordinal.isdigit():
                raise ValueError(f"Invalid device string: {type!r}")
            index = int(ordinal)
        if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
            raise ValueError(f"device index must be a non-negative int, got {index!r}")
        self.type, self.index = name, index

    def __enter__(self) -> device:
        _previous.append(_default)
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> None:
        set_default_device(_previous.pop())

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (ValueError, TypeError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
META = device("meta")
_default = CPU
_previous: list = []  # the defaults that ``with device(...)`` blocks replaced, innermost last


def wants_meta(spec) -> bool:
    """Whether a factory given ``device=spec`` makes a meta tensor (``spec`` says meta, or it is None and the
    default device is meta); any other device is checked as ``check_device`` does."""
    if spec is None:
        return _default.type == "meta"
    if spec is CPU or spec == "cpu":
        return False
    return as_device(spec).type == "meta"


def as_device(spec) -> device:
    """``spec`` (None, a string, an int or a device) as a device; None is the default device."""
    if spec is None:
        return _default
    if isinstance(spec, device):
        return spec
    return device(spec)


def check_device(spec) -> None:
    """Raises unless ``spec`` is None or names the CPU: factories call this for ``device=``."""
    if spec is None or spec is CPU or spec == "cpu":
        return
    if as_device(spec).type == "meta":
        raise NotImplementedError(
            "this function cannot make meta tensors: pyframe makes them with empty, zeros, ones, full, rand, randn, "
            "their _like and new_ forms, and Tensor.to('meta')"
        )


def set_default_device(device) -> None:
    """Same as torch.set_default_device: the CPU (None is the same) or meta."""
    global _default
    _default = CPU if device is None else as_device(device)


def get_default_device() -> device:
    """Same as torch.get_default_device: the CPU, or meta inside ``with device("meta")``."""
    return _default


class _Named:
    """A constant known by its name: printed as ``pyframe.NAME`` and pickled as that module-level name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pyframe.{self.name}"

    def __reduce__(self):
        return self.name


class memory_format(_Named):  # noqa: N801 - torch's name
    """Same as torch.memory_format: the names torch's ``memory_format=`` arguments take. pyframe makes
    every new tensor contiguous, so each is accepted and gives the contiguous layout."""

    __slots__ = ()


class layout(_Named):  # noqa: N801 - torch's name
    """Same as torch.layout: ``strided`` (dense tensors), ``sparse_coo`` and ``sparse_csr``
    (``pyframe.ops.sparse`` and ``pyframe.ops.sparse_csr``)."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")


def check_layout(value, fn: str = "factory") -> None:
    """A dense factory's ``layout=``: None or ``strided``; anything else is a clear error (never ignored)."""
    if value is not None and value is not strided:
        raise ValueError(f"{fn}(): layout must be pyframe.strided (dense tensors), got {value!r}")
