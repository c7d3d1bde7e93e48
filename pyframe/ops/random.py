"""Random sampling from given probabilities or parameters: multinomial, bernoulli, randperm,
normal. Uniform and normal draws come from the counter-based generator (pf_random); the
inverse-CDF search of multinomial and the sort behind randperm run in C."""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._device import check_device
from pyframe._dtype import as_dtype, float64, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import broadcast_shapes, zeros_of
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["multinomial", "bernoulli", "randperm", "normal"]


def _uniform(shape: tuple, dt, generator) -> Tensor:
    from pyframe.factory import uniform_

    return uniform_(empty_tensor(shape, dt), generator=generator)


def _zero_grads(name: str, inputs: tuple, out: Tensor) -> None:
    """torch's sampling nodes pass zero gradient to their parameters (the draw is not reparameterised)."""
    if _grad_mode.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in inputs):

        def backward(g):
            return tuple(zeros_of(t._shape, t.dtype) if isinstance(t, Tensor) and t.requires_grad else None
                         for t in inputs)  # fmt: skip

        record(name, backward, inputs, out)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:  # noqa: A002
    """Same as torch.multinomial: int64 category indices drawn from each row of non-negative weights
    (they need not sum to 1), with or without replacement.

    Differs: the draws come from pyframe's generator, so the numbers differ from torch's."""
    probs = input
    if not isinstance(probs, Tensor):
        raise TypeError(f"multinomial(): input must be a Tensor, got {type(probs).__name__}")
    if not probs.dtype.is_floating_point:
        raise TypeError(f"multinomial only supports floating-point dtypes for input, got {probs.dtype.name}")
    if probs.ndim not in (1, 2):
        raise ShapeError(f"multinomial(): probabilities must be 1-d or 2-d, got shape {list(probs._shape)}")
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
        raise ValueError(f"multinomial(): num_samples must be a positive int, got {num_samples!r}")
    p2 = probs.detach().reshape(1, -1) if probs.ndim == 1 else probs.detach()
    p2 = p2.to(float64).contiguous()
    rows = p2._shape[0]
    u = _uniform((rows, num_samples), float64, generator)
    out = empty_tensor((rows, num_samples), int64)
    check(lib.pf_multinomial(p2._d(), u._d(), int(bool(replacement)), out._d()))
    return out.reshape(num_samples) if probs.ndim == 1 else out


def bernoulli(input: Tensor, p: float | None = None, *, generator=None) -> Tensor:  # noqa: A002
    """Same as torch.bernoulli: 1 with probability ``input`` (or ``p``) elementwise, else 0, in
    ``input``'s dtype. Probabilities must lie in [0, 1]."""
    x = input
    if not isinstance(x, Tensor):
        raise TypeError(f"bernoulli(): input must be a Tensor, got {type(x).__name__}")
    if p is not None:
        return bernoulli_(empty_tensor(x._shape, x.dtype), p, generator=generator)
    if not x.dtype.is_floating_point:
        raise TypeError(f"bernoulli(): probabilities must be floating point, got {x.dtype.name}")
    probs = x.detach()
    if probs._numel and not ew.logical_and(ew.ge(probs, 0.0), ew.le(probs, 1.0)).all().item():
        raise ValueError("bernoulli(): every probability must be in [0, 1] (NaN is not allowed)")
    out = ew.lt(_uniform(x._shape, float64, generator), probs.to(float64)).to(x.dtype)
    _zero_grads("BernoulliBackward0", (x,), out)
    return out


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Same as torch.Tensor.bernoulli_: fills with 1 at probability ``p`` (a number or a tensor), else 0."""
    from pyframe.factory import _draw

    if isinstance(p, Tensor):
        return ew.copy_(self, bernoulli(p.to(float64).expand(*self._shape).contiguous(), generator=generator))
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
        raise ValueError(f"bernoulli_(): p must be a number in [0, 1], got {p!r}")
    return _draw(lib.PF_RAND_BERNOULLI, self, float(p), 0.0, generator)


def randperm(
    n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """Same as torch.randperm: a random permutation of 0..n-1 (argsort of uniform keys, in C)."""
    from pyframe.ops.sorting import sort

    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"randperm(): n must be a non-negative int, got {n!r}")
    check_device(device)
    dt = as_dtype(dtype) if dtype is not None else int64
    perm = sort(_uniform((n,), float64, generator)).indices
    out = perm if dt is int64 else perm.to(dt)
    if requires_grad:
        out.requires_grad_()
    return out


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Same as torch.normal in all its forms: tensor mean and/or std (broadcast together), or numbers
    with ``size``. Gradients to mean and std are zero, as torch's."""
    from pyframe.factory import normal_

    check_device(device)
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not tm and not ts:
        if size is None:
            raise TypeError("normal(): with a number mean and std, size is required")
        if not (isinstance(std, (int, float)) and std >= 0 and math.isfinite(std)):
            raise ValueError(f"normal(): std must be a finite number >= 0, got {std!r}")
        from pyframe.tensor import as_shape

        out = empty_tensor(as_shape((size,)), as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype())
        normal_(out, float(mean), float(std), generator=generator)
        return out.requires_grad_() if requires_grad else out
    if size is not None:
        raise TypeError("normal(): size is only for number mean and std")
    for name, v, is_t in (("mean", mean, tm), ("std", std, ts)):
        if is_t and not v.dtype.is_floating_point:
            raise TypeError(f"normal(): {name} must be floating point, got {v.dtype.name}")
        if not is_t and not isinstance(v, (int, float)):
            raise TypeError(f"normal(): {name} must be a Tensor or a number, got {type(v).__name__}")
    dt = mean.dtype if tm else std.dtype
    shape = broadcast_shapes(mean._shape if tm else (), std._shape if ts else ())
    s = std.detach() if ts else std
    if (ew.lt(s, 0.0).any().item() if ts else s < 0) or (not ts and not math.isfinite(s)):
        raise ValueError("normal(): std must be >= 0 everywhere")
    z = normal_(empty_tensor(shape, dt), generator=generator)
    out = ew.add(ew.mul(z, s), mean.detach() if tm else mean)
    _zero_grads("NormalBackward3", (mean if tm else None, std if ts else None), out)
    return out
