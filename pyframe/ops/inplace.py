"""In-place variants of the unary ops (``exp_``, ``neg_``, ``relu_``, ...), generated from the
elementwise op table so every unary op has one. Outside autograd a contiguous tensor is
rewritten by one C call into its own memory; when a gradient is needed the out-of-place op
runs on a copy and ``copy_`` writes it back carrying the history (torch's semantics)."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import check, lib
from pyframe.ops import elementwise as ew
from pyframe.ops._common import check_inplace_dtype
from pyframe.tensor import Tensor

_unary_contig = lib.pf_unary_contig
# the table's floating ops turn integers into float32: in place on an integer tensor that is an error
_FLOATING = {name for name, (_, floating, _, _) in ew._UNARY.items() if floating}


def write_back(input: Tensor, fn, *args, **kwargs) -> Tensor:  # noqa: A002
    """``fn(input, *args)`` written into ``input``, with the history carried by ``copy_``. Under
    autograd ``fn`` reads a copy: its graph may save its input, which the write would otherwise
    change under it (torch keeps the original ``self`` the same way); without a graph no copy."""
    source = input.clone() if input.requires_grad and _grad_mode.enabled else input
    return ew.copy_(input, fn(source, *args, **kwargs))


def _make(name: str):
    fn = ew.unary_ops[name]
    code = ew._UNARY[name][0]

    def op(input: Tensor) -> Tensor:  # noqa: A002 - torch's parameter name
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}_(): expected a Tensor, got {type(input).__name__}")
        input._write_check()
        if name in _FLOATING and not input.dtype.is_floating_point:
            check_inplace_dtype(input, ew.float32, name + "_")
        if not (input.requires_grad and _grad_mode.enabled) and input._contig:
            rc = _unary_contig(code, input.dtype.code, input._ptr, input._ptr, input._numel)
            if rc:
                check(rc)
            input._bump()
            return input
        return write_back(input, fn)

    op.__name__ = op.__qualname__ = name + "_"
    op.__doc__ = f"Same as torch.Tensor.{name}_: {name} written into this tensor."
    return op


inplace_unary_ops = {name + "_": _make(name) for name in ew._UNARY}
globals().update(inplace_unary_ops)

__all__ = list(inplace_unary_ops)
