"""Functional forms of the layers, activations and losses. Same as torch.nn.functional.

Every tensor computation runs in the C core through pyframe's ops. Layers with a costly
or numerically delicate gradient (linear, conv2d, the pools, batch_norm, layer_norm, the
binary cross entropies) record one node with a dedicated backward written in the same ops;
the rest are compositions and get their gradient from the ops they are made of.

Differences from PyTorch are listed in each docstring. Common to all: CPU only, float32
and float64 for the im2col-based ops (conv, pools, unfold, fold).
"""

from __future__ import annotations

import math
import warnings

from pyframe import _dtype, _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc_large, alloc_small, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops._common import zeros_of
from pyframe.ops.linalg import matmul
from pyframe.ops.shape import embed
from pyframe.tensor import Tensor, empty_tensor, fresh

__all__ = [
    "linear", "bilinear", "conv2d", "unfold", "fold", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "batch_norm", "layer_norm", "group_norm", "embedding", "dropout", "one_hot", "pad",
    "relu", "relu_", "relu6", "leaky_relu", "elu", "hardtanh", "gelu", "tanh", "sigmoid", "silu", "softplus",
    "logsigmoid", "softmax", "softmin", "log_softmax", "normalize",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div",
]  # fmt: skip


# ---- helpers -----------------------------------------------------------------------------


def _tensor_arg(x, fn: str, name: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


def _float_arg(x, fn: str, name: str = "input") -> Tensor:
    _tensor_arg(x, fn, name)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{fn}(): {name} must be a floating point tensor, got {x.dtype.name}")
    return x


def _same_dtype(fn: str, ref: Tensor, **others) -> None:
    for name, t in others.items():
        if t is not None and t.dtype is not ref.dtype:
            raise TypeError(f"{fn}(): input is {ref.dtype.name} but {name} is {t.dtype.name}; convert one of them")


def _pair(v, fn: str, name: str, minimum: int) -> tuple:
    """An int or a pair of ints as (h, w), each at least ``minimum``."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v, v)
    elif isinstance(v, (tuple, list)) and len(v) == 1:
        v = (v[0], v[0])
    if not (
        isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in v)
    ):
        raise TypeError(f"{fn}(): {name} must be an int or a pair of ints, got {v!r}")
    if v[0] < minimum or v[1] < minimum:
        raise ValueError(f"{fn}(): {name} must be >= {minimum}, got {tuple(v)}")
    return (v[0], v[1])


_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str, fn: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}(): {reduction!r} is not a valid value for reduction; use 'none', 'mean' or 'sum'")


def _reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return rd.mean(loss)
    if reduction == "sum":
        return rd.sum(loss)
    return loss


def _regrad(composite, inputs: tuple, grads) -> tuple:
    """Gradients of ``composite(*inputs)`` with a graph of their own (``create_graph=True``):
    dedicated backwards compute on values saved without history, so a double backward
    differentiates the op's composition of differentiable ops instead."""
    from pyframe.autograd import grad

    with _grad_mode.enable_grad():
        out = composite(*inputs)
    wanted = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    got = iter(grad(out, wanted, grads, retain_graph=True, create_graph=True, allow_unused=True))
    return tuple(next(got) if isinstance(t, Tensor) and t.requires_grad else None for t in inputs)


_new_desc = ffi.new


def _desc(ptr, code: int, shape: tuple, strides: tuple):
    """A pf_tensor descriptor (whole-array assignment is about twice as fast as _backend.desc)."""
    d = _new_desc("pf_tensor *")
    d.data = ptr
    d.dtype = code
    d.ndim = len(shape)
    d.shape = shape
    d.strides = strides
    return d


# Descriptors for linear's hot path (transposed weights, broadcast biases, outputs), keyed by
# everything they hold (address, dtype, shape, strides), so an entry can never describe other
# memory than its key says. The key holds a non-owning pointer: caching never keeps memory alive.
_desc_cache: dict = {}
_cast = ffi.cast


def _cached_desc(ptr, code: int, shape: tuple, strides: tuple):
    key = (_cast("char *", ptr), code, shape, strides)
    d = _desc_cache.get(key)
    if d is None:
        if len(_desc_cache) > 512:
            _desc_cache.clear()
        d = _desc_cache[key] = _desc(ptr, code, shape, strides)
    return d


# ---- linear ------------------------------------------------------------------------------

_matmul = lib.pf_matmul
_binary = lib.pf_binary
_binary_contig = lib.pf_binary_contig
_ADD = lib.PF_ADD


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Same as torch.nn.functional.linear: ``input @ weight.T + bias``, one GEMM that reads
    the transposed weight in place."""
    # fast path: 2-d input and weight of one dtype, bias None or [out_features]
    if (
        isinstance(input, Tensor) and isinstance(weight, Tensor) and len(input._shape) == 2
        and len(weight._shape) == 2 and input.dtype is weight.dtype
        and (bias is None or (isinstance(bias, Tensor) and bias.dtype is input.dtype
                             and bias._shape == weight._shape[:1]))
    ):  # fmt: skip
        return _linear2d(input, weight, bias)
    _tensor_arg(input, "linear")
    _tensor_arg(weight, "linear", "weight")
    if weight.ndim != 2:
        raise ShapeError(f"linear(): weight must be 2-d [out_features, in_features], got shape {list(weight._shape)}")
    if bias is not None:
        _tensor_arg(bias, "linear", "bias")
    _same_dtype("linear", input, weight=weight, bias=bias)
    if input.ndim == 0:
        raise ShapeError("linear(): input must have at least 1 dim, got a 0-d tensor")
    lead = input._shape[:-1]
    plain = bias is None or bias._shape == weight._shape[:1]
    out = _linear2d(input.reshape(-1, input._shape[-1]), weight, bias if plain else None)
    out = out.reshape(lead + (weight._shape[0],))
    return out if plain else ew.add(out, bias)


def _linear2d(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    m, k = x._shape
    n, k2 = w._shape
    if k != k2:
        raise ShapeError(
            f"linear(): input of shape {list(x._shape)} has {k} features but weight of shape {list(w._shape)} "
            f"expects {k2} (mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}))"
        )
    dt = x.dtype
    code = dt.code
    numel = m * n
    nbytes = numel * dt.itemsize
    data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
    shape, strides = (m, n), (n, 1)
    out = fresh(data, nbytes, shape, strides, numel, dt)
    # the descriptor cache, inlined: this path is benchmarked per call
    key = (_cast("char *", data), code, shape, strides)
    od = _desc_cache.get(key) or _cached_desc(data, code, shape, strides)
    out._desc = od
    ws = w._strides
    key = (_cast("char *", w._ptr), code, (k, n), (ws[1], ws[0]))
    wd = _desc_cache.get(key) or _cached_desc(w._ptr, code, (k, n), (ws[1], ws[0]))
    rc = _matmul(x._desc or x._d(), wd, od)
    if rc:
        check(rc)
    if b is not None:
        if m == 1 and b._contig:
            rc = _binary_contig(_ADD, code, data, b._ptr, data, n)
        else:
            rc = _binary(_ADD, od, _cached_desc(b._ptr, code, shape, (0, b._strides[0])), od)
        if rc:
            check(rc)
    if _grad_mode.enabled and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)):

        def backward(g):
            return (
                matmul(g, w) if x.requires_grad else None,
                matmul(g.mT, x) if w.requires_grad else None,
                rd.sum(g, 0).reshape(b._shape) if b is not None and b.requires_grad else None,
            )

        record("AddmmBackward0", backward, (x, w, b), out, (x, w))
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Same as torch.nn.functional.bilinear: ``y_k = x1 W_k x2 + b_k``, as two matmuls."""
    if weight.ndim != 3 or input1._shape[-1] != weight._shape[1] or input2._shape[-1] != weight._shape[2]:
        raise ShapeError(
            f"bilinear(): weight [out, in1, in2] of shape {list(weight._shape)} does not fit inputs of shapes "
            f"{list(input1._shape)} and {list(input2._shape)}"
        )
    o, i1, i2 = weight._shape
    t = matmul(input1, weight.permute(1, 0, 2).reshape(i1, o * i2))  # [..., o * i2]
    t = t.reshape(input1._shape[:-1] + (o, i2))
    out = rd.sum(ew.mul(t, input2.unsqueeze(-2)), -1)
    return ew.add(out, bias) if bias is not None else out


# ---- im2col-based ops: conv2d, unfold, fold, pools -------------------------------------


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
        raise TypeError(f"{fn}(): only float32 and float64 inputs are supported, got {x.dtype.name}")


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


# A batch chunk's im2col buffer is kept near this size, so that it is written and read back
# from cache instead of memory (a whole-batch col is kh*kw times the input: 58 MB for a
# [64, 32, 28, 28] input and a 3x3 kernel, and 4x slower end to end).
_CONV_CHUNK_BYTES = 4 << 20


class _ConvPlan:
    """One conv2d call's geometry and its C-level passes over batch chunks.

    A chunk of ``b`` samples is unfolded into ``buf`` laid out [C*kh*kw, b, L] (L = OH*OW):
    per group that is a [R, b*L] matrix (R = C/groups*kh*kw), so the weight gradient of a
    whole chunk is one GEMM with K = b*L, and the input gradient's columns come from one GEMM
    too. Forward is one batched GEMM per chunk over (sample, group)."""

    def __init__(self, x: Tensor, weight: Tensor, s: tuple, p: tuple, d: tuple, groups: int, oh: int, ow: int):
        self.n, self.c, self.h, self.w = x._shape
        self.o, cg, self.kh, self.kw = weight._shape
        self.s, self.p, self.d, self.g = s, p, d, groups
        self.og, self.r, self.l = self.o // groups, cg * self.kh * self.kw, oh * ow
        self.rows = self.c * self.kh * self.kw
        self.dt, self.code, self.isz = x.dtype, x.dtype.code, x.dtype.itemsize
        b = max(1, min(self.n, _CONV_CHUNK_BYTES // max(self.rows * self.l * self.isz, 1)))
        nt = lib.pf_get_num_threads()
        if b > nt > 1:
            b -= b % nt  # whole products per thread
        self.chunk = b

    def chunks(self):
        for n0 in range(0, self.n, self.chunk):
            yield n0, min(self.chunk, self.n - n0)

    def _geometry(self) -> tuple:
        return (self.kh, self.kw, self.s[0], self.s[1], self.p[0], self.p[1], self.d[0], self.d[1])

    def _cols(self, buf: Tensor, b: int):
        return _desc(buf._ptr, self.code, (b, self.rows, self.l), (self.l, b * self.l, 1))

    def im2col(self, x: Tensor, buf: Tensor, n0: int, b: int) -> None:
        xs = x._strides
        xd = _desc(x._ptr + n0 * xs[0] * self.isz, self.code, (b, self.c, self.h, self.w), xs)
        check(lib.pf_im2col(xd, self._cols(buf, b), *self._geometry(), 0.0))

    def col2im(self, buf: Tensor, gx: Tensor, n0: int, b: int) -> None:
        chw = self.c * self.h * self.w
        gd = _desc(gx._ptr + n0 * chw * self.isz, self.code, (b, self.c, self.h, self.w),
                   (chw, self.h * self.w, self.w, 1))  # fmt: skip
        check(lib.pf_col2im(self._cols(buf, b), gd, *self._geometry()))

    def forward(self, x: Tensor, wc: Tensor, bias: Tensor | None) -> Tensor:
        """[N, O, OH*OW]; ``wc`` is the weight, contiguous."""
        n, o, g, og, r, ln, code, isz = self.n, self.o, self.g, self.og, self.r, self.l, self.code, self.isz
        out = empty_tensor((n, o, ln), self.dt)
        buf = empty_tensor((self.rows * self.chunk * ln,), self.dt)
        for n0, b in self.chunks():
            self.im2col(x, buf, n0, b)
            a = _desc(wc._ptr, code, (b, g, og, r), (0, og * r, r, 1))
            cols = _desc(buf._ptr, code, (b, g, r, ln), (ln, r * b * ln, b * ln, 1))
            od = _desc(out._ptr + n0 * o * ln * isz, code, (b, g, og, ln), (o * ln, og * ln, ln, 1))
            check(lib.pf_matmul(a, cols, od))
        if bias is not None and n:
            bd = _desc(bias._ptr, code, (n, o, ln), (0, bias._strides[0], 0))
            check(lib.pf_binary(_ADD, out._d(), bd, out._d()))
        return out

    def backward(self, gy: Tensor, x: Tensor, wc: Tensor, need_x: bool, need_w: bool) -> tuple:
        """(grad_input, grad_weight as [G, Og, R]) for ``gy`` [N, O, OH, OW]."""
        n, o, g, og, r, ln, code, isz = self.n, self.o, self.g, self.og, self.r, self.l, self.code, self.isz
        gy = gy.contiguous()
        gx = zeros_of((n, self.c, self.h, self.w), self.dt) if need_x else None
        gw = empty_tensor((g, og, r), self.dt) if need_w else None
        tmp = empty_tensor((g, og, r), self.dt) if need_w and n > self.chunk else None
        buf = empty_tensor((self.rows * self.chunk * ln,), self.dt)
        gbuf = empty_tensor((o * self.chunk * ln,), self.dt)
        for n0, b in self.chunks():
            # the chunk's gradient as [O, b, L]: per group an [Og, b*L] matrix
            src = _desc(gy._ptr + n0 * o * ln * isz, code, (o, b, ln), (ln, o * ln, 1))
            check(lib.pf_copy(src, _desc(gbuf._ptr, code, (o, b, ln), (b * ln, ln, 1))))
            g3 = _desc(gbuf._ptr, code, (g, og, b * ln), (og * b * ln, b * ln, 1))
            if need_w:  # gw += g [Og, b*L] @ cols^T [b*L, R]
                self.im2col(x, buf, n0, b)
                cols_t = _desc(buf._ptr, code, (g, b * ln, r), (r * b * ln, 1, b * ln))
                check(lib.pf_matmul(g3, cols_t, (tmp if n0 else gw)._d()))
                if n0:
                    check(lib.pf_binary(_ADD, gw._d(), tmp._d(), gw._d()))
            if need_x:  # cols = w^T [R, Og] @ g [Og, b*L], folded back into the chunk of gx
                w_t = _desc(wc._ptr, code, (g, r, og), (og * r, 1, r))
                check(lib.pf_matmul(w_t, g3, _desc(buf._ptr, code, (g, r, b * ln), (r * b * ln, b * ln, 1))))
                self.col2im(buf, gx, n0, b)
        if gw is not None and n == 0:
            ew.fill_(gw, 0.0)
        return gx, gw


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
    """Same as torch.nn.functional.conv2d: im2col in the C core and batched GEMMs, over
    chunks of the batch small enough to stay in cache (see ``_ConvPlan``); backward is a GEMM
    and col2im for the input, a GEMM for the weight. Double backward works (create_graph
    differentiates a composition of unfold, matmul and fold)."""
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
    plan = _ConvPlan(x, weight, s, p, d, groups, oh, ow)
    with _grad_mode.no_grad():
        wc = weight if weight._contig else weight.contiguous()
        out = plan.forward(x, wc, bias).view(n, o, oh, ow)
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
                gx, gw = plan.backward(gy, x, wc, x.requires_grad, weight.requires_grad)
                gw = gw.view(weight._shape) if gw is not None else None
            gb = rd.sum(gy, (0, 2, 3)) if bias is not None and bias.requires_grad else None
            return gx, gw, gb

        record("ConvolutionBackward0", backward, (x, weight, bias), out, (x, weight))
    return out if batched else out.squeeze(0)


def _pool_args(fn: str, kernel_size, stride, padding, dilation, ceil_mode) -> tuple:
    if ceil_mode:
        raise NotImplementedError(f"{fn}(): ceil_mode=True is not supported; pad the input instead")
    k = _pair(kernel_size, fn, "kernel_size", 1)
    s = (
        k
        if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
        else _pair(stride, fn, "stride", 1)
    )
    p, d = _pair(padding, fn, "padding", 0), _pair(dilation, fn, "dilation", 1)
    for i in (0, 1):
        if p[i] * 2 > d[i] * (k[i] - 1) + 1:
            raise ValueError(
                f"{fn}(): pad should be at most half of effective kernel size, but got pad={p[i]}, "
                f"kernel_size={k[i]} and dilation={d[i]}"
            )
    return k, s, p, d


def max_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):  # fmt: skip
    """Same as torch.nn.functional.max_pool2d: im2col with -inf padding, then a max over the
    kernel positions; backward scatters into those positions and col2im adds them up.
    ``ceil_mode=True`` is not supported (NotImplementedError)."""
    x, batched = _batched("max_pool2d", input)
    _check_im2col_dtype("max_pool2d", x)
    k, s, p, d = _pool_args("max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    n, c, h, w = x._shape
    oh, ow = _out_size("max_pool2d", x._shape, k, s, p, d)
    kk, length = k[0] * k[1], oh * ow
    with _grad_mode.no_grad():
        col = _im2col(x, k, s, p, d, oh, ow, -math.inf)
        values, arg = rd.max(col.view(n, c, kk, length), 2)  # [N, C, L]; arg indexes the kernel positions
    out = values.view(n, c, oh, ow)
    if needs_grad(x):

        def backward(gy):
            gcol = zeros_of((n, c, kk, length), gy.dtype)
            ix.scatter_add_(gcol, 2, arg.view(n, c, 1, length), gy.reshape(n, c, 1, length))
            return (fold(gcol.view(n, c * kk, length), (h, w), k, d, p, s),)

        record("MaxPool2DWithIndicesBackward0", backward, (x,), out)
    if not batched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    # flat index into each input plane: row = oh*sh - ph + (a // kw)*dh, col = ow*sw - pw + (a % kw)*dw
    from pyframe.factory import arange

    with _grad_mode.no_grad():
        a = arg.view(n, c, oh, ow)
        rows = ew.add(ew.mul(ew.floor_divide(a, k[1]), d[0]), ew.sub(ew.mul(arange(oh).view(oh, 1), s[0]), p[0]))
        cols = ew.add(ew.mul(ew.remainder(a, k[1]), d[1]), ew.sub(ew.mul(arange(ow), s[1]), p[1]))
        indices = ew.add(ew.mul(rows, w), cols)
    return out, (indices if batched else indices.squeeze(0))


def avg_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):  # fmt: skip
    """Same as torch.nn.functional.avg_pool2d: im2col, a sum over the kernel positions and one
    division; backward spreads the gradient back with col2im. ``ceil_mode=True`` is not
    supported (NotImplementedError)."""
    x, batched = _batched("avg_pool2d", input)
    _check_im2col_dtype("avg_pool2d", x)
    k, s, p, d = _pool_args("avg_pool2d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override <= 0):
        raise ValueError(f"avg_pool2d(): divisor_override must be a positive int, got {divisor_override!r}")
    n, c, h, w = x._shape
    oh, ow = _out_size("avg_pool2d", x._shape, k, s, p, d)
    kk, length = k[0] * k[1], oh * ow
    with _grad_mode.no_grad():
        if divisor_override is not None:
            div = float(divisor_override)
        elif count_include_pad or p == (0, 0):
            div = float(kk)
        else:  # the number of real (unpadded) pixels under each window
            ones = ew.fill_(empty_tensor((1, 1, h, w), x.dtype), 1.0)
            div = rd.sum(_im2col(ones, k, s, p, d, oh, ow), 1).view(length)
        col = _im2col(x, k, s, p, d, oh, ow)
        out = ew.div(rd.sum(col.view(n, c, kk, length), 2), div).view(n, c, oh, ow)
    if needs_grad(x):

        def backward(gy):
            g = ew.div(gy.reshape(n, c, 1, length), div)
            return (fold(g.expand(n, c, kk, length).contiguous().view(n, c * kk, length), (h, w), k, d, p, s),)

        record("AvgPool2DBackward0", backward, (x,), out)
    return out if batched else out.squeeze(0)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool2d. Sizes that divide the input evenly
    use avg_pool2d; others average each window separately (slower)."""
    x, batched = _batched("adaptive_avg_pool2d", input)
    h, w = x._shape[2:]
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    oh, ow = (h if output_size[0] is None else output_size[0]), (w if output_size[1] is None else output_size[1])
    if oh < 1 or ow < 1:
        raise ValueError(f"adaptive_avg_pool2d(): output_size must be positive, got {tuple(output_size)}")
    if h % oh == 0 and w % ow == 0:
        out = avg_pool2d(x, (h // oh, w // ow))
    else:
        from pyframe.ops.shape import stack

        rows = []
        for i in range(oh):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            cells = [rd.mean(x[:, :, h0:h1, (j * w) // ow : -(-((j + 1) * w) // ow)], (2, 3)) for j in range(ow)]
            rows.append(stack(cells, -1))
        out = stack(rows, -2)
    return out if batched else out.squeeze(0)


# ---- normalization -----------------------------------------------------------------------


def _normalized(x: Tensor, red: tuple, eps: float):
    """(x - mean) / sqrt(var + eps) over dims ``red``, with the mean, biased var and 1/std."""
    mean = rd.mean(x, red, keepdim=True)
    var = rd.var(x, red, keepdim=True, correction=0)
    invstd = ew.rsqrt(ew.add(var, eps))
    return ew.mul(ew.sub(x, mean), invstd), mean, var, invstd


def _norm_composite(red: tuple, wshape: tuple, eps: float):
    def composite(x, w, b):
        y = _normalized(x, red, eps)[0]
        if w is not None:
            y = ew.mul(y, w.reshape(wshape))
        return ew.add(y, b.reshape(wshape)) if b is not None else y

    return composite


def _layer_normalize(x: Tensor, red: tuple, lead: tuple, shape: tuple, w, b, eps: float) -> Tensor:
    """Normalize over the last dims ``red``, then scale and shift by ``w``, ``b`` (of ``shape``),
    as one node; backward is the closed form gx = invstd * (gh - mean(gh) - xhat * mean(gh * xhat))
    with gh = g * w, and gw, gb are sums over the ``lead`` dims."""
    with _grad_mode.no_grad():
        xhat, _, _, invstd = _normalized(x, red, eps)
        y = ew.mul(xhat, w) if w is not None else xhat
        if b is not None:
            y = ew.add(y, b)
        elif w is None:
            y = xhat.clone()  # xhat is saved: the output may be changed in place
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(_norm_composite(red, shape, eps), (x, w, b), g)
            gx = gw = gb = None
            if x.requires_grad:
                gh = ew.mul(g, w) if w is not None else g
                proj = rd.mean(ew.mul(gh, xhat), red, keepdim=True)
                gx = ew.mul(ew.sub(ew.sub(gh, rd.mean(gh, red, keepdim=True)), ew.mul(xhat, proj)), invstd)
            if w is not None and w.requires_grad:
                gw = rd.sum(ew.mul(g, xhat), lead)
            if b is not None and b.requires_grad:
                gb = rd.sum(g, lead)
            return gx, gw, gb

        record("NativeLayerNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y


def _batch_normalize(x: Tensor, red: tuple, bshape: tuple, w, b, eps: float):
    """Batch-statistics normalization of (N, C, ...) per channel as one node. The per-channel
    affine map is folded into y = x * scale + shift (two passes over x), and backward needs
    six: with xc = x - mean, a = w * invstd and m values per channel,
    gx = a * (g - sum(g) / m) - xc * a * invstd^2 * sum(g * xc) / m."""
    c = x._shape[1]
    m = x._numel // c
    with _grad_mode.no_grad():
        mean = rd.mean(x, red, keepdim=True)
        var = rd.var(x, red, keepdim=True, correction=0)
        invstd = ew.rsqrt(ew.add(var, eps))
        scale = ew.mul(invstd, w.view(bshape)) if w is not None else invstd
        shift = ew.mul(mean, scale)
        shift = ew.sub(b.view(bshape), shift) if b is not None else ew.neg(shift)
        y = ew.add(ew.mul(x, scale), shift)
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(_norm_composite(red, bshape, eps), (x, w, b), g)
            sum_g = rd.sum(g, red, keepdim=True)
            xc = ew.sub(x, mean)
            sum_gxhat = ew.mul(rd.sum(ew.mul(g, xc), red, keepdim=True), invstd)
            gx = None
            if x.requires_grad:
                k = ew.mul(ew.mul(scale, invstd), ew.div(sum_gxhat, m))
                gx = ew.sub(ew.mul(ew.sub(g, ew.div(sum_g, m)), scale), ew.mul(xc, k))
            gw = sum_gxhat.view(c) if w is not None and w.requires_grad else None
            gb = sum_g.view(c) if b is not None and b.requires_grad else None
            return gx, gw, gb

        record("NativeBatchNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y, mean, var


def batch_norm(
    input: Tensor, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):  # fmt: skip
    """Same as torch.nn.functional.batch_norm for inputs (N, C, ...): batch statistics when
    training (biased variance to normalize, unbiased for the running update, done in place
    without recording), the running statistics otherwise. ``momentum`` must be a number."""
    _float_arg(input, "batch_norm")
    if input.ndim < 2:
        raise ShapeError(
            f"batch_norm(): expected an input of at least 2 dims (N, C, ...), got shape {list(input._shape)}"
        )
    c = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None:
            _tensor_arg(t, "batch_norm", name)
            if t._shape != (c,):
                raise ShapeError(
                    f"batch_norm(): {name} should have shape [{c}] for an input of shape {list(input._shape)} "
                    f"({c} channels), got {list(t._shape)}"
                )
    _same_dtype("batch_norm", input, weight=weight, bias=bias)
    red = (0,) + tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm(): running_mean and running_var must be given when training=False")
        scale = ew.rsqrt(ew.add(running_var, eps))
        if weight is not None:
            scale = ew.mul(scale, weight)
        shift = ew.mul(running_mean, scale)
        shift = ew.sub(bias, shift) if bias is not None else ew.neg(shift)
        return ew.add(ew.mul(input, scale.view(bshape)), shift.view(bshape))
    count = input._numel // c if c else 0
    if count <= 1:
        raise ValueError(
            f"batch_norm(): expected more than 1 value per channel when training, got input size {list(input._shape)}"
        )
    if not isinstance(momentum, (int, float)):
        raise TypeError(f"batch_norm(): momentum must be a number, got {momentum!r}")
    y, mean, var = _batch_normalize(input, red, bshape, weight, bias, eps)
    with _grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1.0 - momentum).add_(ew.mul(mean.view(c), momentum))
        if running_var is not None:
            running_var.mul_(1.0 - momentum).add_(ew.mul(var.view(c), momentum * count / (count - 1)))
    return y


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Same as torch.nn.functional.layer_norm."""
    _float_arg(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input._shape[input.ndim - k :] != shape or input.ndim < k:
        raise ShapeError(
            f"layer_norm(): given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size {list(input._shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and _tensor_arg(t, "layer_norm", name)._shape != shape:
            raise ShapeError(f"layer_norm(): {name} should have shape {list(shape)}, got {list(t._shape)}")
    _same_dtype("layer_norm", input, weight=weight, bias=bias)
    red = tuple(range(input.ndim - k, input.ndim))
    lead = tuple(range(input.ndim - k))
    return _layer_normalize(input, red, lead, shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Same as torch.nn.functional.group_norm (a composition of the ops)."""
    _float_arg(input, "group_norm")
    if input.ndim < 2 or input._shape[1] % num_groups:
        raise ShapeError(
            f"group_norm(): expected an input (N, C, ...) with C divisible by num_groups={num_groups}, got shape "
            f"{list(input._shape)}"
        )
    n, c = input._shape[:2]
    xg = input.reshape(n, num_groups, -1)
    y = _normalized(xg, (2,), eps)[0].reshape(input._shape)
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = ew.mul(y, weight.view(bshape))
    return ew.add(y, bias.view(bshape)) if bias is not None else y


# ---- embedding, dropout, one_hot, pad --------------------------------------------------------


def _index_arg(t, fn: str) -> Tensor:
    _tensor_arg(t, fn, "indices")
    if t.dtype is _dtype.int32:
        return t.to(_dtype.int64)
    if t.dtype is not _dtype.int64:
        raise TypeError(f"{fn}(): indices must be an int64 (or int32) tensor, got {t.dtype.name}")
    return t


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.embedding: rows of ``weight`` gathered in C; the row at
    ``padding_idx`` gets no gradient. ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are
    not supported (NotImplementedError)."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): max_norm, scale_grad_by_freq and sparse are not supported")
    idx = _index_arg(input, "embedding")
    _tensor_arg(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise ShapeError(f"embedding(): weight must be 2-d [num_embeddings, embedding_dim], got {list(weight._shape)}")
    v, dim = weight._shape
    if padding_idx is not None:
        if not -v <= padding_idx < v:
            raise ValueError(f"embedding(): padding_idx {padding_idx} must be within num_embeddings {v}")
        padding_idx %= v
    flat = idx.reshape(-1)
    if flat._numel:
        lo, hi = int(rd.amin(flat)), int(rd.amax(flat))
        if lo < 0 or hi >= v:
            raise IndexError(
                f"embedding(): index {lo if lo < 0 else hi} is out of range for an embedding table of {v} rows "
                f"(weight shape {list(weight._shape)})"
            )
    with _grad_mode.no_grad():
        out = ix.index_select(weight, 0, flat)
    if needs_grad(weight):

        def backward(g):
            gw = ix.index_add_(zeros_of(weight._shape, g.dtype), 0, flat, g.reshape(-1, dim))
            if padding_idx is not None:
                gw[padding_idx] = 0
            return (gw,)

        record("EmbeddingBackward0", backward, (weight,), out)
    return out.view(idx._shape + (dim,))


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout: a Bernoulli(1 - p) mask from pyframe's seeded
    generator (``pyframe.manual_seed``), scaled by 1 / (1 - p). The random stream differs
    from torch's."""
    _float_arg(input, "dropout")
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout(): probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    from pyframe.factory import _draw

    with _grad_mode.no_grad():
        mask = empty_tensor(input._shape, input.dtype)
        if p == 1.0:
            ew.fill_(mask, 0.0)
        else:
            _draw(lib.PF_RAND_BERNOULLI, mask, 1.0 - p, 0.0)
            ew.inplace_ops["mul_"](mask, 1.0 / (1.0 - p))
    if inplace:
        return ew.inplace_ops["mul_"](input, mask)
    return ew.mul(input, mask)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Same as torch.nn.functional.one_hot: int64 [..., num_classes]."""
    _tensor_arg(tensor, "one_hot", "tensor")
    if tensor.dtype is not _dtype.int64:
        raise TypeError(f"one_hot(): is only applicable to index tensors of dtype int64, got {tensor.dtype.name}")
    if tensor._numel == 0:
        if num_classes == -1:
            raise RuntimeError("one_hot(): can not infer the total number of classes from an empty tensor")
    else:
        lo, hi = int(rd.amin(tensor)), int(rd.amax(tensor))
        if lo < 0:
            raise RuntimeError(f"one_hot(): class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"one_hot(): class values must be smaller than num_classes={num_classes}, got {hi}")
    from pyframe.factory import arange

    return ew.eq(tensor.unsqueeze(-1), arange(num_classes)).to(_dtype.int64)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:
    """Same as torch.nn.functional.pad: ``pad`` lists (left, right) pairs from the last dim
    backwards. "constant" (negative pads crop), "reflect", "replicate" and "circular" work on
    any dims (torch limits the last three to 2-5 d inputs)."""
    _tensor_arg(input, "pad")
    pad = tuple(pad)
    if len(pad) % 2:
        raise ValueError(f"pad(): padding length must be divisible by 2, got {len(pad)} ({pad})")
    if len(pad) > 2 * input.ndim:
        raise ValueError(
            f"pad(): padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad(): mode {mode!r} is not supported; use one of {_PAD_MODES}")
    pairs = {input.ndim - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)}
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise ValueError(f"pad(): padding mode {mode!r} doesn't take in value argument")
        return _pad_by_index(input, pairs, mode)
    shape = list(input._shape)
    src, dst = [slice(None)] * input.ndim, [slice(None)] * input.ndim
    for dim, (lo, hi) in pairs.items():
        size = input._shape[dim]
        new = size + lo + hi
        if new < 0:
            raise ValueError(
                f"pad(): the input size {size}, plus negative padding {lo} and {hi} resulted in a negative output "
                f"size, which is invalid. Check dimension {dim} of your input."
            )
        shape[dim] = new
        kept = max(new - max(lo, 0) - max(hi, 0), 0)
        src[dim] = slice(max(-lo, 0), max(-lo, 0) + kept)
        dst[dim] = slice(max(lo, 0), max(lo, 0) + kept)
    src, dst = tuple(src), tuple(dst)
    with _grad_mode.no_grad():
        out = ew.fill_(empty_tensor(tuple(shape), input.dtype), 0 if value is None else value)
        ew.copy_(out[dst], input[src])
    if needs_grad(input):
        cropped = any(lo < 0 or hi < 0 for lo, hi in pairs.values())

        def backward(g):
            gd = g[dst]
            return (embed(gd, input._shape, src) if cropped else gd.contiguous(),)

        record("ConstantPadNdBackward0", backward, (input,), out)
    return out


def _pad_by_index(x: Tensor, pairs: dict, mode: str) -> Tensor:
    """reflect / replicate / circular: one index_select per padded dim (differentiable)."""
    from pyframe.factory import tensor

    for dim, (lo, hi) in pairs.items():
        if lo == 0 and hi == 0:
            continue
        size = x._shape[dim]
        if lo < 0 or hi < 0:
            raise ValueError(f"pad(): negative padding {(lo, hi)} is only supported in 'constant' mode")
        limit = size - 1 if mode == "reflect" else size
        if max(lo, hi) > limit or size == 0:
            raise ValueError(
                f"pad(): padding {(lo, hi)} for dim {dim} must be at most {limit} (the input size {size}"
                f"{' - 1' if mode == 'reflect' else ''}) in {mode!r} mode (input shape {list(x._shape)})"
            )
        positions = range(-lo, size + hi)
        if mode == "reflect":
            idx = [-i if i < 0 else 2 * (size - 1) - i if i >= size else i for i in positions]
        elif mode == "replicate":
            idx = [min(max(i, 0), size - 1) for i in positions]
        else:
            idx = [i % size for i in positions]
        x = ix.index_select(x, dim, tensor(idx, dtype=_dtype.int64))
    return x


# ---- activations -------------------------------------------------------------------------


def _maybe_inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return ew.copy_(input, out) if inplace else out


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu."""
    return ew.copy_(input, ew.relu(input)) if inplace else ew.relu(input)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu6."""
    return _maybe_inplace(input, ew.clamp(input, 0.0, 6.0), inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.hardtanh."""
    if min_val > max_val:
        raise ValueError(f"hardtanh(): min_val {min_val} cannot be greater than max_val {max_val}")
    return _maybe_inplace(input, ew.clamp(input, min_val, max_val), inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.leaky_relu."""
    _float_arg(input, "leaky_relu")
    return _maybe_inplace(input, ew.where(ew.gt(input, 0.0), input, ew.mul(input, negative_slope)), inplace)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.elu."""
    _float_arg(input, "elu")
    neg = ew.mul(ew.expm1(ew.clamp(input, max=0.0)), alpha)
    return _maybe_inplace(input, ew.where(ew.gt(input, 0.0), input, neg), inplace)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Same as torch.nn.functional.gelu: exact (erf) or ``approximate="tanh"``."""
    _float_arg(input, "gelu")
    if approximate == "none":
        inner = ew.add(ew.erf(ew.mul(input, _SQRT1_2)), 1.0)
    elif approximate == "tanh":
        cube = ew.mul(ew.mul(input, input), input)
        inner = ew.add(ew.tanh(ew.mul(ew.add(input, ew.mul(cube, 0.044715)), _SQRT_2_PI)), 1.0)
    else:
        raise ValueError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    return ew.mul(ew.mul(input, 0.5), inner)


def tanh(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.tanh."""
    return ew.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.sigmoid."""
    return ew.sigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.silu: x * sigmoid(x)."""
    return _maybe_inplace(input, ew.mul(input, ew.sigmoid(input)), inplace)


def _softplus_neg_abs(x: Tensor) -> Tensor:
    """log(1 + exp(-|x|)), finite for every x."""
    return ew.log1p(ew.exp(ew.neg(ew.abs(x))))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Same as torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, linear above
    ``threshold``."""
    _float_arg(input, "softplus")
    bx = ew.mul(input, beta) if beta != 1 else input
    soft = ew.log1p(ew.exp(ew.clamp(bx, max=threshold)))  # clamped: the unused branch stays finite
    if beta != 1:
        soft = ew.div(soft, beta)
    return ew.where(ew.gt(bx, threshold), input, soft)


def logsigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.logsigmoid: -softplus(-x), computed stably."""
    _float_arg(input, "logsigmoid")
    return ew.neg(ew.add(_softplus_neg_abs(input), ew.relu(ew.neg(input))))


def _softmax_dim(ndim: int, name: str, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.softmax (one C kernel)."""
    return rd.softmax(input, _softmax_dim(input.ndim, "softmax", _stacklevel) if dim is None else dim, dtype)


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.softmin."""
    return rd.softmax(ew.neg(input), _softmax_dim(input.ndim, "softmin", _stacklevel) if dim is None else dim, dtype)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.log_softmax (one C kernel)."""
    return rd.log_softmax(input, _softmax_dim(input.ndim, "log_softmax", _stacklevel) if dim is None else dim, dtype)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """Same as torch.nn.functional.normalize: x / max(||x||_p, eps) along ``dim``."""
    return ew.div(input, ew.clamp(rd.norm(input, p, dim, keepdim=True), min=eps))


# ---- losses ------------------------------------------------------------------------------


def _check_same_size(fn: str, input: Tensor, target: Tensor, strict: bool) -> None:
    if target._shape != input._shape:
        msg = (
            f"{fn}(): using a target size ({list(target._shape)}) that is different to the input size "
            f"({list(input._shape)})"
        )
        if strict:
            raise ValueError(msg + "; please ensure they have the same size")
        warnings.warn(msg + ". This will likely lead to incorrect results due to broadcasting.", stacklevel=3)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Same as torch.nn.functional.mse_loss."""
    _check_reduction(reduction, "mse_loss")
    _check_same_size("mse_loss", _tensor_arg(input, "mse_loss"), _tensor_arg(target, "mse_loss", "target"), False)
    return _reduce_loss(ew.square(ew.sub(input, target)), reduction)


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Same as torch.nn.functional.l1_loss."""
    _check_reduction(reduction, "l1_loss")
    _check_same_size("l1_loss", _tensor_arg(input, "l1_loss"), _tensor_arg(target, "l1_loss", "target"), False)
    return _reduce_loss(ew.abs(ew.sub(input, target)), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.smooth_l1_loss."""
    _check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss(): beta must be non-negative, got {beta}")
    _check_same_size("smooth_l1_loss", input, target, False)
    d = ew.abs(ew.sub(input, target))
    if beta == 0:
        return _reduce_loss(d, reduction)
    loss = ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.square(d), 0.5), beta), ew.sub(d, 0.5 * beta))
    return _reduce_loss(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.huber_loss."""
    _check_reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss(): delta must be positive, got {delta}")
    _check_same_size("huber_loss", input, target, False)
    d = ew.abs(ew.sub(input, target))
    loss = ew.where(ew.lt(d, delta), ew.mul(ew.square(d), 0.5), ew.mul(ew.sub(d, 0.5 * delta), delta))
    return _reduce_loss(loss, reduction)


def _classes_last(fn: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """input (C), (N, C) or (N, C, d1, ...) as [M, C] and an int64 target as [M], with the
    target's shape (the shape of an unreduced loss)."""
    if input.ndim == 0:
        raise ShapeError(f"{fn}(): input must have a class dim, got a 0-d tensor")
    expected = () if input.ndim == 1 else (input._shape[0],) + input._shape[2:]
    if target._shape != expected:
        raise ShapeError(
            f"{fn}(): expected target of shape {list(expected)} for input of shape {list(input._shape)} "
            f"(classes in dim {0 if input.ndim == 1 else 1}), got target of shape {list(target._shape)}"
        )
    c = input._shape[0 if input.ndim == 1 else 1]
    if input.ndim == 1:
        return input.view(1, c), target.reshape(1), expected
    if input.ndim == 2:
        return input, target, expected
    return input.permute(0, *range(2, input.ndim), 1).reshape(-1, c), target.reshape(-1), expected


def nll_loss(
    input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.nll_loss, for input (C), (N, C) or (N, C, d1, ...).
    ``size_average`` and ``reduce`` (deprecated in torch) must be None."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("nll_loss(): size_average and reduce are deprecated; use reduction=")
    _check_reduction(reduction, "nll_loss")
    _float_arg(input, "nll_loss")
    target = _index_arg(target, "nll_loss")
    inp, t, shape = _classes_last("nll_loss", input, target)
    c = inp._shape[1]
    if weight is not None and (_tensor_arg(weight, "nll_loss", "weight")._shape != (c,)):
        raise ShapeError(f"nll_loss(): weight should have shape [{c}] ({c} classes), got {list(weight._shape)}")
    valid = ew.ne(t, ignore_index)
    tt = ew.where(valid, t, 0)
    if tt._numel:
        lo, hi = int(rd.amin(tt)), int(rd.amax(tt))
        if lo < 0 or hi >= c:
            raise IndexError(f"nll_loss(): target {lo if lo < 0 else hi} is out of bounds for {c} classes")
    picked = ix.gather(inp, 1, tt.view(-1, 1)).view(-1)
    wt = valid.to(inp.dtype)
    if weight is not None:
        wt = ew.mul(ix.index_select(weight, 0, tt), wt)
    loss = ew.neg(ew.mul(picked, wt))
    if reduction == "none":
        return loss.reshape(shape)
    if reduction == "sum":
        return rd.sum(loss)
    return ew.div(rd.sum(loss), rd.sum(wt))


def cross_entropy(
    input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
    reduction: str = "mean", label_smoothing: float = 0.0,
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.cross_entropy: log_softmax over the class dim, then the
    negative log likelihood; class-index targets (N,) / (N, d1, ...) or class probabilities
    shaped like the input; ``label_smoothing`` as torch."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("cross_entropy(): size_average and reduce are deprecated; use reduction=")
    _check_reduction(reduction, "cross_entropy")
    _float_arg(input, "cross_entropy")
    _tensor_arg(target, "cross_entropy", "target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    cdim = 0 if input.ndim == 1 else 1
    c = input._shape[cdim] if input.ndim else 0
    if weight is not None and _tensor_arg(weight, "cross_entropy", "weight")._shape != (c,):
        raise ShapeError(f"cross_entropy(): weight should have shape [{c}] ({c} classes), got {list(weight._shape)}")
    lsm = rd.log_softmax(input, cdim)
    wshape = tuple(c if i == cdim else 1 for i in range(input.ndim))
    if target.dtype.is_floating_point:  # class probabilities
        if target._shape != input._shape:
            raise ShapeError(
                f"cross_entropy(): probability targets must have the input's shape {list(input._shape)}, "
                f"got {list(target._shape)}"
            )
        if label_smoothing > 0:
            target = ew.add(ew.mul(target, 1.0 - label_smoothing), label_smoothing / c)
        prod = ew.mul(lsm, target)
        if weight is not None:
            prod = ew.mul(prod, weight.view(wshape))
        loss = ew.neg(rd.sum(prod, cdim))
        return _reduce_loss(loss, reduction)
    nll = nll_loss(lsm, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    target = _index_arg(target, "cross_entropy")
    smooth = ew.neg(rd.sum(ew.mul(lsm, weight.view(wshape)) if weight is not None else lsm, cdim))
    ignored = ew.eq(target, ignore_index)
    smooth = ew.where(ignored, 0.0, smooth)
    if reduction == "sum":
        smooth = rd.sum(smooth)
    elif reduction == "mean":
        if weight is not None:
            kept = ix.index_select(weight, 0, ew.where(ignored, 0, target).reshape(-1))
            denom = rd.sum(ew.where(ignored.reshape(-1), 0.0, kept))
        else:
            denom = rd.sum(ew.logical_not(ignored)).to(input.dtype)
        smooth = ew.div(rd.sum(smooth), denom)
    return ew.add(ew.mul(nll, 1.0 - label_smoothing), ew.mul(smooth, label_smoothing / c))


def _weighted(loss: Tensor, weight, reduction: str) -> Tensor:
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce_loss(loss, reduction)


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight=None, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.binary_cross_entropy: logs clamped at -100 and a gradient
    of (x - t) / max(x (1 - x), 1e-12), as torch."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("binary_cross_entropy(): size_average and reduce are deprecated; use reduction=")
    _check_reduction(reduction, "binary_cross_entropy")
    _float_arg(input, "binary_cross_entropy")
    _float_arg(target, "binary_cross_entropy", "target")
    _check_same_size("binary_cross_entropy", input, target, True)
    if input._numel:
        lo, hi = float(rd.amin(input)), float(rd.amax(input))
        if not (lo >= 0.0 and hi <= 1.0):
            raise ValueError(
                f"binary_cross_entropy(): all elements of input should be between 0 and 1, got values in [{lo}, {hi}]"
            )
    x, t = input, target

    def logs(x):
        return ew.clamp(ew.log(x), min=-100.0), ew.clamp(ew.log1p(ew.neg(x)), min=-100.0)

    with _grad_mode.no_grad():
        logx, log1mx = logs(x)
        loss = ew.neg(ew.add(ew.mul(t, logx), ew.mul(ew.sub(1.0, t), log1mx)))
    if needs_grad(x, t):

        def backward(g):
            gx = gt = None
            if x.requires_grad:
                gx = ew.div(ew.mul(g, ew.sub(x, t)), ew.clamp(ew.mul(ew.sub(1.0, x), x), min=1e-12))
            if t.requires_grad:
                lx, l1x = logs(x)
                gt = ew.mul(g, ew.sub(l1x, lx))
            return gx, gt

        record("BinaryCrossEntropyBackward0", backward, (x, t), loss, (x, t))
    return _weighted(loss, weight, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight=None, size_average=None, reduce=None, reduction: str = "mean",
    pos_weight=None,
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.binary_cross_entropy_with_logits, computed stably:
    (1 - t) x + (1 + (pw - 1) t) softplus(-x), with softplus(-x) = log1p(exp(-|x|)) + max(-x, 0);
    the gradient sigmoid(x) (1 + (pw - 1) t) - pw t is exact at x = 0 too."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("binary_cross_entropy_with_logits(): size_average and reduce are deprecated")
    fn = "binary_cross_entropy_with_logits"
    _check_reduction(reduction, fn)
    _float_arg(input, fn)
    _float_arg(target, fn, "target")
    _check_same_size(fn, input, target, True)
    x, t, pw = input, target, pos_weight

    def sp_neg(x):  # softplus(-x)
        return ew.add(_softplus_neg_abs(x), ew.relu(ew.neg(x)))

    with _grad_mode.no_grad():
        spn = sp_neg(x)
        lin = ew.mul(ew.sub(1.0, t), x)
        loss = ew.add(lin, ew.mul(ew.add(ew.mul(ew.sub(pw, 1.0), t), 1.0), spn) if pw is not None else spn)
    if needs_grad(x, t, pw):

        def backward(g):
            gx = gt = gp = None
            if x.requires_grad:
                s = ew.sigmoid(x)
                if pw is None:
                    gx = ew.mul(g, ew.sub(s, t))
                else:
                    pt = ew.mul(pw, t)
                    gx = ew.mul(g, ew.sub(ew.mul(s, ew.add(ew.sub(pt, t), 1.0)), pt))
            if t.requires_grad:
                if pw is None:
                    gt = ew.neg(ew.mul(g, x))
                else:
                    sn = sp_neg(x)
                    gt = ew.mul(g, ew.sub(ew.mul(pw, sn), ew.add(sn, x)))  # pw softplus(-x) - softplus(x)
            if pw is not None and pw.requires_grad:
                gp = ew._grad_to(ew.mul(ew.mul(g, t), sp_neg(x)), pw)
            return gx, gt, gp

        record("BinaryCrossEntropyWithLogitsBackward0", backward, (x, t, pw), loss, (x, t))
    return _weighted(loss, weight, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.kl_div (input holds log-probabilities); "batchmean" too."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("kl_div(): size_average and reduce are deprecated; use reduction=")
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"kl_div(): {reduction!r} is not a valid value for reduction")
    if log_target:
        loss = ew.mul(ew.exp(target), ew.sub(target, input))
    else:  # 0 log 0 = 0
        pos = ew.gt(target, 0.0)
        safe = ew.where(pos, target, 1.0)
        loss = ew.where(pos, ew.mul(target, ew.sub(ew.log(safe), input)), 0.0)
    if reduction == "batchmean":
        return ew.div(rd.sum(loss), input._shape[0] if input.ndim else 1)
    return _reduce_loss(loss, reduction)
