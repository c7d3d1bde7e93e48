"""dtypes and PyTorch's type promotion."""

from __future__ import annotations

import numpy as np


class dtype:  # noqa: N801 - PyTorch's name
    """A tensor element type. Compares equal to itself and to its short name (``float32 == "float32"``)."""

    __slots__ = ("name", "code", "itemsize", "is_floating_point", "is_signed", "np")

    def __init__(self, name: str, code: int, itemsize: int, is_float: bool, np_dtype):
        self.name = name
        self.code = code
        self.itemsize = itemsize
        self.is_floating_point = is_float
        self.is_signed = name not in ("bool", "uint8")
        # the NumPy dtype of the stored elements; bfloat16 has none of its own, so its bits are
        # viewed as uint16 (serialization's byte views), never converted as numbers
        self.np = np.dtype(np_dtype)

    def __repr__(self) -> str:
        return f"pyframe.{self.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dtype):
            return other is self
        if isinstance(other, str):
            return other == self.name or _ALIASES.get(other) is self
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return (_by_name, (self.name,))


# codes match core_c's PF_* dtype constants (every per-dtype table there is indexed by them)
float32 = dtype("float32", 0, 4, True, np.float32)
float64 = dtype("float64", 1, 8, True, np.float64)
float16 = dtype("float16", 2, 2, True, np.float16)
int64 = dtype("int64", 3, 8, False, np.int64)
int32 = dtype("int32", 4, 4, False, np.int32)
bool_ = dtype("bool", 5, 1, False, np.bool_)
uint8 = dtype("uint8", 6, 1, False, np.uint8)
int8 = dtype("int8", 7, 1, False, np.int8)
int16 = dtype("int16", 8, 2, False, np.int16)
bfloat16 = dtype("bfloat16", 9, 2, True, np.uint16)

ALL = (float32, float64, float16, int64, int32, bool_, uint8, int8, int16, bfloat16)
BY_CODE = {d.code: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# what a Python number or untyped data becomes, per category (bool, int, float); the float
# entry is torch's default dtype, changed by set_default_dtype
DEFAULT_FOR_CATEGORY = [bool_, int64, float32]


def get_default_dtype() -> dtype:
    """Same as torch.get_default_dtype: the dtype of floating tensors made without one."""
    return DEFAULT_FOR_CATEGORY[2]


def set_default_dtype(d) -> None:
    """Same as torch.set_default_dtype: float32 (the default), float64, float16 or bfloat16."""
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d.name}")
    DEFAULT_FOR_CATEGORY[2] = d


_ALIASES = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32, "short": int16}
_FROM_NUMPY = {d.np: d for d in ALL if d is not bfloat16}  # NumPy's uint16 is not bfloat16


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def as_dtype(x) -> dtype:
    """A pyframe dtype from a dtype, its name, a NumPy dtype or a Python type."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, str):
        d = _BY_NAME.get(x) or _ALIASES.get(x)
        if d is not None:
            return d
    elif x is float:
        return float32
    elif x is int:
        return int64
    elif x is bool:
        return bool_
    else:
        try:
            d = _FROM_NUMPY.get(np.dtype(x))
        except TypeError:
            d = None
        if d is not None:
            return d
    names = ", ".join(d.name for d in ALL)
    raise TypeError(f"unsupported dtype {x!r}; expected one of {names}")


def from_numpy_dtype(np_dtype) -> dtype:
    d = _FROM_NUMPY.get(np.dtype(np_dtype))
    if d is None:
        names = ", ".join(str(d.np) for d in _FROM_NUMPY.values())
        raise TypeError(f"can't convert a NumPy array of dtype {np_dtype}; supported dtypes are {names}")
    return d


def _promote(a: dtype, b: dtype) -> dtype:
    """torch's promotion lattice: the higher category wins (bool < integer < floating); within one, the
    wider type, except that uint8 with a signed byte needs int16 and float16 with bfloat16 float32."""
    ca, cb = category(a), category(b)
    if a is b or ca != cb:
        return a if ca >= cb else b
    if ca == 2 and {a, b} == {float16, bfloat16}:
        return float32
    if uint8 in (a, b):
        other = b if a is uint8 else a
        return other if other.itemsize > 1 else int16
    return a if a.itemsize >= b.itemsize else b


def promote_types(a: dtype, b: dtype) -> dtype:
    """Same as torch.promote_types: the smallest dtype both ``a`` and ``b`` convert to without losing
    range or category (``uint8`` and ``int8`` give ``int16``; ``float16`` and ``bfloat16`` give ``float32``).
    """
    return _PROMOTE[a.code][b.code]


def category(d: dtype) -> int:
    """0 bool, 1 integer, 2 floating: a Python scalar only lifts the result across categories."""
    return 2 if d.is_floating_point else (0 if d is bool_ else 1)


def scalar_dtype(value) -> dtype:
    """The dtype a Python number becomes: bool, int64, or the default dtype for a float (torch's rule; the
    one place pyframe decides it: ``full``, promotion with numbers, distributions' parameters ask here).
    A numpy scalar counts as the Python number it holds, as in torch."""
    value = as_number(value)
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return DEFAULT_FOR_CATEGORY[2]
    raise TypeError(f"expected a tensor or a Python number, got {type(value).__name__}")


_PROMOTE = [[_promote(BY_CODE[i], BY_CODE[j]) for j in range(len(ALL))] for i in range(len(ALL))]

# bfloat16's limits (NumPy has no bfloat16): 8 exponent bits as float32, 7 stored mantissa bits
_BFLOAT16_INFO = {"bits": 16, "eps": 2.0**-7, "max": 3.3895313892515355e38, "tiny": 2.0**-126, "resolution": 0.01}


class finfo:  # noqa: N801 - PyTorch's name
    """Same as torch.finfo: the limits of a floating dtype (default: the default dtype)."""

    def __init__(self, type=None) -> None:  # noqa: A002 - torch's parameter name
        d = get_default_dtype() if type is None else as_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"finfo(): {d.name} is not a floating point dtype; use iinfo")
        if d is bfloat16:
            info = _BFLOAT16_INFO
        else:
            f = np.finfo(d.np)
            info = {"bits": f.bits, "eps": f.eps, "max": f.max, "tiny": f.tiny, "resolution": f.resolution}
        self.dtype = d.name
        self.bits = int(info["bits"])
        self.eps = float(info["eps"])
        self.max = float(info["max"])
        self.min = -self.max
        self.tiny = self.smallest_normal = float(info["tiny"])
        self.resolution = float(info["resolution"])

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - PyTorch's name
    """Same as torch.iinfo: the limits of an integer dtype."""

    def __init__(self, type) -> None:  # noqa: A002 - torch's parameter name
        d = as_dtype(type)
        if d.is_floating_point:
            raise TypeError(f"iinfo(): {d.name} is a floating point dtype; use finfo")
        info = np.iinfo(np.uint8) if d is bool_ else np.iinfo(d.np)
        self.dtype = d.name
        self.bits = 8 if d is bool_ else info.bits
        self.max = 1 if d is bool_ else int(info.max)
        self.min = 0 if d is bool_ else int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_: dtype, to: dtype) -> bool:
    """Same as torch.can_cast: casting never lowers the category (bool < int < float)."""
    return category(as_dtype(from_)) <= category(as_dtype(to))


class OutOfRangeError(OverflowError, RuntimeError):
    """A Python number that does not fit the dtype it would be stored as (RuntimeError, as PyTorch raises)."""


_INT_RANGE = {
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "int16": (-(2**15), 2**15 - 1),
    "int8": (-128, 127), "uint8": (0, 255),
}  # fmt: skip
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def int_range(d: dtype) -> tuple[int, int]:
    """The smallest and largest value an integer dtype holds (bool: 0 and 1)."""
    return _INT_RANGE.get(d.name, (0, 1))


def accepted_range(d: dtype) -> tuple[int, int]:
    """The Python integers torch stores into an integer dtype: its range, and for uint8 also the negatives
    down to -255, which wrap around (``torch.tensor([-1], dtype=torch.uint8)`` is 255)."""
    return (-255, 255) if d is uint8 else int_range(d)


def wrap_int(v: int, d: dtype) -> int:
    """``v`` reduced to ``d``'s width as two's complement (the low bits kept)."""
    bits = 8 * d.itemsize
    v &= (1 << bits) - 1
    return v - (1 << bits) if d.is_signed and v >= 1 << (bits - 1) else v


def as_number(value):
    """A numpy scalar (``np.float32(2)``, ``np.int64(3)``) as the Python number it holds; anything else as is.
    torch takes numpy scalars wherever it takes Python numbers."""
    return value.item() if isinstance(value, np.generic) else value


def scalar_value(value, d: dtype, what: str = "value", fill: bool = True) -> tuple[float, int]:
    """A Python number as the (double, int64) pair the core's fill and scalar entry points take.

    Every Python number stored into a tensor comes through here, so a value that does not fit
    ``d`` is refused with the value and the allowed range instead of being truncated in C.
    float16 and bfloat16 overflow to inf (as PyTorch does); a fill (``fill``) of float32 or float64 refuses a
    finite value past the largest number, an arithmetic operand overflows to inf (as PyTorch). An integer
    operand of arithmetic wraps around to an integer dtype's width (``uint8 + 300``, as PyTorch); a fill
    must be in range (uint8 also takes -255 to -1, wrapped)."""
    value = as_number(value)
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{what} must be a Python number, got {type(value).__name__}")
    if d is bool_:
        b = bool(value)
        return float(b), int(b)
    if not d.is_floating_point:
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            raise ValueError(f"{what} {value} cannot be converted to {d.name}: an integer dtype holds finite numbers")
        iv = int(value)
        lo, hi = accepted_range(d) if fill or d is int64 else int_range(int64)
        if not lo <= iv <= hi:
            raise OutOfRangeError(f"{what} {value} is out of range for {d.name} (allowed: {lo} to {hi})")
        iv = wrap_int(iv, d)
        return float(iv), iv
    try:
        fv = float(value)
    except OverflowError:
        fv = float("inf") if value > 0 else float("-inf")
    limit = _FLOAT_MAX.get(d.name) if fill else None
    if limit is not None and fv == fv and abs(fv) > limit and (abs(fv) != float("inf") or not isinstance(value, float)):
        raise OutOfRangeError(f"{what} {value} is out of range for {d.name} (largest magnitude: {limit:g})")
    return fv, 0
