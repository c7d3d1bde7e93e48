"""Bitwise ops: ``bitwise_and``/``or``/``xor``/``not``, the shifts, ``gcd`` and ``lcm``, computed in the C core
(``core_c/src/bitwise.c``) on bool and the integer dtypes. Operands promote as torch's (``uint8 & int8`` is
int16, a Python int keeps the tensor's dtype); a floating result dtype raises, as torch has no bitwise op on
floats. None is differentiable: no floating input can reach them."""

from __future__ import annotations

from pyframe._backend import check, lib
from pyframe._dtype import bool_
from pyframe.ops._common import (
    as_tensor_of,
    broadcast_shapes,
    check_inplace_dtype,
    check_inplace_shape,
    overlaps,
    result_type,
)
from pyframe.tensor import Tensor, empty_tensor, set_data

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    "gcd", "lcm",
]  # fmt: skip

_TAKES_BOOL = {lib.PF_BITWISE_AND, lib.PF_BITWISE_OR, lib.PF_BITWISE_XOR}
_TENSORS_ONLY = {lib.PF_GCD, lib.PF_LCM}


def _check_dtype(name: str, dt, takes_bool: bool) -> None:
    if dt.is_floating_point or (dt is bool_ and not takes_bool):
        allowed = "bool and integer" if takes_bool else "integer"
        raise TypeError(f"{name}(): not implemented for {dt.name} operands (it takes {allowed} dtypes)")


def _into(out: Tensor, dt, shape: tuple, label: str, compute, inplace: bool = False) -> Tensor:
    """``compute(dst)`` written into ``out`` (torch's out= and in-place rules: the result's category must fit
    ``out``'s dtype, an empty ``out=`` is resized, an in-place target never), through a temporary when ``out``
    differs in dtype or overlaps an operand."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{label}(): out must be a Tensor, got {type(out).__name__}")
    out._write_check()
    check_inplace_dtype(out, dt, label)
    if not inplace and out._numel == 0 and out._shape != shape:
        set_data(out, empty_tensor(shape, out.dtype))
    check_inplace_shape(out, shape, label)
    tmp = empty_tensor(shape, dt)
    compute(tmp)
    check(lib.pf_copy(tmp._d(), out._d()))
    out._bump()
    return out


def _binary(op: int, name: str, input, other, out=None, inplace: bool = False) -> Tensor:  # noqa: A002
    label = name + "_" if inplace else name
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{label}(): expected at least one Tensor, got {type(input).__name__} and "
                        f"{type(other).__name__}")  # fmt: skip
    if op in _TENSORS_ONLY and not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError(f"{label}(): takes two tensors (as torch, no number overload), got "
                        f"{type(input).__name__} and {type(other).__name__}")  # fmt: skip
    dt = result_type(input, other)
    _check_dtype(label, dt, op in _TAKES_BOOL)
    shape = broadcast_shapes(getattr(input, "_shape", ()), getattr(other, "_shape", ()))
    a, b = as_tensor_of(input, dt), as_tensor_of(other, dt)

    def compute(dst: Tensor) -> Tensor:
        check(lib.pf_bitwise(op, a._d(), b._d(), dst._d()))
        return dst

    if out is None:
        return compute(empty_tensor(shape, dt))
    if out.dtype is dt and out._shape == shape and not overlaps(out, a) and not overlaps(out, b):
        out._write_check()
        compute(out)
        out._bump()
        return out
    return _into(out, dt, shape, label, compute, inplace)


def _make(op: int, name: str, doc: str):
    def fn(input, other, *, out=None) -> Tensor:  # noqa: A002 - torch's parameter names
        return _binary(op, name, input, other, out)

    def fn_(input, other) -> Tensor:  # noqa: A002
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}_(): expected a Tensor, got {type(input).__name__}")
        return _binary(op, name, input, other, input, inplace=True)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}: {doc}"
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn_.__doc__ = f"Same as torch.Tensor.{name}_: {name} written into this tensor."
    return fn, fn_


bitwise_and, bitwise_and_ = _make(lib.PF_BITWISE_AND, "bitwise_and", "``input & other`` (bool or integer).")
bitwise_or, bitwise_or_ = _make(lib.PF_BITWISE_OR, "bitwise_or", "``input | other`` (bool or integer).")
bitwise_xor, bitwise_xor_ = _make(lib.PF_BITWISE_XOR, "bitwise_xor", "``input ^ other`` (bool or integer).")
bitwise_left_shift, bitwise_left_shift_ = _make(
    lib.PF_BITWISE_LEFT_SHIFT, "bitwise_left_shift",
    "``input << other`` on integers, wrapping; a count below 0 or past the width gives 0.",
)  # fmt: skip
bitwise_right_shift, bitwise_right_shift_ = _make(
    lib.PF_BITWISE_RIGHT_SHIFT, "bitwise_right_shift",
    "``input >> other`` on integers (arithmetic for signed types); a count below 0 or past the width gives "
    "the sign fill (0 or -1).",
)  # fmt: skip
gcd, gcd_ = _make(lib.PF_GCD, "gcd", "the greatest common divisor of integers (non-negative; gcd(0, 0) = 0).")
lcm, lcm_ = _make(lib.PF_LCM, "lcm", "the least common multiple of integers (non-negative; 0 if either is 0).")


def bitwise_not(input: Tensor, *, out=None) -> Tensor:  # noqa: A002 - torch's parameter name
    """Same as torch.bitwise_not: ``~input``, every bit flipped (bool: logical not)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bitwise_not(): expected a Tensor, got {type(input).__name__}")
    dt = input.dtype
    _check_dtype("bitwise_not", dt, True)

    def compute(dst: Tensor) -> Tensor:
        check(lib.pf_bitwise_not(input._d(), dst._d()))
        return dst

    if out is None:
        return compute(empty_tensor(input._shape, dt))
    if out is input or (out.dtype is dt and out._shape == input._shape and not overlaps(out, input)):
        out._write_check()  # element for element: in place needs no temporary
        compute(out)
        out._bump()
        return out
    return _into(out, dt, input._shape, "bitwise_not", compute)


def bitwise_not_(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.bitwise_not_: bitwise_not written into this tensor."""
    return bitwise_not(input, out=input)


def _reflected(fn):
    """``1 << x``: the number is the first operand."""

    def op(self, other):
        return fn(other, self)

    op.__name__ = f"r{fn.__name__}"
    return op


# the Tensor operators, bound by _tensor_methods.bind
OPERATORS = {
    "__and__": bitwise_and, "__rand__": bitwise_and, "__iand__": bitwise_and_,
    "__or__": bitwise_or, "__ror__": bitwise_or, "__ior__": bitwise_or_,
    "__xor__": bitwise_xor, "__rxor__": bitwise_xor, "__ixor__": bitwise_xor_,
    "__lshift__": bitwise_left_shift, "__rlshift__": _reflected(bitwise_left_shift),
    "__ilshift__": bitwise_left_shift_,
    "__rshift__": bitwise_right_shift, "__rrshift__": _reflected(bitwise_right_shift),
    "__irshift__": bitwise_right_shift_,
    "__invert__": bitwise_not,
}  # fmt: skip
INPLACE = {
    "bitwise_and_": bitwise_and_, "bitwise_or_": bitwise_or_, "bitwise_xor_": bitwise_xor_,
    "bitwise_not_": bitwise_not_, "bitwise_left_shift_": bitwise_left_shift_,
    "bitwise_right_shift_": bitwise_right_shift_, "gcd_": gcd_, "lcm_": lcm_,
}  # fmt: skip
