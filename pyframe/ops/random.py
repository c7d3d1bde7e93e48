"""Random sampling from given probabilities or parameters: multinomial, bernoulli, randperm,
normal. Uniform and normal draws come from the counter-based generator (pf_random); the
inverse-CDF search of multinomial and the sort behind randperm run in C."""

from __future__ import annotations

import math
import threading

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe._device import CPU, check_device, check_layout
from pyframe._dtype import as_dtype, as_number, float64, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import broadcast_shapes, size_args, zeros_of
from pyframe.ops.creation import _finish, _like, _like_kwargs, _make, _on, tensor
from pyframe.tensor import Tensor, as_shape, empty_tensor

__all__ = [
    "multinomial", "bernoulli", "randperm", "normal", "rand", "randn", "randint", "rand_like", "randn_like",
    "randint_like", "Generator", "default_generator", "manual_seed", "initial_seed", "seed", "get_rng_state",
    "set_rng_state", "uniform_", "normal_", "poisson", "binomial", "exponential_", "cauchy_",
    "log_normal_", "geometric_",
]  # fmt: skip


def _uniform(shape: tuple, dt, generator) -> Tensor:

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
    num_samples = as_number(num_samples)
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

    if isinstance(p, Tensor):
        return ew.copy_(self, bernoulli(p.to(float64).expand(*self._shape).contiguous(), generator=generator))
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p <= 1:
        raise ValueError(f"bernoulli_(): p must be a number in [0, 1], got {p!r}")
    return _draw(lib.PF_RAND_BERNOULLI, self, float(p), 0.0, generator)


def randperm(
    n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """Same as torch.randperm: a random permutation of 0..n-1 (Fisher-Yates on the generator's
    counter-based draws, in C; the data samplers' orders come from here too)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"randperm(): n must be a non-negative int, got {n!r}")
    check_device(device)
    dt = as_dtype(dtype) if dtype is not None else int64
    perm = empty_tensor((n,), int64)
    seed, offset = _generator(generator).take(n)
    check(lib.pf_randperm(perm._d(), seed, offset))
    out = perm if dt is int64 else perm.to(dt)
    if requires_grad:
        out.requires_grad_()
    return out


def weighted_sample(weights: Tensor, num_samples: int, replacement: bool, generator=None) -> Tensor:
    """``num_samples`` int64 indices drawn with probabilities proportional to the 1-d float
    ``weights`` (finite, non-negative, a positive sum), with or without replacement: the
    WeightedRandomSampler's draw. Uses ``num_samples`` counters with replacement, one per weight
    without."""
    w = weights.contiguous()
    out = empty_tensor((num_samples,), int64)
    seed, offset = _generator(generator).take(num_samples if replacement else w._numel)
    check(lib.pf_weighted_sample(w._d(), out._d(), int(bool(replacement)), seed, offset))
    return out


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
           layout=None, pin_memory=False) -> Tensor:  # fmt: skip
    """Same as torch.normal in all its forms: tensor mean and/or std (broadcast together), or numbers
    with ``size`` (then torch's ``layout``, strided only, and ``pin_memory`` are accepted). Gradients to mean and std
    are zero, as torch's."""

    check_device(device)
    check_layout(layout, "normal")
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not tm and not ts:
        if size is None:
            raise TypeError("normal(): with a number mean and std, size is required")
        if not (isinstance(std, (int, float)) and std >= 0 and math.isfinite(std)):
            raise ValueError(f"normal(): std must be a finite number >= 0, got {std!r}")
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


def _param_draw(kind: int, a: Tensor, b: Tensor | None, generator) -> Tensor:
    """One draw per element of ``a`` (and ``b``) from the C kernel's parameterised samplers, in ``a``'s dtype."""
    a64 = a.detach().to(float64).contiguous()
    b64 = b.detach().to(float64).expand(*a._shape).contiguous() if b is not None else None
    out = empty_tensor(a._shape, float64)
    seed, offset = _generator(generator).take(a._numel)
    check(lib.pf_random_param(kind, a64._d(), b64._d() if b is not None else ffi.NULL, out._d(), seed, offset))
    return out.to(a.dtype)


def _standard_gamma(input: Tensor, *, generator=None) -> Tensor:  # noqa: A002
    """Same as torch._standard_gamma: a Gamma(``input``, 1) draw per element (Marsaglia and Tsang), smallest
    positive value of the dtype at least, as torch; reparameterised: the gradient to ``input`` is
    ``_standard_gamma_grad(input, draw)``, torch's."""
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("_standard_gamma(): input must be a floating-point Tensor")
    tiny = 2.2250738585072014e-308 if input.dtype is float64 else 1.1754943508222875e-38
    out = ew.clamp(_param_draw(lib.PF_RAND_GAMMA, input, None, generator), min=tiny)
    if _grad_mode.enabled and input.requires_grad:
        record("StandardGammaBackward0", lambda g: (ew.mul(g, _standard_gamma_grad(input.detach(), out)),),
               (input,), out)  # fmt: skip
    return out


def _standard_gamma_grad(input: Tensor, output: Tensor) -> Tensor:  # noqa: A002
    """Same as torch._standard_gamma_grad: d x / d alpha of a Gamma(alpha, 1) draw x held at its CDF value
    (the implicit reparameterisation gradient), elementwise over the broadcast shape, in ``input``'s dtype."""
    shape = broadcast_shapes(input._shape, output._shape)
    a64 = input.detach().to(float64).expand(*shape).contiguous()
    x64 = output.detach().to(float64).expand(*shape).contiguous()
    out = empty_tensor(shape, float64)
    check(lib.pf_standard_gamma_grad(a64._d(), x64._d(), out._d()))
    return out.to(input.dtype)


def poisson(input: Tensor, generator=None) -> Tensor:  # noqa: A002
    """Same as torch.poisson: a Poisson(``input``) count per element, in ``input``'s dtype (rates finite and
    non-negative, else ValueError). Gradients to ``input`` are zero, as torch's.

    Differs: the draws come from pyframe's generator, so the numbers differ from torch's."""
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        raise TypeError("poisson(): input must be a floating-point Tensor of rates")
    out = _param_draw(lib.PF_RAND_POISSON, input, None, generator)
    _zero_grads("PoissonBackward0", (input,), out)
    return out


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Same as torch.binomial: a Binomial(``count``, ``prob``) draw per element, in ``count``'s dtype (counts
    non-negative integers, probabilities in [0, 1], else ValueError); ``prob`` broadcasts to ``count``'s shape.

    Differs: the draws come from pyframe's generator, so the numbers differ from torch's."""
    if not isinstance(count, Tensor) or not isinstance(prob, Tensor):
        raise TypeError("binomial(): count and prob must be Tensors")
    if not count.dtype.is_floating_point or not prob.dtype.is_floating_point:
        raise TypeError("binomial(): count and prob must be floating point")
    try:
        broadcast_shapes(count._shape, prob._shape)
        prob.expand(*count._shape)
    except (ValueError, RuntimeError, ShapeError):
        raise ShapeError(f"binomial(): prob of shape {list(prob._shape)} does not broadcast to count's "
                         f"{list(count._shape)}") from None  # fmt: skip
    out = _param_draw(lib.PF_RAND_BINOMIAL, count, prob, generator)
    _zero_grads("BinomialBackward0", (count, prob), out)
    return out


class _Generator:
    """Counter-based: each draw takes the next ``numel`` counters of (seed, offset), so a
    result depends on the seed and the draw order only, never on the thread count."""

    def __init__(self, seed: int = 0):
        self.lock = threading.Lock()
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        if not isinstance(seed, int):
            raise TypeError(f"manual_seed expects an int, got {type(seed).__name__}")
        self.seed, self.offset = seed & 0xFFFFFFFFFFFFFFFF, 0

    def take(self, n: int) -> tuple[int, int]:
        with self.lock:
            offset = self.offset
            self.offset += n
        return self.seed, offset


class Generator(_Generator):
    """Same as torch.Generator (CPU): a counter-based stream of its own, for ``generator=`` arguments.

    Differs: the numbers are pyframe's Philox stream, not torch's Mersenne Twister; ``seed`` is the
    current seed (an int), not torch's method that reseeds."""

    def __init__(self, device=None) -> None:
        check_device(device)
        super().__init__(67280421310721)  # torch's default seed
        self._initial = 67280421310721

    @property
    def device(self):
        """Always the CPU device."""
        return CPU

    def manual_seed(self, seed: int) -> Generator:
        """Same as torch.Generator.manual_seed: restarts this generator's stream at ``seed``; returns the generator."""
        super().manual_seed(int(seed))
        self._initial = int(seed)
        return self

    def initial_seed(self) -> int:
        """Same as torch.Generator.initial_seed: the seed last given to ``manual_seed`` (torch's default seed if
        none).
        """
        return self._initial

    def get_state(self) -> Tensor:
        """The generator's state as an int64 tensor [seed, offset] (torch's is a uint8 byte tensor)."""
        seed = self.seed - (1 << 64) if self.seed >= 1 << 63 else self.seed
        return tensor([seed, self.offset], dtype=_dtype.int64)

    def set_state(self, state: Tensor) -> Generator:
        """Restores a state from ``get_state``; returns the generator."""
        s, off = state.tolist()
        self.seed, self.offset = int(s) & 0xFFFFFFFFFFFFFFFF, int(off)
        return self


_default = Generator().manual_seed(0x5EED)
default_generator = _default  # torch's name: the global generator as an object (manual_seed, get_state...)


def manual_seed(seed: int) -> None:
    """Same as torch.manual_seed."""
    _default.manual_seed(int(seed))


def initial_seed() -> int:
    """Same as torch.initial_seed: the seed the global generator was last seeded with."""
    return _default.seed


def seed() -> int:
    """Same as torch.seed: seeds the global generator from the OS's entropy (63 bits) and returns that seed."""
    import os

    s = int.from_bytes(os.urandom(8), "little") >> 1
    _default.manual_seed(s)
    return s


def get_rng_state() -> Tensor:
    """[seed, offset] as int64 (the 64-bit seed in two's complement, so no bit is lost)."""
    seed = _default.seed - (1 << 64) if _default.seed >= 1 << 63 else _default.seed
    return tensor([seed, _default.offset], dtype=_dtype.int64)


def set_rng_state(state: Tensor) -> None:
    """Same as torch.set_rng_state, for a state from ``get_rng_state``: the int64 pair [seed, offset]."""
    s, off = state.tolist()
    _default.seed, _default.offset = int(s) & 0xFFFFFFFFFFFFFFFF, int(off)


def _draw(kind: int, t: Tensor, p0: float, p1: float, generator=None) -> Tensor:
    t._write_check()
    if t.is_meta:  # no memory to fill (nn.init on a module built on the meta device)
        return t
    s, off = _generator(generator).take(t._numel)
    check(lib.pf_random(kind, t._d(), s, off, float(p0), float(p1)))
    t._bump()
    return t


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, *, generator=None) -> Tensor:
    """Same as torch.Tensor.uniform_: fills ``t`` in place with uniform samples on [a, b).

    Args:
        t: the tensor to fill.
        a: the lower bound.
        b: the upper bound (``a <= b``, else ValueError).
        generator: a ``pyframe.Generator``; default the global one.

    Returns:
        ``t``, filled in place.
    """
    if not a <= b:
        raise ValueError(f"uniform_ expects a <= b, got a={a}, b={b}")
    return _draw(lib.PF_RAND_UNIFORM, t, a, b, generator)


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Same as torch.Tensor.normal_: fills ``t`` in place with samples of a normal distribution.

    Args:
        t: the tensor to fill.
        mean: the distribution's mean.
        std: its standard deviation (``>= 0``, else ValueError).
        generator: a ``pyframe.Generator``; default the global one.

    Returns:
        ``t``, filled in place.
    """
    if not std >= 0:
        raise ValueError(f"normal_ expects std >= 0, got std={std}")
    return _draw(lib.PF_RAND_NORMAL, t, mean, std, generator)


def _fill_from(t: Tensor, values: Tensor) -> Tensor:
    t._write_check()
    ew.copy_(t, values)
    return t


def exponential_(t: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    """Same as torch.Tensor.exponential_: fills ``t`` with Exponential(``lambd``) samples, ``-log(1 - u) / lambd``
    of uniforms ``u`` in [0, 1) (``lambd > 0``, else ValueError)."""
    if not (isinstance(lambd, (int, float)) and lambd > 0):
        raise ValueError(f"exponential_ expects lambd > 0, got lambd={lambd}")
    u = _uniform(t._shape, float64, generator)
    return _fill_from(t, ew.div(ew.neg(ew.log1p(ew.neg(u))), float(lambd)))


def cauchy_(t: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    """Same as torch.Tensor.cauchy_: fills ``t`` with Cauchy(``median``, ``sigma``) samples,
    ``median + sigma * tan(pi * (u - 1/2))`` (``sigma > 0``, else ValueError)."""
    if not (isinstance(sigma, (int, float)) and sigma > 0):
        raise ValueError(f"cauchy_ expects sigma > 0, got sigma={sigma}")
    u = _uniform(t._shape, float64, generator)
    return _fill_from(t, ew.add(ew.mul(ew.tan(ew.mul(ew.sub(u, 0.5), math.pi)), float(sigma)), float(median)))


def log_normal_(t: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Same as torch.Tensor.log_normal_: fills ``t`` with ``exp`` of Normal(``mean``, ``std``) samples
    (``std > 0``, else ValueError)."""
    if not (isinstance(std, (int, float)) and std > 0):
        raise ValueError(f"log_normal_ expects std > 0, got std={std}")
    z = _draw(lib.PF_RAND_NORMAL, empty_tensor(t._shape, float64), float(mean), float(std), generator)
    return _fill_from(t, ew.exp(z))


def geometric_(t: Tensor, p: float, *, generator=None) -> Tensor:
    """Same as torch.Tensor.geometric_: fills ``t`` with the number of Bernoulli(``p``) trials up to and including
    the first success (values 1, 2, ...), ``ceil(log(1 - u) / log(1 - p))`` (``0 < p < 1``, else ValueError)."""
    if not (isinstance(p, (int, float)) and 0 < p < 1):
        raise ValueError(f"geometric_ expects p in (0, 1), got p={p}")
    u = _uniform(t._shape, float64, generator)
    k = ew.clamp(ew.ceil(ew.div(ew.log1p(ew.neg(u)), math.log1p(-p))), min=1.0)
    return _fill_from(t, k)


def _generator(generator) -> _Generator:
    """The generator a draw uses: the default one, or any object with ``take(n) -> (seed, offset)``
    (pyframe.Generator)."""
    if generator is None:
        return _default
    if not callable(getattr(generator, "take", None)):
        raise TypeError(f"generator must be a pyframe.Generator, got {type(generator).__name__}")
    return generator


def rand(*sizes, size=None, dtype=None, requires_grad: bool = False, device=None, generator=None) -> Tensor:
    """Same as torch.rand: uniform samples on [0, 1).

    Args:
        *sizes: the shape, as ints or one sequence; or ``size=``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        generator: a ``pyframe.Generator`` to draw from; default the global one (``manual_seed``).

    Returns:
        A new tensor. The numbers are pyframe's counter-based stream: the same seed gives the same
        numbers whatever the thread count, but not torch's numbers.
    """
    size = size_args("rand", sizes, size, "size")
    return _finish(uniform_(_make(size, dtype, False, device=device), generator=generator), requires_grad)


def randn(*sizes, size=None, dtype=None, requires_grad: bool = False, device=None, generator=None) -> Tensor:
    """Same as torch.randn: samples of the standard normal distribution (mean 0, std 1).

    Args:
        *sizes: the shape, as ints or one sequence; or ``size=``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        generator: a ``pyframe.Generator`` to draw from; default the global one (``manual_seed``).

    Returns:
        A new tensor. The numbers are pyframe's counter-based stream, not torch's.
    """
    size = size_args("randn", sizes, size, "size")
    return _finish(normal_(_make(size, dtype, False, device=device), generator=generator), requires_grad)


def randint(low, high=None, size=None, dtype=None, requires_grad: bool = False, device=None, generator=None) -> Tensor:
    """Same as torch.randint(low=0, high, size): integers in [low, high), int64 by default."""
    if size is None:
        if isinstance(high, (tuple, list)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing required argument 'size'")
    if high is None:
        low, high = 0, low
    low, high = as_number(low), as_number(high)
    for name, v in (("low", low), ("high", high)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError(f"randint bounds must be finite numbers, got {name}={v!r}")
    if not low < high:
        raise ValueError(f"randint: low must be less than high, got low={low}, high={high}")
    t = _make(tuple(size), dtype or _dtype.int64, False, device=device)
    return _finish(_draw(lib.PF_RAND_INT, t, low, high, generator), requires_grad)


def rand_like(input: Tensor, dtype=None, *, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.rand_like: ``rand`` with ``input``'s shape and (by default) dtype and device, from the global
    generator; torch's ``layout`` (strided only), ``memory_format`` and ``pin_memory`` are accepted."""
    _like_kwargs(kwargs)
    return rand(*input._shape, dtype=_like(input, dtype), requires_grad=requires_grad, device=_on(input, device))


def randn_like(input: Tensor, dtype=None, *, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.randn_like: ``randn`` with ``input``'s shape and (by default) dtype and device, from the global
    generator; torch's ``layout`` (strided only), ``memory_format`` and ``pin_memory`` are accepted."""
    _like_kwargs(kwargs)
    return randn(*input._shape, dtype=_like(input, dtype), requires_grad=requires_grad, device=_on(input, device))


def randint_like(input: Tensor, low, high=None, dtype=None, *, requires_grad: bool = False, device=None,
                 **kwargs) -> Tensor:  # fmt: skip
    """Same as torch.randint_like: ``randint(low, high)`` with ``input``'s shape and (by default) dtype and device.

    ``randint_like(x, 10)`` draws from [0, 10), ``randint_like(x, 3, 10)`` from [3, 10).
    """
    _like_kwargs(kwargs)
    return randint(low, high, input._shape, dtype=_like(input, dtype), requires_grad=requires_grad,
                   device=_on(input, device))  # fmt: skip
