"""Same as torch.testing: ``assert_close`` (torch's default tolerances per dtype and its messages) and
``make_tensor`` (random test tensors)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyframe import _dtype
from pyframe import ops as _ops
from pyframe.tensor import Tensor

__all__ = ["assert_close", "make_tensor", "assert_allclose"]

# torch's default (rtol, atol) per dtype; integers and bool compare exactly
_PRECISIONS = {
    _dtype.float16: (1e-3, 1e-5),
    _dtype.bfloat16: (1.6e-2, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5),
    _dtype.float64: (1e-7, 1e-7),
}
# the dtype a Python number stands for, as torch.testing
_NUMBER_DTYPES = {bool: _dtype.bool_, int: _dtype.int64, float: _dtype.float64}


class _Mismatch(Exception):
    """A failed comparison: the exception type and message to raise, and where in a nested input it happened."""

    def __init__(self, kind: type[Exception], msg: str, where: tuple = ()):
        super().__init__(msg)
        self.kind, self.msg, self.where = kind, msg, where


def _tolerances(dtypes, rtol, atol) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                    f"{'rtol' if rtol is None else 'atol'}.")  # fmt: skip
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_lines(abs_diff, rel_diff, rtol: float, atol: float, abs_at=None, rel_at=None) -> str:
    exact = rtol == 0 and atol == 0
    out = []
    for kind, diff, at, tol in (("absolute", abs_diff, abs_at, atol), ("relative", rel_diff, rel_at, rtol)):
        line = (
            f"{kind.title()} difference: {diff}" if at is None else f"Greatest {kind} difference: {diff} at index {at}"
        )
        out.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(out)


def _header(what: str, rtol: float, atol: float) -> str:
    return f"{what} are not {'equal' if rtol == 0 and atol == 0 else 'close'}!\n\n"


def _compare_numbers(actual, expected, rtol, atol, equal_nan: bool, check_dtype: bool) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(actual)], _NUMBER_DTYPES[type(expected)]], rtol, atol)
    if actual == expected or (equal_nan and math.isnan(actual) and math.isnan(expected)):
        return
    diff = abs(actual - expected)
    if diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_msg(actual, expected, rtol, atol))


def _scalar_msg(actual, expected, rtol: float, atol: float) -> str:
    diff = abs(actual - expected)
    rel = math.inf if expected == 0 else diff / abs(expected)
    return _header("Scalars", rtol, atol) + f"Expected {expected} but got {actual}.\n" + _diff_lines(
        diff, rel, rtol, atol)  # fmt: skip


def _compare_tensors(actual: Tensor, expected: Tensor, rtol, atol, equal_nan, check_dtype, check_stride) -> None:
    def differ(attr, a, b):
        raise _Mismatch(AssertionError, f"The values for attribute '{attr}' do not match: {a} != {b}.")

    if actual.shape != expected.shape:
        differ("shape", actual.shape, expected.shape)
    if check_dtype and actual.dtype != expected.dtype:
        differ("dtype", actual.dtype, expected.dtype)
    if check_stride and actual.stride() != expected.stride():
        differ("stride()", actual.stride(), expected.stride())
    rtol, atol = _tolerances([actual.dtype, expected.dtype], rtol, atol)
    a, b = actual.detach(), expected.detach()
    if a.dtype != b.dtype:
        common = _dtype.promote_types(a.dtype, b.dtype)
        a, b = a.to(common), b.to(common)
    if a.numel() == 0:
        return
    matches = _ops.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(_ops.all(matches)):
        return
    if a.ndim == 0:
        raise _Mismatch(AssertionError, _scalar_msg(a.item(), b.item(), rtol, atol))
    n = matches.numel()
    bad = n - int(_ops.sum(matches))
    if not a.dtype.is_floating_point:
        a, b = a.to(_dtype.int64), b.to(_dtype.int64)
    a, b, flat_matches = a.flatten(), b.flatten(), matches.flatten()
    abs_diff = _ops.abs(_ops.sub(a, b))
    abs_diff = _ops.where(flat_matches, _ops.zeros_like(abs_diff), abs_diff)
    rel_diff = _ops.div(abs_diff, _ops.abs(b))
    rel_diff = _ops.where(flat_matches, _ops.zeros_like(rel_diff), rel_diff)
    abs_max, abs_at = _ops.max(abs_diff, 0)
    rel_max, rel_at = _ops.max(rel_diff, 0)
    shape = tuple(matches.shape)
    diffs = _diff_lines(abs_max.item(), rel_max.item(), rtol, atol, _unravel(int(abs_at), shape),
                        _unravel(int(rel_at), shape))  # fmt: skip
    msg = _header("Tensor-likes", rtol, atol) + f"Mismatched elements: {bad} / {n} ({bad / n:.1%})\n" + diffs
    raise _Mismatch(AssertionError, msg)


def _unravel(flat: int, shape: tuple) -> tuple:
    index = []
    for size in reversed(shape):
        flat, rem = divmod(flat, size)
        index.append(rem)
    return tuple(reversed(index))


def _is_array(x) -> bool:
    return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray"


def _compare(actual, expected, where: tuple, opts: dict) -> None:
    try:
        _compare_one(actual, expected, where, opts)
    except _Mismatch as e:
        if not e.where:
            e.where = where
        raise


def _compare_one(actual, expected, where: tuple, opts: dict) -> None:
    if actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
        return
    if isinstance(actual, bool) and isinstance(expected, bool):
        if actual is not expected:
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    tensors = isinstance(actual, Tensor) and isinstance(expected, Tensor)
    if tensors or (_is_array(actual) and _is_array(expected)):  # torch.testing compares arrays as tensors
        if not opts["allow_subclasses"] and type(actual) is not type(expected):
            raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                                       f"{type(expected)}.")  # fmt: skip
        if not tensors:
            actual, expected = _ops.from_numpy(actual), _ops.from_numpy(expected)
        _compare_tensors(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"],
                         opts["check_stride"])  # fmt: skip
        return
    numbers = (int, float)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and not isinstance(actual, bool) \
            and not isinstance(expected, bool):  # fmt: skip
        _compare_numbers(actual, expected, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"])
        return
    if isinstance(actual, str) or isinstance(expected, str):
        pass  # strings are sequences, but torch.testing compares no strings
    elif isinstance(actual, Sequence) and isinstance(expected, Sequence):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, (*where, i), opts)
        return
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            missing, extra = set(expected) - set(actual), set(actual) - set(expected)
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(missing)}\n"
                            f"Additional keys in the actual mapping: {sorted(extra)}")  # fmt: skip
        for key in expected:
            _compare(actual[key], expected[key], (*where, key), opts)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.")  # fmt: skip


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Same as torch.testing.assert_close: asserts that ``actual`` and ``expected`` are close.

    Tensors (and NumPy arrays) must have the same shape and, unless ``check_dtype=False``, dtype; their values
    match when ``|actual - expected| <= atol + rtol * |expected|`` elementwise. Without ``rtol`` and ``atol``
    the tolerances are torch's for the dtype: float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32
    (1.3e-6, 1e-5), float64 (1e-7, 1e-7), integers and bool exactly. Python numbers compare as float64/int64,
    and sequences and mappings element by element. A mismatch raises ``AssertionError`` with torch's message
    (the number of mismatched elements and the greatest absolute and relative differences with their
    indices); ``msg`` replaces it, or, as a callable, receives it and returns the one to raise.
    ``check_device`` and ``check_layout`` are accepted: every pyframe tensor is a strided CPU tensor.

    Raises:
        ValueError: only one of ``rtol`` and ``atol`` is given.
        TypeError: the inputs are of types that cannot be compared (a tensor and a list, say).
        AssertionError: the inputs are not close.
    """
    __tracebackhide__ = True
    del check_device, check_layout
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_dtype=check_dtype, check_stride=check_stride)  # fmt: skip
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as e:
        text = e.msg
        if not isinstance(msg, str):
            if e.where:
                text += f"\n\nThe failure occurred for item {''.join(str([k]) for k in e.where)}"
            text = msg(text) if callable(msg) else text
        else:
            text = msg
        raise e.kind(text) from None


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:  # fmt: skip
    """Same as torch.testing.assert_allclose (deprecated in torch for ``assert_close``): ``assert_close`` without
    the dtype check, with NaNs equal by default."""
    warnings.warn(
        "`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. Please "
        "use `torch.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, Tensor):
        actual = _ops.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _ops.tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


from pyframe.testing._creation import make_tensor  # noqa: E402  # isort: skip
