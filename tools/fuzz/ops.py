"""The calls the fuzz walk makes: one generator per API family.

A generator takes a seeded NumPy generator and returns a :class:`Call`: a description (what
the report and ``--replay`` print), the pyframe call, and the NumPy reference where one is
defined. A reference that raises means "undefined here": pyframe may then refuse or answer,
except for the calls marked ``strict``, where NumPy's refusal means pyframe must refuse too.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable

import numpy as np

import pyframe as pf
import pyframe.nn.functional as F
from pyframe.ops._common import result_type
from tests import ops_db
from tests._helpers import ALL
from tools.fuzz.inputs import FLOATS, Case, bad, broadcast_partner, case, dim, float_case, scalar, shape


class Call:
    __slots__ = ("desc", "run", "ref", "inputs", "strict", "written")

    def __init__(self, desc: str, run: Callable, ref: Callable | None = None, inputs=(), strict=False, written=None):
        self.desc = desc
        self.run = run  # () -> result (a Tensor, a tuple of them, or anything for crash-only calls)
        self.ref = ref  # () -> np.ndarray / tuple of them, or None: crash-only
        self.inputs = inputs  # Cases that an out-of-place call must leave unchanged
        self.strict = strict
        self.written = written  # the Case an in-place call writes: its tensor is the result


GENERATORS: list[Callable[[np.random.Generator], Call]] = []


def generator(fn):
    GENERATORS.append(fn)
    return fn


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


# the elementwise ops and reductions with their NumPy references: the tests' table (tests/ops_db.py)
UNARY = {op.name: op for op in ops_db.UNARY}
BINARY = {op.name: op for op in ops_db.BINARY}
REDUCE = {red.name: red for red in ops_db.REDUCTIONS}


def _f64(a: np.ndarray) -> np.ndarray:
    """Float inputs are referenced in float64 (the result is compared after rounding to pyframe's dtype)."""
    return a.astype(np.float64) if a.dtype.kind == "f" else a


@generator
def unary(rng) -> Call:
    op = UNARY[_pick(rng, list(UNARY))]
    x = case(rng)
    # float functions of ints and bools: pyframe (as torch) converts them to float32 first (sin(2**31 - 1) is
    # sin(2**31)), NumPy to float64 (or float16 for bools)
    a = x.a.astype(np.float32) if op.result == "float" and x.a.dtype.kind in "biu" else x.a
    a = a.astype(np.float64) if op.result == "float" else _f64(a)
    return Call(f"{op.name}({x})", lambda: op.fn(x.t), lambda: op.ref(a), [x])


def _operand(rng, x: Case):
    r = rng.random()
    if r < 0.3:
        return scalar(rng, x.t.dtype if rng.random() < 0.7 else _pick(rng, FLOATS)), None
    if r < 0.4:
        return x, None  # the same tensor on both sides
    y = case(rng, broadcast_partner(rng, tuple(x.t.shape)) if rng.random() < 0.8 else shape(rng))
    return y, y


def _ref_operand(a, dt, floating: bool):
    """An operand for the reference: converted to pyframe's result dtype ``dt`` first where torch does that (two
    dimensioned tensors), then float64 when floating (or for a floating op)."""
    if not isinstance(a, np.ndarray):
        return a
    if dt is not None:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = a.astype(dt.np)
    return a.astype(np.float64) if floating else _f64(a)


def _opmath_scalar(y, dtype: np.dtype):
    """A Python float beside a float16/bfloat16/float32 tensor as the kernel sees it: rounded to float32 (torch's
    opmath type; 1e300 is inf there, so ``x - 1e300`` of an inf is NaN, not inf as in float64)."""
    if type(y) is float and dtype.kind == "f" and dtype.itemsize <= 4:
        with np.errstate(over="ignore"):
            return float(np.float32(y))
    return y


@generator
def binary(rng) -> Call:
    op = BINARY[_pick(rng, list(BINARY))]
    x = case(rng)
    y, yc = _operand(rng, x)
    other = y.t if isinstance(y, Case) else y
    dt = None
    if isinstance(y, Case):
        try:  # a 0-d tensor beside a dimensioned one takes its dtype when the category allows (torch's rule)
            dt = pf.promote_types(x.t.dtype, y.t.dtype) if x.t.ndim and y.t.ndim else result_type(x.t, y.t)
        except Exception:  # noqa: BLE001 - no common dtype: the call itself must refuse
            dt = None
    floating = op.result == "float"  # NumPy computes these in float16 for bools, pyframe in float32
    a = _ref_operand(x.a, dt, floating)
    ref_other = _ref_operand(y.a, dt, floating) if isinstance(y, Case) else _opmath_scalar(y, x.a.dtype)
    inputs = [x] + ([yc] if yc is not None else [])
    return Call(f"{op.name}({x}, {y!r})", lambda: op.fn(x.t, other), lambda: op.ref(a, ref_other), inputs)


@generator
def inplace(rng) -> Call:
    name = _pick(rng, ["add_", "sub_", "mul_", "div_"])
    x = case(rng)
    y, _ = _operand(rng, x)
    other = y.t if isinstance(y, Case) else y
    ref_other = _f64(y.a) if isinstance(y, Case) else _opmath_scalar(y, x.a.dtype)
    op = {"add_": np.add, "sub_": np.subtract, "mul_": np.multiply, "div_": np.true_divide}[name]
    expanded = "expanded" in x.layout
    ref = None if expanded else (lambda: np.broadcast_to(op(_f64(x.a), ref_other), x.a.shape))
    return Call(f"x.{name}({y!r}) with x={x}", lambda: getattr(x.t, name)(other), ref, written=x)


@generator
def reduction(rng) -> Call:
    red = REDUCE[_pick(rng, list(REDUCE))]
    x = case(rng)
    keepdim = bool(rng.random() < 0.5)
    d = None if rng.random() < 0.3 else dim(rng, x.t.ndim)

    def ref():
        a = _f64(x.a)
        if red.dtypes is not ALL and x.a.dtype.kind != "f":
            raise TypeError("integer input")
        if x.a.ndim == 0 and d not in (None, 0, -1):
            raise IndexError("dim")
        axis = None if d is None or x.a.ndim == 0 else d
        return np.asarray(red.ref(a, axis, keepdim))

    strict = red.name in ("amax", "amin")  # of nothing: NumPy refuses, and so must pyframe
    return Call(f"{red.name}({x}, dim={d}, keepdim={keepdim})", lambda: red.fn(x.t, d, keepdim), ref, [x],
                strict=strict)  # fmt: skip


@generator
def arg_extreme(rng) -> Call:
    name = _pick(rng, ["argmax", "argmin"])
    x = case(rng, dt=_pick(rng, [pf.float32, pf.float64, pf.int64, pf.int32]))
    d = dim(rng, x.t.ndim)
    return Call(
        f"pf.{name}({x}, dim={d})", lambda: getattr(pf, name)(x.t, d),
        lambda: getattr(np, name)(x.a, axis=d if x.a.ndim else None), [x], strict=True,
    )  # fmt: skip


@generator
def shape_op(rng) -> Call:
    x = case(rng)
    n = x.t.ndim
    kind = _pick(rng, ["reshape", "transpose", "flatten", "squeeze", "unsqueeze", "narrow", "split", "expand"])
    a = x.a
    if kind == "reshape":
        s = shape(rng) if rng.random() < 0.5 else (-1,)
        return Call(f"{x}.reshape({s})", lambda: x.t.reshape(*s), lambda: a.reshape(s), [x])
    if kind == "transpose":
        d0, d1 = dim(rng, n), dim(rng, n)
        return Call(f"{x}.transpose({d0}, {d1})", lambda: x.t.transpose(d0, d1), lambda: np.swapaxes(a, d0, d1), [x])
    if kind == "flatten":
        return Call(f"{x}.flatten()", lambda: x.t.flatten(), lambda: a.reshape(-1), [x])
    if kind == "squeeze":
        d = dim(rng, n)

        def sq():
            if a.ndim == 0:
                return a
            return np.squeeze(a, d) if a.shape[d] == 1 else a

        return Call(f"{x}.squeeze({d})", lambda: x.t.squeeze(d), sq, [x])
    if kind == "unsqueeze":
        d = int(rng.integers(-n - 1, n + 1))
        return Call(f"{x}.unsqueeze({d})", lambda: x.t.unsqueeze(d), lambda: np.expand_dims(a, d), [x])
    if kind == "narrow":
        d = dim(rng, n)
        start, length = int(rng.integers(-3, 4)), int(rng.integers(-1, 4))

        def nar():
            size = a.shape[d]
            s = start + size if start < 0 else start
            if not (0 <= s <= size and length >= 0 and s + length <= size):
                raise IndexError("narrow")
            return np.take(a, range(s, s + length), axis=d)

        return Call(f"{x}.narrow({d}, {start}, {length})", lambda: x.t.narrow(d, start, length), nar, [x])
    if kind == "split":
        d, size = dim(rng, n), int(rng.integers(1, 4)) if rng.random() < 0.9 else bad(rng)

        def spl():
            total = a.shape[d]
            return tuple(np.take(a, range(i, min(i + size, total)), axis=d) for i in range(0, total, size)) or (a,)

        return Call(f"{x}.split({size!r}, {d})", lambda: x.t.split(size, d), spl, [x])
    s = tuple(k if rng.random() < 0.7 else int(rng.choice([-1, 2, 3, 0])) for k in x.t.shape)
    s = (int(rng.integers(1, 3)),) * int(rng.random() < 0.3) + s
    return Call(f"{x}.expand({s})", lambda: x.t.expand(*s), None, [x])


@generator
def cat_stack(rng) -> Call:
    x = case(rng)
    y = case(rng, tuple(x.t.shape) if rng.random() < 0.8 else None, x.t.dtype if rng.random() < 0.8 else None)
    d = dim(rng, x.t.ndim + 1)
    if rng.random() < 0.5:
        return Call(f"pf.stack([{x}, {y}], {d})", lambda: pf.stack([x.t, y.t], d), None, [x, y])
    return Call(f"pf.cat([{x}, {y}], {d})", lambda: pf.cat([x.t, y.t], d), None, [x, y])


def _key(rng, s: tuple):
    parts = []
    for n in s[: int(rng.integers(0, len(s) + 1))]:
        r = rng.random()
        if r < 0.3:
            parts.append(int(rng.integers(-n, n)) if n else 0)
        elif r < 0.6:
            parts.append(slice(int(rng.integers(-4, 4)), int(rng.integers(-4, 6)), int(rng.choice([1, 2, 3]))))
        elif r < 0.7:
            parts.append(None)
        elif r < 0.8:
            parts.append(bool(rng.random() < 0.5))
        elif r < 0.9:
            parts.append([int(v) for v in rng.integers(-n, max(n, 1), int(rng.integers(0, 4)))] if n else [])
        else:
            parts.append(Ellipsis)
    return tuple(parts)


def _np_key(key):
    return tuple(np.asarray(k, dtype=np.int64) if isinstance(k, list) else k for k in key)


@generator
def getitem(rng) -> Call:
    x = case(rng)
    key = _key(rng, tuple(x.t.shape))
    # torch (pyframe's rule) takes an int beside index lists as basic indexing, NumPy as advanced:
    # where the two differ there is no reference
    mixed = any(isinstance(k, (list, bool)) for k in key) and any(type(k) is int for k in key)
    return Call(f"{x}[{key!r}]", lambda: x.t[key], None if mixed else (lambda: x.a[_np_key(key)]), [x])


@generator
def setitem(rng) -> Call:
    x = case(rng)
    key = _key(rng, tuple(x.t.shape))
    value = scalar(rng, x.t.dtype)

    def run():
        x.t[key] = value
        return x.t

    def ref():
        a = x.a.copy()
        if x.a.dtype.kind in "iub" and isinstance(value, float) and not math.isfinite(value):
            raise ValueError("non-finite into an integer")
        with np.errstate(all="ignore"):
            a[_np_key(key)] = value
        return a

    return Call(f"x[{key!r}] = {value!r} with x={x}", run, None if "expanded" in x.layout else ref, written=x)


def _index(rng, n: int, count: int) -> pf.Tensor:
    hi = max(n, 1)
    return pf.tensor(rng.integers(-hi if rng.random() < 0.1 else 0, hi + (rng.random() < 0.05), count))


def _writes(x: Case, desc: str, run: Callable, ref: Callable) -> Call:
    """An in-place call on ``x``; into an expanded ``x`` the result is undefined (no reference)."""
    return Call(f"{desc} with x={x}", run, None if "expanded" in x.layout else ref, written=x)


@generator
def index_ops(rng) -> Call:
    x = case(rng, shape(rng, int(rng.integers(1, 4))))
    d = dim(rng, x.t.ndim)
    kind = _pick(rng, ["index_select", "index_add_", "scatter_add_", "gather", "masked_fill"])
    if kind == "index_select":
        idx = _index(rng, x.t.shape[d] if -x.t.ndim <= d < x.t.ndim else 1, int(rng.integers(0, 5)))
        return Call(
            f"pf.index_select({x}, {d}, {idx.tolist()})", lambda: pf.index_select(x.t, d, idx),
            lambda: np.take(x.a, idx.numpy(), axis=d), [x], strict=False,
        )  # fmt: skip
    if kind == "masked_fill":
        mask = pf.tensor(rng.random(tuple(x.t.shape)) < 0.5)
        value = scalar(rng, x.t.dtype)

        def ref():
            if x.a.dtype.kind in "iub" and isinstance(value, float) and not math.isfinite(value):
                raise ValueError("non-finite into an integer")
            info = np.iinfo(x.a.dtype) if x.a.dtype.kind in "iu" else None
            if info is not None and isinstance(value, int) and not info.min <= value <= info.max:
                raise OverflowError(value)
            return np.where(mask.numpy(), np.asarray(value).astype(x.a.dtype), x.a)

        return Call(f"pf.masked_fill({x}, mask, {value!r})", lambda: pf.masked_fill(x.t, mask, value), ref, [x])
    same = rng.random() < 0.3  # the source is the destination itself: an aliasing write
    src = x if same else case(rng, tuple(x.t.shape), x.t.dtype)
    n = x.t.shape[d] if -x.t.ndim <= d < x.t.ndim else 1
    if kind == "gather":
        idx = pf.tensor(rng.integers(0, max(n, 1), tuple(x.t.shape)))
        return Call(f"pf.gather({x}, {d}, idx)", lambda: pf.gather(x.t, d, idx), None, [x])
    if kind == "scatter_add_":
        idx = pf.tensor(rng.integers(0, max(n, 1), tuple(x.t.shape)))

        def ref():
            a, i = _f64(x.a).copy(), idx.numpy()
            if a.ndim == 0:
                raise IndexError("dim")
            at = [i if ax == d % a.ndim else grid for ax, grid in enumerate(np.indices(i.shape))]
            np.add.at(a, tuple(at), _f64(src.a))
            return a

        return _writes(
            x, f"x.scatter_add_({d}, idx, {'x' if same else src})", lambda: x.t.scatter_add_(d, idx, src.t), ref
        )
    length = src.t.shape[d] if -x.t.ndim <= d < x.t.ndim else 0
    idx = _index(rng, n, length)

    def ref():
        a = _f64(x.a).copy()
        np.add.at(a, (slice(None),) * (d % a.ndim) + (idx.numpy(),), _f64(src.a))
        return a

    return _writes(
        x, f"x.index_add_({d}, {idx.tolist()}, {'x' if same else src})", lambda: x.t.index_add_(d, idx, src.t), ref
    )


@generator
def factories(rng) -> Call:
    dt = _pick(rng, [pf.float32, pf.float64, pf.float16, pf.int64, pf.int32, pf.bool, None])
    value = scalar(rng, dt or pf.float32)
    s = shape(rng, int(rng.integers(0, 4)))
    kind = _pick(rng, ["full", "fill_", "clamp", "tensor", "zeros", "arange"])
    if kind == "full":
        return Call(f"pf.full({s}, {value!r}, dtype={dt})", lambda: pf.full(s, value, dtype=dt), None)
    if kind == "fill_":
        x = case(rng, s, dt)
        return Call(f"{x}.fill_({value!r})", lambda: x.t.fill_(value), None)
    if kind == "clamp":
        x = case(rng, s, dt)
        lo, hi = (value, None) if rng.random() < 0.5 else (None, value)
        ref = (lambda: np.clip(x.a, lo, hi)) if x.t.dtype.is_floating_point and isinstance(value, float) else None
        return Call(f"{x}.clamp({lo!r}, {hi!r})", lambda: x.t.clamp(lo, hi), ref, [x])
    if kind == "tensor":
        data = _pick(rng, [[value, 1], [[1, 2], [3]], ["1", "0"], [True, 2.5], [2**64], value, [[]], [1, None]])
        return Call(f"pf.tensor({data!r}, dtype={dt})", lambda: pf.tensor(data, dtype=dt), None)
    if kind == "zeros":
        size = tuple(int(v) for v in rng.choice([0, 1, 3, -1, 2**40, 2**62], int(rng.integers(1, 4))))
        return Call(f"pf.zeros({size})", lambda: pf.zeros(*size), None)
    args = (value, scalar(rng, pf.float32), _pick(rng, [1, 0.5, -1, 0, 2**40, math.nan]))
    return Call(f"pf.arange{args!r}", lambda: pf.arange(*args) if abs(args[1] - args[0]) < 1e6 else None, None)


@generator
def matmul(rng) -> Call:
    dt = _pick(rng, [pf.float32, pf.float64])
    m, k, n = (int(v) for v in rng.integers(0, 6, 3))
    lead = shape(rng, int(rng.integers(0, 3)))
    x = case(rng, lead + (m, k) if rng.random() < 0.8 else (k,), dt)
    y = case(rng, (k + int(rng.random() < 0.1), n) if rng.random() < 0.8 else (k,), dt)

    def ref():
        # a product or partial sum past the computing dtype's range: its inf/NaN order is the kernel's (torch's
        # differs too), so the float64 reference is undefined there
        finite = [np.where(np.isfinite(v.a), np.abs(v.a.astype(np.float64)), 0.0) for v in (x, y)]
        _fits(np.matmul(*finite), dt)
        return np.matmul(x.a, y.a)

    return Call(f"pf.matmul({x}, {y})", lambda: pf.matmul(x.t, y.t), ref, [x, y])


@generator
def functional(rng) -> Call:
    x = float_case(rng)
    n = x.t.ndim
    kind = _pick(rng, ["softmax", "log_softmax", "pad", "linear", "conv2d", "max_pool2d", "avg_pool2d", "dropout"])
    if kind in ("softmax", "log_softmax"):
        d = dim(rng, n)

        def ref():
            a = _f64(x.a)
            if a.ndim == 0:
                a = a.reshape(1)
            m = np.max(a, axis=d, keepdims=True)  # torch's: an inf in a row makes it NaN
            e = np.exp(a - m)
            s = e.sum(axis=d, keepdims=True)
            out = a - m - np.log(s) if kind == "log_softmax" else e / s
            return out.reshape(x.a.shape)

        return Call(f"F.{kind}({x}, {d})", lambda: getattr(F, kind)(x.t, d), ref, [x])
    if kind == "pad":
        pads = tuple(int(v) for v in rng.integers(0, 3, 2 * int(rng.integers(1, 3))))
        value = scalar(rng, x.t.dtype)
        return Call(f"F.pad({x}, {pads}, value={value!r})", lambda: F.pad(x.t, pads, value=value), None, [x])
    if kind == "linear":
        i, o = (x.t.shape[-1] if n else 1), int(rng.integers(0, 4))
        w = case(rng, (o, i if rng.random() < 0.9 else i + 1), x.t.dtype)
        return Call(f"F.linear({x}, {w})", lambda: F.linear(x.t, w.t),
                    lambda: np.matmul(_f64(x.a), _f64(w.a).T), [x, w])  # fmt: skip
    if kind == "dropout":
        p = _pick(rng, [0.0, 0.5, 1.0, -0.1, 2.0, math.nan])
        return Call(f"F.dropout({x}, p={p})", lambda: F.dropout(x.t, p, training=True), None, [x])
    img = float_case(rng, shape(rng, 4))
    arg = lambda: int(rng.choice([1, 1, 2, 3])) if rng.random() < 0.9 else bad(rng)  # noqa: E731
    stride, padding, k = arg(), _pick(rng, [0, 1, 0, -1, 2**31]), arg()
    if kind == "conv2d":
        c = img.t.shape[1]
        w = case(rng, (int(rng.integers(1, 3)), c, 2, 2), img.t.dtype)
        return Call(f"F.conv2d({img}, {w}, stride={stride!r}, padding={padding!r})",
                    lambda: F.conv2d(img.t, w.t, stride=stride, padding=padding), None, [img, w])  # fmt: skip
    fn = getattr(F, kind)
    return Call(f"F.{kind}({img}, {k!r}, stride={stride!r})", lambda: fn(img.t, k, stride), None, [img])


@generator
def modules(rng) -> Call:
    i, o = int(rng.choice([0, 1, 3, -1, 2**40])), int(rng.choice([0, 2, 4]))
    x = float_case(rng, shape(rng, int(rng.integers(1, 4)))[:-1] + (max(i, 0) if i < 100 else 3,))

    def run():
        layer = pf.nn.Linear(i, o)
        return layer(x.t.to(pf.float32))

    return Call(f"nn.Linear({i}, {o})({x})", run, None, [x])


@generator
def autograd(rng) -> Call:
    x = float_case(rng)
    name = _pick(rng, ["exp", "tanh", "sigmoid", "sqrt", "abs", "mean", "sum", "softmax"])

    def run():
        leaf = x.t.detach().clone().requires_grad_()
        y = F.softmax(leaf, -1) if name == "softmax" else getattr(pf, name)(leaf)
        y.sum().backward()
        assert leaf.grad is not None and leaf.grad.shape == leaf.shape, "gradient shape differs from the input's"
        return leaf.grad

    return Call(f"{name}({x}).sum().backward()", run, None, [x])


@generator
def interop(rng) -> Call:
    x = case(rng)
    kind = _pick(rng, ["save_load", "numpy_lifetime", "requires_grad"])
    if kind == "save_load":

        def run():
            buf = io.BytesIO()
            pf.save({"t": x.t, "n": [x.t, 3]}, buf)
            buf.seek(0)
            return pf.load(buf)["t"]

        return Call(f"load(save({x}))", run, lambda: x.a, [x])
    if kind == "numpy_lifetime":

        def run():
            arr = np.array(x.a, copy=True)
            view = pf.from_numpy(arr).numpy()
            del arr
            np.zeros(4096)  # reuse freed memory if the view did not keep it alive
            return pf.tensor(view)

        return Call(f"from_numpy(array {x}).numpy() after the array is dropped", run, lambda: x.a, [x])

    def set_rg():
        t = x.t.detach().clone()
        t.requires_grad = True
        return t.detach()

    ref = (lambda: x.a) if x.t.dtype.is_floating_point else (lambda: (_ for _ in ()).throw(TypeError("int")))
    return Call(f"{x}.requires_grad = True", set_rg, ref, [x], strict=True)


_ERF = np.frompyfunc(math.erf, 1, 1)


def _same_dtype_case(rng, s: tuple, dt) -> Case | None:
    return case(rng, s, dt) if rng.random() < 0.8 else None


def _fits(a: np.ndarray, dt) -> np.ndarray:
    """An intermediate the library computes in ``dt`` (float32 for float16, as torch): past
    that dtype's range its inf/NaN is the right answer, so the float64 reference is undefined."""
    top = np.finfo(np.float64 if dt is pf.float64 else np.float32).max
    if np.nanmax(np.abs(a), initial=0) > top:
        raise ValueError("an intermediate overflows the computing dtype")
    return a


def _finite(*cases) -> None:
    """The fused references follow the math, not torch's inf/NaN propagation through a row's
    statistics: with a non-finite input they are undefined (crash checks only)."""
    for c in cases:
        if c is not None and c.a.dtype.kind == "f" and not np.isfinite(c.a).all():
            raise ValueError("non-finite input")


@generator
def fused(rng) -> Call:
    """The ops with their own C kernel each way (layer_norm, gelu, batch_norm, cross_entropy,
    attention, cat, embedding): forward against NumPy, and backward crash-only."""
    kind = _pick(rng, ["layer_norm", "gelu", "batch_norm", "cross_entropy", "sdpa", "cat", "embedding", "backward"])
    if kind == "layer_norm":
        x = float_case(rng, shape(rng, int(rng.integers(1, 4))))
        d = x.t.shape[-1]
        w, b = _same_dtype_case(rng, (d,), x.t.dtype), _same_dtype_case(rng, (d,), x.t.dtype)

        def ref():
            _finite(x, w, b)
            a = _f64(x.a)
            _fits(a * a, x.t.dtype)
            y = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
            return y * (_f64(w.a) if w else 1) + (_f64(b.a) if b else 0)

        return Call(f"F.layer_norm({x}, ({d},), {w}, {b})", lambda: F.layer_norm(x.t, (d,), w and w.t, b and b.t),
                    ref, [c for c in (x, w, b) if c])  # fmt: skip
    if kind == "gelu":
        x, approx = float_case(rng), _pick(rng, ["none", "tanh"])

        def ref():
            a = _f64(x.a)
            if approx == "tanh":
                return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))
            return 0.5 * a * (1 + _ERF(a / math.sqrt(2)).astype(np.float64))

        return Call(f"F.gelu({x}, approximate={approx!r})", lambda: F.gelu(x.t, approximate=approx), ref, [x])
    if kind == "batch_norm":
        x = float_case(rng, shape(rng, int(rng.integers(2, 5))))
        c = x.t.shape[1]
        w, b = _same_dtype_case(rng, (c,), x.t.dtype), _same_dtype_case(rng, (c,), x.t.dtype)
        axes = tuple(i for i in range(x.t.ndim) if i != 1)
        bshape = (1, c) + (1,) * (x.t.ndim - 2)

        def ref():
            _finite(x, w, b)
            a = _f64(x.a)
            if a.size // max(c, 1) <= 1:
                raise ValueError("one value per channel")
            _fits(a * a, x.t.dtype)
            y = (a - a.mean(axes, keepdims=True)) / np.sqrt(a.var(axes, keepdims=True) + 1e-5)
            return y * (_f64(w.a).reshape(bshape) if w else 1) + (_f64(b.a).reshape(bshape) if b else 0)

        return Call(f"F.batch_norm({x}, training, {w}, {b})",
                    lambda: F.batch_norm(x.t, None, None, w and w.t, b and b.t, training=True), ref,
                    [c_ for c_ in (x, w, b) if c_])  # fmt: skip
    if kind == "cross_entropy":
        n, c = int(rng.integers(0, 6)), int(rng.integers(1, 6))
        logits = float_case(rng, (n, c))
        target = rng.integers(0, c, n) if rng.random() < 0.8 else rng.integers(-2, c + 2, n)
        t = pf.tensor(target, dtype=pf.int64)

        def ref():
            if ((target < 0) | (target >= c)).any():
                raise IndexError("target out of range")
            a = _f64(logits.a)
            m = a.max(1, keepdims=True) if n else a
            lse = (m + np.log(np.exp(a - m).sum(1, keepdims=True)))[:, 0] if n else np.zeros(0)
            return np.mean(lse - a[np.arange(n), target])

        in_range = ((target >= 0) & (target < c)).all()
        if in_range and not np.isfinite(logits.a).all():
            ref = None  # the math's answer is not torch's NaN/inf propagation: crash checks only
        return Call(f"F.cross_entropy({logits}, {target.tolist()})", lambda: F.cross_entropy(logits.t, t), ref,
                    [logits], strict=True)  # fmt: skip
    if kind == "sdpa":
        dt, causal = FLOATS[int(rng.integers(len(FLOATS)))], bool(rng.random() < 0.5)
        bh = (int(rng.integers(1, 3)), 2)
        L, S, E, Ev = (int(v) for v in rng.integers(1, 5, 4))
        q, k, v = case(rng, bh + (L, E), dt), case(rng, bh + (S, E), dt), case(rng, bh + (S, Ev), dt)

        def ref():
            _finite(q, k, v)
            s = _fits(_f64(q.a)[..., None, :] * _f64(k.a)[..., None, :, :], dt).sum(-1) / math.sqrt(E)
            if causal:
                s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            return (s / s.sum(-1, keepdims=True)) @ _f64(v.a)

        run = lambda: F.scaled_dot_product_attention(q.t, k.t, v.t, is_causal=causal)  # noqa: E731
        return Call(f"F.scaled_dot_product_attention({q}, {k}, {v}, is_causal={causal})", run, ref, [q, k, v])
    if kind == "cat":
        x = case(rng, shape(rng, int(rng.integers(1, 4))))
        d = int(rng.integers(0, x.t.ndim))
        parts = [x]
        for _ in range(int(rng.integers(0, 3))):
            s = list(x.t.shape)
            s[d] = int(rng.integers(0, 4))
            if rng.random() < 0.1:  # a mismatch elsewhere
                s[(d + 1) % len(s)] += 1
            parts.append(case(rng, tuple(s), x.t.dtype))
        return Call(f"pf.cat({parts}, {d})", lambda: pf.cat([p.t for p in parts], d),
                    lambda: np.concatenate([p.a for p in parts], d), parts)  # fmt: skip
    if kind == "embedding":
        w = float_case(rng, (int(rng.integers(1, 6)), int(rng.integers(1, 4))))
        idx = rng.integers(0, w.t.shape[0], shape(rng, int(rng.integers(1, 3))))
        if rng.random() < 0.2 and idx.size:
            idx.flat[0] = _pick(rng, [-1, w.t.shape[0], 2**40])
        ti = pf.tensor(idx, dtype=pf.int64)

        def ref():
            if ((idx < 0) | (idx >= w.a.shape[0])).any():
                raise IndexError("index out of range")
            return w.a[idx]

        return Call(f"F.embedding({idx.tolist()}, {w})", lambda: F.embedding(ti, w.t), ref, [w], strict=True)
    x = float_case(rng, shape(rng, int(rng.integers(2, 5))))
    name = _pick(rng, ["layer_norm", "gelu", "relu", "tanh", "sigmoid", "log_softmax", "prod", "batch_norm", "sdpa"])

    def run():
        leaf = x.t.detach().clone().requires_grad_()
        if name == "layer_norm":
            y = F.layer_norm(leaf, leaf.shape[-1:])
        elif name == "batch_norm":
            y = F.batch_norm(leaf, None, None, training=True)
        elif name == "sdpa":
            y = F.scaled_dot_product_attention(leaf, leaf, leaf, is_causal=True)
        elif name in ("gelu", "relu", "log_softmax"):
            y = getattr(F, name)(leaf, -1) if name == "log_softmax" else getattr(F, name)(leaf)
        else:
            y = getattr(pf, name)(leaf)
        y.sum().backward()
        assert leaf.grad is not None and leaf.grad.shape == leaf.shape, "gradient shape differs from the input's"
        return leaf.grad

    return Call(f"{name}({x}).sum().backward()", run, None, [x])
