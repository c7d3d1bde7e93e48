"""Transposed convolutions: the input gradient of a convolution run forward. Per group,
``W^T @ x`` gives the columns and col2im (fold) adds the overlapping blocks up, so backward
(and double backward) come from matmul and fold's own derivatives."""

from __future__ import annotations

from pyframe._backend import ShapeError
from pyframe.nn.functional._utils import _float_arg, _pair, _same_dtype, _tensor_arg
from pyframe.nn.functional.conv import _batched, _check_im2col_dtype, fold
from pyframe.nn.functional.conv1d import _as_2d, _back, _single
from pyframe.ops import elementwise as ew
from pyframe.ops.linalg import matmul
from pyframe.tensor import Tensor


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.conv_transpose2d: weight ``(in, out/groups, kh, kw)``,
    output size ``(H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    Differences: ``output_padding`` must be smaller than ``stride`` (torch also allows it
    below ``dilation``)."""
    fn = "conv_transpose2d"
    x, batched = _batched(fn, input)
    _float_arg(weight, fn, "weight")
    _check_im2col_dtype(fn, x)
    if weight.ndim != 4:
        raise ShapeError(f"{fn}(): weight must be 4-d [in_channels, out_channels/groups, kh, kw], got shape "
                         f"{list(weight._shape)}")  # fmt: skip
    if bias is not None:
        _tensor_arg(bias, fn, "bias")
    _same_dtype(fn, x, weight=weight, bias=bias)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{fn}(): groups must be a positive int, got {groups!r}")
    n, c, h, w = x._shape
    cin, og, kh, kw = weight._shape
    if cin != c:
        raise ShapeError(f"{fn}(): input has {c} channels (shape {list(input._shape)}) but weight of shape "
                         f"{list(weight._shape)} expects {cin}")  # fmt: skip
    if c % groups:
        raise ShapeError(f"{fn}(): in_channels {c} is not divisible by groups {groups}")
    o = og * groups
    if bias is not None and bias._shape != (o,):
        raise ShapeError(f"{fn}(): bias must have shape [{o}], got {list(bias._shape)}")
    s, p = _pair(stride, fn, "stride", 1), _pair(padding, fn, "padding", 0)
    d, op = _pair(dilation, fn, "dilation", 1), _pair(output_padding, fn, "output_padding", 0)
    for i in (0, 1):
        if op[i] >= s[i]:
            raise ValueError(f"{fn}(): output_padding {op} must be smaller than stride {s}")
    oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1
    ow = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1
    if oh < 1 or ow < 1:
        raise ShapeError(f"{fn}(): the output size ({oh}, {ow}) computed for input shape {list(input._shape)} "
                         f"is too small")  # fmt: skip
    g, cg, kk = groups, c // groups, kh * kw
    wt = weight.reshape(g, cg, og * kk).transpose(-1, -2)  # [G, Og*kk, Cg]
    cols = matmul(wt, x.reshape(n, g, cg, h * w))  # [N, G, Og*kk, H*W]
    out = fold(cols.reshape(n, o * kk, h * w), (oh, ow), (kh, kw), d, p, s)
    if bias is not None:
        out = ew.add(out, bias.reshape(o, 1, 1))
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.conv_transpose1d (weight ``(in, out/groups, k)``), computed by
    conv_transpose2d."""
    fn = "conv_transpose1d"
    x, batched = _as_2d(fn, input)
    _tensor_arg(weight, fn, "weight")
    if weight.ndim != 3:
        raise ShapeError(f"{fn}(): weight must be 3-d [in_channels, out_channels/groups, k], got shape "
                         f"{list(weight._shape)}")  # fmt: skip
    one = lambda v, name: (1 if name in ("stride", "dilation") else 0, _single(v, fn, name))  # noqa: E731
    out = conv_transpose2d(x, weight.unsqueeze(2), bias, one(stride, "stride"), one(padding, "padding"),
                           one(output_padding, "output_padding"), groups, one(dilation, "dilation"))  # fmt: skip
    return _back(out, batched)
