"""Convolutions: conv1d/2d/3d and their transposes, unfold and fold (im2col-based; 3-d through vol2col)."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import (
    _as_2d,
    _back,
    _float_arg,
    _pair,
    _same_dtype,
    _single,
    _tensor_arg,
    in_float32,
    nonempty_spatial,
)
from pyframe.nn.functional.padding import pad
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold", "unfold",
]  # fmt: skip


def _out_size(fn: str, shape: tuple, k: tuple, s: tuple, p: tuple, d: tuple) -> tuple:
    """Output height and width, with a clear error when the kernel does not fit."""
    h, w = shape[-2:]
    eff = (d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1)
    ph, pw = h + 2 * p[0], w + 2 * p[1]
    if ph < eff[0] or pw < eff[1]:
        raise ShapeError(
            f"{fn}(): kernel size {tuple(k)} (dilated {eff}) is larger than the padded input size ({ph}, {pw}) "
            f"(input shape {list(shape)}, padding {tuple(p)}, dilation {tuple(d)})"
        )
    return (ph - eff[0]) // s[0] + 1, (pw - eff[1]) // s[1] + 1


def _im2col(x: Tensor, k: tuple, s: tuple, p: tuple, d: tuple, oh: int, ow: int, pad_value: float = 0.0) -> Tensor:
    n, c = x._shape[:2]
    col = empty_tensor((n, c * k[0] * k[1], oh * ow), x.dtype)
    check(lib.pf_im2col(x._d(), col._d(), k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], pad_value))
    return col


def _col2im(col: Tensor, shape: tuple, k: tuple, s: tuple, p: tuple, d: tuple) -> Tensor:
    x = empty_tensor(shape, col.dtype)
    check(lib.pf_fill(x._d(), 0.0, 0))
    check(lib.pf_col2im(col._d(), x._d(), k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]))
    return x


def _check_im2col_dtype(fn: str, x: Tensor) -> None:
    if x.dtype is not _dtype.float32 and x.dtype is not _dtype.float64:
        raise TypeError(
            f"{fn}(): expected floating operands of one dtype (float16, bfloat16, float32 or float64), "
            f"got {x.dtype.name}"
        )


def _batched(fn: str, x: Tensor, name: str = "input") -> tuple[Tensor, bool]:
    """A 4-d view of an input that may be 3-d (unbatched), and whether it was batched."""
    _tensor_arg(x, fn, name)
    if x.ndim == 4:
        return x, True
    if x.ndim == 3:
        return x.unsqueeze(0), False
    raise ShapeError(f"{fn}(): expected a 3-d (C, H, W) or 4-d (N, C, H, W) {name}, got shape {list(x._shape)}")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Same as torch.nn.functional.unfold (im2col): [N, C, H, W] -> [N, C*kh*kw, L]."""
    x, batched = _batched("unfold", input)
    _check_im2col_dtype("unfold", x)
    k, d = _pair(kernel_size, "unfold", "kernel_size", 1), _pair(dilation, "unfold", "dilation", 1)
    p, s = _pair(padding, "unfold", "padding", 0), _pair(stride, "unfold", "stride", 1)
    oh, ow = _out_size("unfold", x._shape, k, s, p, d)
    col = _im2col(x, k, s, p, d, oh, ow)
    if needs_grad(x):
        shape = x._shape
        record("Im2ColBackward0", lambda g: (fold(g, shape[2:], k, d, p, s),), (x,), col)
    return col if batched else col.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Same as torch.nn.functional.fold (col2im): [N, C*kh*kw, L] -> [N, C, H, W], summing
    overlapping blocks."""
    _tensor_arg(input, "fold")
    if input.ndim not in (2, 3):
        raise ShapeError(f"fold(): expected a 2-d or 3-d input (N, C*kh*kw, L), got shape {list(input._shape)}")
    col = input if input.ndim == 3 else input.unsqueeze(0)
    _check_im2col_dtype("fold", col)
    size = _pair(output_size, "fold", "output_size", 1)
    k, d = _pair(kernel_size, "fold", "kernel_size", 1), _pair(dilation, "fold", "dilation", 1)
    p, s = _pair(padding, "fold", "padding", 0), _pair(stride, "fold", "stride", 1)
    n, rows, length = col._shape
    kk = k[0] * k[1]
    if rows % kk:
        raise ShapeError(
            f"fold(): expected size of input's dimension 1 to be divisible by the product of kernel_size "
            f"{k[0] * k[1]}, but got input.size(1)={rows} (input shape {list(input._shape)})"
        )
    oh, ow = _out_size("fold", size, k, s, p, d)
    if oh * ow != length:
        raise ShapeError(
            f"fold(): given output_size={size}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, expected "
            f"size of input's last dimension to match the calculated number of sliding blocks {oh} * {ow} = "
            f"{oh * ow}, but got {length} (input shape {list(input._shape)})"
        )
    out = _col2im(col, (n, rows // kk) + size, k, s, p, d)
    if needs_grad(col):
        record("Col2ImBackward0", lambda g: (unfold(g, k, d, p, s),), (col,), out)
    return out if input.ndim == 3 else out.squeeze(0)


def _conv_padding(padding, fn: str, k: tuple, s: tuple, d: tuple) -> tuple[tuple, tuple]:
    """Symmetric (ph, pw) and any extra (bottom, right) padding that 'same' needs."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise ValueError(f"{fn}(): padding must be 'valid', 'same', an int or a pair of ints, got {padding!r}")
        if s != (1, 1):
            raise ValueError(f"{fn}(): padding='same' is not supported for strided convolutions (stride {s})")
        total = (d[0] * (k[0] - 1), d[1] * (k[1] - 1))
        return (total[0] // 2, total[1] // 2), (total[0] % 2, total[1] % 2)
    return _pair(padding, fn, "padding", 0), (0, 0)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups=1):
    """Same as torch.nn.functional.conv2d: one C call each way (``pf_conv2d``), which unfolds
    tiles of output positions small enough to stay in cache and multiplies each straight
    into the output (or the gradients). Double backward works (create_graph differentiates
    a composition of unfold, matmul and fold)."""
    x, batched = _batched("conv2d", input)
    _tensor_arg(weight, "conv2d", "weight")
    if weight.ndim != 4:
        raise ShapeError(
            f"conv2d(): weight must be 4-d [out_channels, in_channels/groups, kh, kw], got shape {list(weight._shape)}"
        )
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"conv2d(): groups must be a positive int, got {groups!r}")
    if bias is not None:
        _tensor_arg(bias, "conv2d", "bias")
    _check_im2col_dtype("conv2d", x)
    _same_dtype("conv2d", x, weight=weight, bias=bias)
    n, c, h, w = x._shape
    o, cg, kh, kw = weight._shape
    if o % groups:
        raise ShapeError(
            f"conv2d(): out_channels {o} (weight shape {list(weight._shape)}) is not divisible by groups {groups}"
        )
    if cg * groups != c:
        raise ShapeError(
            f"conv2d(): given groups={groups}, weight of size {list(weight._shape)}, expected input "
            f"{list(input._shape)} to have {cg * groups} channels, but got {c} channels instead"
        )
    if bias is not None and bias._shape != (o,):
        raise ShapeError(f"conv2d(): bias must have shape [{o}], got {list(bias._shape)}")
    k = (kh, kw)
    s, d = _pair(stride, "conv2d", "stride", 1), _pair(dilation, "conv2d", "dilation", 1)
    p, extra = _conv_padding(padding, "conv2d", k, s, d)
    if extra != (0, 0):  # 'same' with an even dilated kernel: the odd pixel goes bottom/right, as torch
        x = pad(x, (0, extra[1], 0, extra[0]))
        n, c, h, w = x._shape
    oh, ow = _out_size("conv2d", x._shape, k, s, p, d)
    g, og, r, length = groups, o // groups, cg * kh * kw, oh * ow
    geometry = (s[0], s[1], p[0], p[1], d[0], d[1], groups)
    wc = weight if weight._contig else weight.detach().contiguous()
    out = empty_tensor((n, o, oh, ow), x.dtype)
    check(lib.pf_conv2d(x._d(), wc._d(), bias._d() if bias is not None else ffi.NULL, out._d(), *geometry))
    if needs_grad(x, weight, bias):
        shape = x._shape

        def graph_backward(gy):
            """create_graph: the same gradients from differentiable ops (unfold, GEMM, fold)."""
            g4 = gy.reshape(n, g, og, length)
            gx = gw = None
            if x.requires_grad:
                gcol = matmul(weight.reshape(g, og, r).mT, g4)  # [N, G, R, L]
                gx = fold(gcol.reshape(n, c * kh * kw, length), shape[2:], k, d, p, s)
            if weight.requires_grad:
                cols = unfold(x, k, d, p, s).view(n, g, r, length)
                gw = rd.sum(matmul(g4, cols.mT), 0).reshape(weight._shape)
            return gx, gw

        def backward(gy):
            if _grad_mode.enabled:
                gx, gw = graph_backward(gy)
            else:
                gy = gy if gy._contig else gy.contiguous()
                gx = empty_tensor(shape, x.dtype) if x.requires_grad else None
                gw = empty_tensor(weight._shape, x.dtype) if weight.requires_grad else None
                check(
                    lib.pf_conv2d_backward(
                        gy._d(), x._d(), wc._d(), gx._d() if gx is not None else ffi.NULL,
                        gw._d() if gw is not None else ffi.NULL, *geometry,
                    )
                )  # fmt: skip
            gb = rd.sum(gy, (0, 2, 3)) if bias is not None and bias.requires_grad else None
            return gx, gw, gb

        record("ConvolutionBackward0", backward, (x, weight, bias), out, (x, weight))
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups=1):
    """Same as torch.nn.functional.conv1d (weight ``(out, in/groups, k)``), computed by conv2d."""
    x, batched = _as_2d("conv1d", input)
    _tensor_arg(weight, "conv1d", "weight")
    if weight.ndim != 3:
        raise ShapeError(f"conv1d(): weight must be 3-d [out_channels, in_channels/groups, k], got shape "
                         f"{list(weight._shape)}")  # fmt: skip
    s, d = _single(stride, "conv1d", "stride"), _single(dilation, "conv1d", "dilation")
    p = padding if isinstance(padding, str) else (0, _single(padding, "conv1d", "padding"))
    return _back(conv2d(x, weight.unsqueeze(2), bias, (1, s), p, (1, d), groups), batched)


def _transposed_args(fn: str, input: Tensor, x: Tensor, weight: Tensor, bias: Tensor | None, groups) -> tuple:
    """The checks conv_transpose2d and conv_transpose3d share, on the batched input ``x`` (of the user's
    ``input``) and a weight ``(in, out/groups, *kernel)``: returns ``(groups, out_channels)``."""
    _float_arg(weight, fn, "weight")
    _check_im2col_dtype(fn, x)
    if weight.ndim != x.ndim:
        kernel = ", ".join(("kd", "kh", "kw")[5 - x.ndim :])
        raise ShapeError(f"{fn}(): weight must be {x.ndim}-d [in_channels, out_channels/groups, {kernel}], got "
                         f"shape {list(weight._shape)}")  # fmt: skip
    if bias is not None:
        _tensor_arg(bias, fn, "bias")
    _same_dtype(fn, x, weight=weight, bias=bias)
    groups = _groups_arg(fn, groups)
    nonempty_spatial(fn, x)
    c, (cin, og) = x._shape[1], weight._shape[:2]
    if cin != c:
        raise ShapeError(f"{fn}(): input has {c} channels (shape {list(input._shape)}) but weight of shape "
                         f"{list(weight._shape)} expects {cin}")  # fmt: skip
    if c % groups:
        raise ShapeError(f"{fn}(): in_channels {c} is not divisible by groups {groups}")
    o = og * groups
    if bias is not None and bias._shape != (o,):
        raise ShapeError(f"{fn}(): bias must have shape [{o}], got {list(bias._shape)}")
    return groups, o


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.conv_transpose2d: weight ``(in, out/groups, kh, kw)``,
    output size ``(H-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    Differences: ``output_padding`` must be smaller than ``stride`` (torch also allows it
    below ``dilation``)."""
    fn = "conv_transpose2d"
    x, batched = _batched(fn, input)
    groups, o = _transposed_args(fn, input, x, weight, bias, groups)
    n, c, h, w = x._shape
    _, og, kh, kw = weight._shape
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


def _triple(v, fn: str, name: str, minimum: int) -> tuple:
    """An int or a sequence of three ints (a 1-sequence repeated), each at least ``minimum``."""
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v, v)
    if not (isinstance(v, (tuple, list)) and len(v) == 3 and
            all(isinstance(n, int) and not isinstance(n, bool) for n in v)):  # fmt: skip
        raise TypeError(f"{fn}(): {name} must be an int or a tuple of three ints, got {v!r}")
    if min(v) < minimum:
        raise ValueError(f"{fn}(): {name} must be >= {minimum}, got {tuple(v)}")
    return tuple(v)


def _batched3d(fn: str, x: Tensor, name: str = "input") -> tuple[Tensor, bool]:
    """A 5-d view of an input that may be 4-d (unbatched), and whether it was batched."""
    _tensor_arg(x, fn, name)
    if x.ndim == 5:
        return x, True
    if x.ndim == 4:
        return x.unsqueeze(0), False
    raise ShapeError(f"{fn}(): expected a 4-d (C, D, H, W) or 5-d (N, C, D, H, W) {name}, got shape "
                     f"{list(x._shape)}")  # fmt: skip


def _vol_out(fn: str, shape: tuple, k: tuple, s: tuple, p: tuple, d: tuple) -> tuple:
    out = []
    for i in range(3):
        eff, padded = d[i] * (k[i] - 1) + 1, shape[2 + i] + 2 * p[i]
        if padded < eff:
            raise ShapeError(f"{fn}(): kernel size {tuple(k)} (dilation {tuple(d)}) is larger than the padded "
                             f"input (input shape {list(shape)}, padding {tuple(p)})")  # fmt: skip
        out.append((padded - eff) // s[i] + 1)
    return tuple(out)


def _unfold3d(x: Tensor, k: tuple, s: tuple, p: tuple, d: tuple) -> Tensor:
    """vol2col of a 5-d x: [N, C*kd*kh*kw, OD*OH*OW]; backward folds (and the fold's backward unfolds)."""
    n, c = x._shape[:2]
    o = _vol_out("conv3d", x._shape, k, s, p, d)
    col = empty_tensor((n, c * k[0] * k[1] * k[2], o[0] * o[1] * o[2]), x.dtype)
    check(lib.pf_vol2col(x._d(), col._d(), [*k, *s, *p, *d]))
    if needs_grad(x):
        shape = x._shape
        record("Im2ColBackward0", lambda g: (_fold3d(g, shape, k, s, p, d),), (x,), col)
    return col


def _fold3d(col: Tensor, shape: tuple, k: tuple, s: tuple, p: tuple, d: tuple) -> Tensor:
    """col2vol into a 5-d tensor of ``shape``, summing overlapping blocks."""
    col = col if col._shape[-1] <= 1 or col._strides[-1] == 1 else col.contiguous()
    x = empty_tensor(shape, col.dtype)
    check(lib.pf_fill(x._d(), 0.0, 0))
    check(lib.pf_col2vol(col._d(), x._d(), [*k, *s, *p, *d]))
    if needs_grad(col):
        record("Col2ImBackward0", lambda g: (_unfold3d(g, k, s, p, d),), (col,), x)
    return x


def _groups_arg(fn: str, groups) -> int:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{fn}(): groups must be a positive int, got {groups!r}")
    return groups


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups=1):
    """Same as torch.nn.functional.conv3d: weight ``(out, in/groups, kd, kh, kw)``; a C unfold of the volume
    (vol2col) and one batched matmul per call, differentiable twice."""
    fn = "conv3d"
    x, batched = _batched3d(fn, input)
    _tensor_arg(weight, fn, "weight")
    if weight.ndim != 5:
        raise ShapeError(f"{fn}(): weight must be 5-d [out_channels, in_channels/groups, kd, kh, kw], got shape "
                         f"{list(weight._shape)}")  # fmt: skip
    groups = _groups_arg(fn, groups)
    if bias is not None:
        _tensor_arg(bias, fn, "bias")
    _check_im2col_dtype(fn, x)
    _same_dtype(fn, x, weight=weight, bias=bias)
    n, c = x._shape[:2]
    o, cg, *k = weight._shape
    k = tuple(k)
    if o % groups:
        raise ShapeError(f"{fn}(): out_channels {o} (weight shape {list(weight._shape)}) is not divisible by groups "
                         f"{groups}")  # fmt: skip
    if cg * groups != c:
        raise ShapeError(f"{fn}(): given groups={groups}, weight of size {list(weight._shape)}, expected input "
                         f"{list(input._shape)} to have {cg * groups} channels, but got {c} channels "
                         "instead")  # fmt: skip
    if bias is not None and bias._shape != (o,):
        raise ShapeError(f"{fn}(): bias must have shape [{o}], got {list(bias._shape)}")
    s, d = _triple(stride, fn, "stride", 1), _triple(dilation, fn, "dilation", 1)
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"{fn}(): padding must be 'valid', 'same', an int or a tuple of three ints, got "
                             f"{padding!r}")  # fmt: skip
        if padding == "same" and s != (1, 1, 1):
            raise ValueError(f"{fn}(): padding='same' is not supported for strided convolutions (stride {s})")
        total = [d[i] * (k[i] - 1) if padding == "same" else 0 for i in range(3)]
        p = tuple(t // 2 for t in total)
        extra = [t % 2 for t in total]
        if any(extra):  # the odd pixel goes to the end of each dim, as torch
            x = pad(x, (0, extra[2], 0, extra[1], 0, extra[0]))
    else:
        p = _triple(padding, fn, "padding", 0)
    nonempty_spatial(fn, x)
    col = _unfold3d(x, k, s, p, d)
    out_sp = _vol_out(fn, x._shape, k, s, p, d)
    r, length = cg * k[0] * k[1] * k[2], col._shape[-1]
    out = matmul(weight.reshape(groups, o // groups, r), col.view(n, groups, r, length))
    out = out.reshape((n, o) + out_sp)
    if bias is not None:
        out = ew.add(out, bias.reshape(o, 1, 1, 1))
    return out if batched else out.squeeze(0)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.conv_transpose3d: weight ``(in, out/groups, kd, kh, kw)``, output size
    ``(D-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1`` per dim; a batched matmul and a C
    fold of the volume (col2vol). ``output_padding`` must be smaller than ``stride`` or ``dilation``."""
    fn = "conv_transpose3d"
    x, batched = _batched3d(fn, input)
    groups, o = _transposed_args(fn, input, x, weight, bias, groups)
    n, c, *sp = x._shape
    _, og, *k = weight._shape
    k = tuple(k)
    s, p = _triple(stride, fn, "stride", 1), _triple(padding, fn, "padding", 0)
    d, op = _triple(dilation, fn, "dilation", 1), _triple(output_padding, fn, "output_padding", 0)
    if any(op[i] >= s[i] and op[i] >= d[i] for i in range(3)):
        raise ValueError(f"{fn}(): output_padding {op} must be smaller than either stride {s} or dilation {d}")
    size = tuple((sp[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3))
    if min(size) < 1:
        raise ShapeError(f"{fn}(): the output size {size} computed for input shape {list(input._shape)} is too "
                         f"small")  # fmt: skip
    cg, kk, length = c // groups, k[0] * k[1] * k[2], sp[0] * sp[1] * sp[2]
    wt = weight.reshape(groups, cg, og * kk).transpose(-1, -2)  # [G, Og*kk, Cg]
    cols = matmul(wt, x.reshape(n, groups, cg, length))  # [N, G, Og*kk, D*H*W]
    out = _fold3d(cols.reshape(n, o * kk, length), (n, o) + size, k, s, p, d)
    if bias is not None:
        out = ew.add(out, bias.reshape(o, 1, 1, 1))
    return out if batched else out.squeeze(0)


# float16 and bfloat16 computed in float32 and rounded back, as torch's CPU kernels (the C kernels take float32/64)
for _name in __all__:
    globals()[_name] = in_float32(globals()[_name])
