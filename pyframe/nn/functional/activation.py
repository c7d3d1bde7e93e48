"""Activations and softmax."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _float_arg, _regrad, _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.elementwise import write_back
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "celu", "elu", "gelu", "glu", "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu",
    "log_softmax", "logsigmoid", "mish", "prelu", "relu", "relu6", "relu_", "rrelu", "selu", "sigmoid", "silu",
    "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "elu_",
    "hardtanh_", "leaky_relu_", "celu_", "selu_", "rrelu_", "threshold_",
]  # fmt: skip

_NATIVE = (_dtype.float32.code, _dtype.float64.code)  # dtypes the fused C kernels take


def _activate(input: Tensor, inplace: bool, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(input)``, written into ``input`` when ``inplace`` (``write_back``: backward stays legal)."""
    return write_back(input, fn) if inplace else fn(input)


def _pointwise(input: Tensor, inplace: bool, op: int, name: str, composed_grad, p0: float = 0.0, p1: float = 0.0):
    """The activation of C unary code ``op`` (parameters p0, p1): one pass forward for every float dtype and
    layout; one pass backward (pf_activation_backward, torch's formula over g and x) for float32 and float64.
    ``composed_grad(g, x)``, written with the ops, serves the other dtypes and ``create_graph`` (its ops are
    differentiable again)."""

    def forward(x: Tensor) -> Tensor:
        y = empty_tensor(x._shape, x.dtype)
        check(lib.pf_unary(op, x._d(), y._d(), p0, p1))
        return y

    def derivative(g: Tensor, x: Tensor) -> Tensor:
        if _grad_mode.enabled or x.dtype.code not in _NATIVE or g.dtype is not x.dtype or g._shape != x._shape:
            return composed_grad(g, x)
        g, xc = g.contiguous(), x.contiguous()
        gx = empty_tensor(x._shape, x.dtype)
        check(lib.pf_activation_backward(op, x.dtype.code, g._ptr, xc._ptr, gx._ptr, x._numel, p0, p1))
        return gx

    if inplace and not (input._requires_grad and _grad_mode.enabled):
        input._write_check()
        check(lib.pf_unary(op, input._d(), input._d(), p0, p1))  # elementwise: reading and writing one place
        input._bump()
        return input
    return _activate(input, inplace, lambda x: ew.with_derivative(name, forward, derivative, x))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu."""
    return ew.copy_(input, ew.relu(input)) if inplace else ew.relu(input)


def relu_(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.relu_: ``relu(input, inplace=True)``, written into ``input``."""
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu6: hardtanh(x, 0, 6), gradient 0 at 0 and at 6."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.hardtanh."""
    if min_val > max_val:
        raise ValueError(f"hardtanh(): min_val {min_val} cannot be greater than max_val {max_val}")
    return _activate(input, inplace, lambda x: ew.with_derivative(
        "HardtanhBackward0", lambda t: ew.clamp(t, min_val, max_val),
        lambda g, t: ew.hardtanh_grad(g, t, min_val, max_val), x))  # fmt: skip


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.leaky_relu."""
    _float_arg(input, "leaky_relu")
    return _pointwise(input, inplace, lib.PF_LEAKY_RELU, "LeakyReluBackward0",
                      lambda g, x: ew.where(ew.gt(x, 0.0), g, ew.mul(g, negative_slope)), negative_slope)  # fmt: skip


def _elu_grad(alpha: float, input_scale: float, scale: float = 1.0):
    """torch's elu_backward on the input: x <= 0 (the exponential side includes 0) or the linear side (NaN)."""
    coef = alpha * scale * input_scale
    return lambda g, x: ew.where(ew.le(x, 0.0), ew.mul(ew.mul(g, coef), ew.exp(ew.mul(x, input_scale))),
                                 ew.mul(g, scale) if scale != 1 else g)  # fmt: skip


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.elu: x <= 0 takes the exponential side (derivative alpha at 0), NaN the
    linear one."""
    _float_arg(input, "elu")
    return _pointwise(input, inplace, lib.PF_ELU, "EluBackward0", _elu_grad(alpha, 1.0), alpha, 1.0)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Same as torch.nn.functional.gelu: exact (erf) or ``approximate="tanh"``. float32 and
    float64 run one C call each way (pf_gelu); float16 composes ops."""
    _float_arg(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    if input.dtype.code not in _NATIVE:
        return _gelu_composed(input, approximate)
    x = input.contiguous()
    dt, n, tanh_form = x.dtype, x._numel, int(approximate == "tanh")
    y = empty_tensor(x._shape, dt)
    # backward recomputes the gate (erf or tanh) from the input: keeping the erf form's gate saved
    # one vectorized erf pass but held a second tensor of the input's size per GELU until backward
    check(lib.pf_gelu(dt.code, x._ptr, y._ptr, NULL, n, tanh_form))
    if not needs_grad(input):
        return y
    # ... except through the output: the erf form's gate is y / x, which spares backward its erf (2 of the
    # 6.8 ms of forward + backward at a transformer MLP's [1024, 1536] on an AVX2 machine). An alias without
    # history (no cycle through the node), read only while y is unchanged; a following Linear keeps y anyway
    out = None if tanh_form else y._view(y._shape, y._strides)
    version = y._storage.version

    def backward(g):
        if _grad_mode.enabled:  # create_graph: differentiate the composition instead
            return _regrad(lambda t: _gelu_composed(t, approximate), (input,), g)
        g = g.contiguous()
        gx = empty_tensor(x._shape, dt)
        if out is not None and out._storage.version == version:
            check(lib.pf_gelu_backward(dt.code, g._ptr, x._ptr, out._ptr, gx._ptr, n, 2))
        else:
            check(lib.pf_gelu_backward(dt.code, g._ptr, x._ptr, NULL, gx._ptr, n, tanh_form))
        return (gx,)

    record("GeluBackward0", backward, (input,), y, (input,))
    return y


def _gelu_composed(input: Tensor, approximate: str) -> Tensor:
    if approximate == "none":
        inner = ew.add(ew.erf(ew.mul(input, _SQRT1_2)), 1.0)
    else:
        cube = ew.mul(ew.mul(input, input), input)
        inner = ew.add(ew.tanh(ew.mul(ew.add(input, ew.mul(cube, 0.044715)), _SQRT_2_PI)), 1.0)
    return ew.mul(ew.mul(input, 0.5), inner)


def tanh(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.tanh."""
    return ew.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.sigmoid."""
    return ew.sigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.silu: x * sigmoid(x)."""
    _float_arg(input, "silu")
    return _pointwise(input, inplace, lib.PF_SILU, "SiluBackward0", _silu_grad)


def _silu_grad(g, x):
    s = ew.sigmoid(x)
    return ew.mul(ew.mul(g, s), ew.add(ew.mul(x, ew.sub(1.0, s)), 1.0))


def _softplus_neg_abs(x: Tensor) -> Tensor:
    """log(1 + exp(-|x|)), finite for every x."""
    return ew.log1p(ew.exp(ew.neg(ew.abs(x))))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Same as torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, linear above
    ``threshold``; torch's derivative: 1 above the threshold, else sigmoid(beta x) (NaN at NaN)."""
    _float_arg(input, "softplus")
    return _pointwise(input, False, lib.PF_SOFTPLUS, "SoftplusBackward0",
                      lambda g, x: _softplus_grad(g, x, beta, threshold), beta, threshold)  # fmt: skip


def _softplus_grad(g, x, beta, threshold):
    bx = ew.mul(x, beta) if beta != 1 else x
    z = ew.exp(bx)
    return ew.where(ew.gt(bx, threshold), g, ew.div(ew.mul(g, z), ew.add(z, 1.0)))


def logsigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.logsigmoid: -softplus(-x), computed stably; torch's derivative
    (1 - s for x < 0, else s, with s = e^-|x| / (1 + e^-|x|): 0.5 at 0)."""
    _float_arg(input, "logsigmoid")
    return ew.with_derivative("LogSigmoidBackward0", _logsigmoid, _logsigmoid_grad, input)


def _logsigmoid(x):
    return ew.neg(ew.add(_softplus_neg_abs(x), ew.relu(ew.neg(x))))


def _logsigmoid_grad(g, x):
    z = ew.exp(ew.neg(ew.abs(x)))
    s = ew.div(z, ew.add(z, 1.0))
    return ew.mul(g, ew.where(ew.lt(x, 0.0), ew.sub(1.0, s), s))


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


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.mish: x * tanh(softplus(x))."""
    _float_arg(input, "mish")
    return _pointwise(input, inplace, lib.PF_MISH, "MishBackward0", _mish_grad)


def _mish_grad(g, x):
    t = ew.tanh(ew.log1p(ew.exp(x)))
    return ew.mul(g, ew.add(t, ew.mul(ew.mul(x, ew.sigmoid(x)), ew.sub(1.0, ew.mul(t, t)))))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.selu: scale * elu(x, alpha) with torch's constants."""
    _float_arg(input, "selu")
    return _pointwise(input, inplace, lib.PF_SELU, "EluBackward0", _elu_grad(_SELU_ALPHA, 1.0, _SELU_SCALE))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    _float_arg(input, "celu")
    if alpha == 0:
        raise ValueError("celu(): alpha cannot be 0")
    return _pointwise(input, inplace, lib.PF_ELU, "EluBackward0", _elu_grad(alpha, 1.0 / alpha), alpha, 1.0 / alpha)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.hardsigmoid: relu6(x + 3) / 6; derivative 1/6 strictly inside (-3, 3),
    0 at +-3 and outside (torch's)."""
    _float_arg(input, "hardsigmoid")
    return _pointwise(input, inplace, lib.PF_HARDSIGMOID, "HardsigmoidBackward0", _hardsigmoid_grad)


def _hardsigmoid_grad(g, x):
    return ew.where(ew.logical_and(ew.gt(x, -3.0), ew.lt(x, 3.0)), ew.div(g, 6.0), 0.0)


def _hardswish_grad(g, x):
    """torch's: 0 up to -3 (included), x / 3 + 1/2 below 3, 1 from 3 on (and at NaN)."""
    return ew.where(ew.le(x, -3.0), 0.0, ew.where(ew.lt(x, 3.0), ew.mul(g, ew.add(ew.div(x, 3.0), 0.5)), g))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.hardswish: x * relu6(x + 3) / 6."""
    _float_arg(input, "hardswish")
    return _pointwise(input, inplace, lib.PF_HARDSWISH, "HardswishBackward0", _hardswish_grad)


def softsign(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.softsign: x / (1 + |x|)."""
    _float_arg(input, "softsign")
    return ew.div(input, ew.add(ew.abs(input), 1.0))


def tanhshrink(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.tanhshrink: x - tanh(x)."""
    _float_arg(input, "tanhshrink")
    return ew.sub(input, ew.tanh(input))


def _check_lambd(fn: str, lambd: float, negative: bool = False) -> None:
    """A number; softshrink's also >= 0 (torch takes a negative one for hardshrink, where it keeps every x)."""
    if not isinstance(lambd, (int, float)) or isinstance(lambd, bool):
        raise TypeError(f"{fn}(): lambda must be a number, got {type(lambd).__name__}")
    if lambd < 0 and not negative:
        raise ValueError(f"{fn}(): lambda must be greater or equal to 0, but found to be {lambd!r}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Same as torch.nn.functional.softshrink: x - lambd above lambd, x + lambd below -lambd, else 0
    (at +-lambd too, with gradient 0 there; NaN stays NaN with gradient 1)."""
    _float_arg(input, "softshrink")
    _check_lambd("softshrink", lambd)
    return ew.where(ew.le(ew.abs(input), lambd), 0.0, ew.sub(input, ew.mul(ew.sign(input), lambd)))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Same as torch.nn.functional.hardshrink: x where |x| > lambd, else 0 (NaN stays NaN)."""
    _float_arg(input, "hardshrink")
    _check_lambd("hardshrink", lambd, negative=True)
    return ew.where(ew.le(ew.abs(input), lambd), 0.0, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.threshold: ``value`` where x <= threshold, else x (NaN stays NaN)."""
    _tensor_arg(input, "threshold")
    return _activate(input, inplace, lambda x: ew.where(ew.le(x, threshold), value, x))


_threshold = threshold  # torch.nn.functional.threshold's own name (its __name__)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Same as torch.nn.functional.glu: a * sigmoid(b) for the two halves of ``dim``."""
    _float_arg(input, "glu")
    if input.ndim == 0:
        raise ValueError("glu(): glu does not support scalars because halving size must be even")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"glu(): dim {dim} is out of range for a {input.ndim}-d input")
    if input._shape[d] % 2:
        raise ValueError(f"glu(): Halving dimension must be even, but dimension {d} is size {input._shape[d]}")
    a, b = input.chunk(2, d)
    return ew.mul(a, ew.sigmoid(b))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Same as torch.nn.functional.prelu: x where x > 0, else weight * x; ``weight`` has one
    element or one per channel (dim 1)."""
    _float_arg(input, "prelu")
    _tensor_arg(weight, "prelu", "weight")
    n = weight._numel
    if n != 1:
        channels = input._shape[1] if input.ndim >= 2 else (input._shape[0] if input.ndim == 1 else 1)
        if weight.ndim != 1 or n != channels:
            raise ValueError(f"prelu(): mismatch of parameter numbers and input channel size: found {n} weights "
                             f"for {channels} channels (input shape {list(input._shape)})")  # fmt: skip
        shape = [1] * input.ndim
        shape[1 if input.ndim >= 2 else 0] = n
        weight = weight.reshape(shape)
    elif weight.ndim:
        weight = weight.reshape(())
    return ew.where(ew.gt(input, 0.0), input, ew.mul(weight, input))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.rrelu: in training a slope uniform in [lower, upper] per
    element of the negative part (pyframe's random stream), else the mean slope."""
    _float_arg(input, "rrelu")
    if not lower <= upper:
        raise ValueError(f"rrelu(): lower bound {lower} must be at most upper bound {upper}")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    from pyframe import _grad_mode
    from pyframe.ops.random import uniform_
    from pyframe.tensor import empty_tensor

    with _grad_mode.no_grad():
        slope = uniform_(empty_tensor(input._shape, input.dtype), lower, upper)
    return _activate(input, inplace, lambda x: ew.where(ew.ge(x, 0.0), x, ew.mul(x, slope)))


def _softmax2d(input: Tensor) -> Tensor:
    """torch.nn.Softmax2d's computation: softmax over the channel dim of (N, C, H, W) or (C, H, W)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"Softmax2d: expected a 3-d or 4-d input, got shape {list(input._shape)}")
    return rd.softmax(input, -3)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """Same as torch.nn.functional.gumbel_softmax: softmax((logits + Gumbel noise) / tau); with
    ``hard``, the one-hot argmax in the forward pass and the soft gradient (straight-through).
    The noise comes from pyframe's random stream."""
    _float_arg(logits, "gumbel_softmax")
    if not tau > 0:
        raise ValueError(f"gumbel_softmax(): tau must be positive, got {tau}")
    from pyframe import _grad_mode
    from pyframe.ops.random import rand

    with _grad_mode.no_grad():
        u = rand(*logits._shape, dtype=logits.dtype)
        gumbels = ew.neg(ew.log(ew.neg(ew.log(ew.clamp(u, min=1e-20)))))  # -log(Exp(1))
    y = rd.softmax(ew.div(ew.add(logits, gumbels), tau), dim)
    if not hard:
        return y
    from pyframe.ops import index as ix
    from pyframe.ops._common import zeros_of

    with _grad_mode.no_grad():
        idx = rd.argmax(y, dim, keepdim=True)
        one = zeros_of(y._shape, y.dtype)
        ix.scatter_add_(one, dim, idx, ew.add(zeros_of(idx._shape, y.dtype), 1.0))
    return ew.add(ew.sub(one, y.detach()), y)


# torch's in-place spellings: the op with inplace=True, written into ``input``
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.elu_: ``elu(input, alpha, inplace=True)``."""
    return elu(input, alpha, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.hardtanh_: ``hardtanh(input, min_val, max_val, inplace=True)``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """Same as torch.nn.functional.leaky_relu_: ``leaky_relu(input, negative_slope, inplace=True)``."""
    return leaky_relu(input, negative_slope, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.celu_: ``celu(input, alpha, inplace=True)``."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.selu_: ``selu(input, inplace=True)``."""
    return selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """Same as torch.nn.functional.rrelu_: ``rrelu(input, lower, upper, training, inplace=True)``."""
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """Same as torch.nn.functional.threshold_: ``threshold(input, threshold, value, inplace=True)``."""
    return globals()["threshold"](input, threshold, value, inplace=True)
