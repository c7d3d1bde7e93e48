"""Normalization layers: batch, instance, layer, group and RMS norm, local response norms, and the lazy batch and
instance norms (``num_features`` from the first input). Same as torch.nn's."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe.nn import functional as F
from pyframe.nn.modules.lazy import LazyModuleMixin
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter
from pyframe.ops import creation, index, scan
from pyframe.tensor import Tensor

__all__ = [
    "BatchNorm1d", "BatchNorm2d", "GroupNorm", "LayerNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
    "RMSNorm", "BatchNorm3d", "LocalResponseNorm", "CrossMapLRN2d", "LazyBatchNorm1d", "LazyBatchNorm2d",
    "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]  # fmt: skip


class _Affine(Module):
    """The norms with an optional affine map: ``weight`` (ones) and ``bias`` (zeros) over
    ``shape``, or None for each left out; ``reset_parameters`` restores them."""

    def _register_affine(self, shape: tuple, affine: bool, bias: bool, device, dtype) -> None:
        weight = Parameter(creation.ones(*shape, dtype=dtype, device=device)) if affine else None
        self.register_parameter("weight", weight)
        bias = Parameter(creation.zeros(*shape, dtype=dtype, device=device)) if affine and bias else None
        self.register_parameter("bias", bias)

    @property
    def _has_bias(self) -> str:
        """The end of LayerNorm's and GroupNorm's reprs, as torch writes it."""
        return f"bias={self.bias is not None}"

    def reset_parameters(self) -> None:
        with _grad_mode.no_grad():
            if self.weight is not None:
                self.weight.fill_(1)
            if self.bias is not None:
                self.bias.zero_()


class _NormBase(_Affine):
    """What batch and instance norm share (torch's ``_NormBase``): ``weight`` and (unless
    ``bias=False``, keyword-only as in torch 2.13) ``bias`` when ``affine``; buffers
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` when ``track_running_stats``."""

    _version = 2  # version 2 added num_batches_tracked (see _load_from_state_dict)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._register_affine((num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", creation.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", creation.tensor(0, dtype=_dtype.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with _grad_mode.no_grad():
                if self.running_mean is not None:
                    self.running_mean.zero_()
                if self.running_var is not None:
                    self.running_var.fill_(1)
                if self.num_batches_tracked is not None:
                    self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        super().reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:  # fmt: skip
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.track_running_stats:
            # checkpoints from before num_batches_tracked existed
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                nbt = self.num_batches_tracked
                state_dict[key] = nbt if nbt is not None else creation.tensor(0, dtype=_dtype.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)  # fmt: skip

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")  # fmt: skip


class _BatchNorm(_NormBase):
    """Batch normalisation over dim 1; a class checks its input's dims (``_check_input_dim``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with _grad_mode.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if use_stats else None,
            self.running_var if use_stats else None,
            self.weight,
            self.bias,
            bn_training,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Same as torch.nn.BatchNorm1d: input ``(N, C)`` or ``(N, C, L)``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Same as torch.nn.BatchNorm2d: input ``(N, C, H, W)``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Same as torch.nn.BatchNorm3d: input ``(N, C, D, H, W)``."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class LocalResponseNorm(Module):
    """Same as torch.nn.LocalResponseNorm (``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(Module):
    """Same as torch.nn.CrossMapLRN2d: the legacy (Lua torch) local response norm of a 4-d input across channels,
    ``x / (k + alpha / size * sum of x**2 over the channel window) ** beta``, with its window exactly as torch
    computes it: channels ``c - (size - 1) // 2 .. c + (size - 1) // 2`` clipped to the input, plus channel 0 for
    every channel past the first ``(size - 1) // 2 + 1`` (torch's running sum never drops it). The gradient is the
    exact one of that forward (torch's hand-written backward differs from it in the last digits)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        if not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"CrossMapLRN2d: size must be a positive int, got {self.size!r}")
        channels, pre = input.shape[1], (self.size - 1) // 2 + 1
        square = input * input
        # sums[j] = sum of square[:, :j]: the window lo..hi is sums[hi + 1] - sums[lo]
        sums = scan.cumsum(F.pad(square, (0, 0, 0, 0, 1, 0)), 1)
        hi = [min(c + pre - 1, channels - 1) + 1 for c in range(channels)]
        lo = [0 if c <= pre else c - pre + 1 for c in range(channels)]
        window = index.index_select(sums, 1, creation.tensor(hi)) - index.index_select(sums, 1, creation.tensor(lo))
        first = creation.tensor([0.0 if lo_c == 0 else 1.0 for lo_c in lo], dtype=input.dtype).view(1, -1, 1, 1)
        window = window + first * square[:, :1]
        return input * (window * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class LayerNorm(_Affine):
    """Same as torch.nn.LayerNorm: normalises over the last ``len(normalized_shape)`` dims."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._register_affine(self.normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        affine = self.elementwise_affine
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={affine}, {self._has_bias}"


class GroupNorm(_Affine):
    """Same as torch.nn.GroupNorm: normalises each of ``num_groups`` channel groups per sample."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:  # fmt: skip
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self._register_affine((num_channels,), affine, bias, device, dtype)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, {self._has_bias}"


class _InstanceNorm(_NormBase):
    """Instance normalisation of each sample's channels over ``_dims`` spatial dims; torch's
    defaults (no affine, no running stats)."""

    _dims = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.ndim}D input)")
        batched = input.ndim == d + 2
        x = input if batched else input.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum if self.momentum is not None else 0.1, self.eps)  # fmt: skip
        return out if batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm1d: (N, C, L) or (C, L)."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm2d: (N, C, H, W) or (C, H, W)."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm3d: (N, C, D, H, W) or (C, D, H, W)."""

    _dims = 3


class RMSNorm(Module):
    """Same as torch.nn.RMSNorm: ``weight`` of ones over ``normalized_shape``."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Same as torch.nn.RMSNorm.reset_parameters: the weight (if any) set back to ones."""
        if self.weight is not None:
            with _grad_mode.no_grad():
                self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """torch's ``_LazyNormBase``: ``num_features`` is 0 and weight, bias, running_mean and running_var are
    uninitialized until the first input gives the channel count; then they take their usual initial values."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:  # fmt: skip
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)  # the entries come below
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=_dtype.int64)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _channels(self, input: Tensor) -> int:
        self.cls_to_become._check_input_dim(self, input)
        return input.shape[1]

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002 - torch's name
        """Take ``num_features`` from the input's channel dim; materialize and reset every entry."""
        if not self.has_uninitialized_params():
            return
        self.num_features = self._channels(input)
        for t in (self.weight, self.bias, self.running_mean, self.running_var):
            if t is not None:
                t.materialize((self.num_features,))
        self.reset_parameters()

    def _infer_from_loaded(self) -> None:
        entry = self.weight if self.weight is not None else self.running_mean
        if entry is not None:
            self.num_features = entry.shape[0]


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """Same as torch.nn.LazyBatchNorm1d: a BatchNorm1d whose ``num_features`` is the first input's ``size(1)``."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """Same as torch.nn.LazyBatchNorm2d: a BatchNorm2d whose ``num_features`` is the first input's ``size(1)``."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """Same as torch.nn.LazyBatchNorm3d: a BatchNorm3d whose ``num_features`` is the first input's ``size(1)``."""

    cls_to_become = BatchNorm3d


class _LazyInstanceNorm(_LazyNormBase, _InstanceNorm):
    """The lazy instance norms: torch's defaults for them are ``affine=True, track_running_stats=True`` (those of
    ``_LazyNormBase``, unlike the InstanceNorm classes); the channel dim is 1 of a batched input, 0 of an
    unbatched one."""

    def _channels(self, input: Tensor) -> int:
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.ndim}D input)")
        return input.shape[1 if input.ndim == d + 2 else 0]


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """Same as torch.nn.LazyInstanceNorm1d: an InstanceNorm1d whose ``num_features`` comes from the first input."""

    cls_to_become = InstanceNorm1d
    _dims = 1


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """Same as torch.nn.LazyInstanceNorm2d: an InstanceNorm2d whose ``num_features`` comes from the first input."""

    cls_to_become = InstanceNorm2d
    _dims = 2


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """Same as torch.nn.LazyInstanceNorm3d: an InstanceNorm3d whose ``num_features`` comes from the first input."""

    cls_to_become = InstanceNorm3d
    _dims = 3
