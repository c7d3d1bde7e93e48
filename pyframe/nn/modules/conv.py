"""Convolutions in 1-3 dims and their transposes on one ``_ConvNd`` base, their lazy forms (``LazyConv2d``:
``in_channels`` taken from the first input), and ``Fold``/``Unfold``. Same as torch.nn's."""

from __future__ import annotations

import inspect
import math

from pyframe.nn import functional as F
from pyframe.nn.modules._utils import _ArgsModule, _changed, _Layer, _tuple
from pyframe.nn.modules.lazy import LazyModuleMixin
from pyframe.nn.modules.linear import init_weight_and_bias
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter, UninitializedParameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "Conv2d", "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold", "Conv3d", "ConvTranspose3d",
    "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
]  # fmt: skip


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(_Layer):
    """What the convolutions share: torch's checks, weight layout ``(out, in/groups, *k)``
    (transposed: ``(in, out/groups, *k)``), kaiming-uniform init and repr. A class names its
    functional form (``fn=``) and sets ``_dims``, its spatial dims; ``__init__`` here is the
    signature of Conv1d and Conv2d, ``_ConvTransposeNd`` has the transposed one."""

    _dims = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                    padding_mode, device, dtype)  # fmt: skip

    def _setup(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation, transposed: bool,
               output_padding, groups: int, bias: bool, padding_mode: str, device, dtype) -> None:  # fmt: skip
        n, name = self._dims, type(self).__name__
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride = _tuple(stride, n, "stride")
        if isinstance(padding, str):
            if padding not in ("same", "valid") or transposed:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _tuple(padding, n, "padding")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")  # fmt: skip
        if padding_mode != "zeros" and transposed:  # torch's own limit
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = stride
        self.padding = padding
        self.dilation = _tuple(dilation, n, "dilation")
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self._set_pad_twice()
        self._make_parameters(bias, device, dtype)

    def _set_pad_twice(self) -> None:
        """torch's _reversed_padding_repeated_twice: F.pad's argument for a padding_mode other than zeros."""
        if isinstance(self.padding, str):
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size), strict=True):
                total = d * (k - 1) if self.padding == "same" else 0
                pads += [total // 2, total - total // 2]
        else:
            pads = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = tuple(pads)

    def _make_parameters(self, bias: bool, device, dtype) -> None:
        in_channels, out_channels, groups = self.in_channels, self.out_channels, self.groups
        shape = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        weight = creation.empty(*shape, *self.kernel_size, dtype=dtype, device=device)
        b = creation.empty(out_channels, dtype=dtype, device=device) if bias else None
        init_weight_and_bias(weight, b, self._fan_in())
        self.weight = Parameter(weight)
        self.register_parameter("bias", None if b is None else Parameter(b))

    def _fan_in(self) -> int:
        # torch's fan-in is weight.size(1) * prod(kernel): out/groups for a transposed conv
        per = self.out_channels if self.transposed else self.in_channels
        return per // self.groups * math.prod(self.kernel_size)

    def reset_parameters(self) -> None:
        init_weight_and_bias(self.weight, self.bias, self._fan_in())

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._fn(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        n = self._dims
        head = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        s = _changed(self, head, padding=(0,) * n, dilation=(1,) * n, output_padding=(0,) * n, groups=1)
        s = s if self.bias is not None else s + ", bias=False"
        return s if self.padding_mode == "zeros" else s + f", padding_mode={self.padding_mode}"


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions: torch's argument order (``output_padding`` before ``groups``,
    ``dilation`` after ``bias``); no ``output_size`` argument to forward."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        Module.__init__(self)
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding, groups,
                    bias, padding_mode, device, dtype)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                        self.dilation)  # fmt: skip


class Conv1d(_ConvNd, fn=F.conv1d):
    """Same as torch.nn.Conv1d; a ``padding_mode`` other than "zeros" pads with ``F.pad`` first, as torch."""

    _dims = 1


class Conv2d(_ConvNd, fn=F.conv2d):
    """Same as torch.nn.Conv2d: weight ``(out_channels, in_channels // groups, kh, kw)``; a ``padding_mode``
    other than "zeros" pads with ``F.pad`` first, as torch."""

    _dims = 2


class Conv3d(_ConvNd, fn=F.conv3d):
    """Same as torch.nn.Conv3d: weight ``(out_channels, in_channels // groups, kd, kh, kw)``."""

    _dims = 3


class ConvTranspose1d(_ConvTransposeNd, fn=F.conv_transpose1d):
    """Same as torch.nn.ConvTranspose1d (no ``output_size`` argument to forward)."""

    _dims = 1


class ConvTranspose2d(_ConvTransposeNd, fn=F.conv_transpose2d):
    """Same as torch.nn.ConvTranspose2d (no ``output_size`` argument to forward)."""

    _dims = 2


class ConvTranspose3d(_ConvTransposeNd, fn=F.conv_transpose3d):
    """Same as torch.nn.ConvTranspose3d (no ``output_size`` argument to forward)."""

    _dims = 3


class _LazyConvXdMixin(LazyModuleMixin):
    """torch's lazy convolutions (its ``_LazyConvXdMixin``): ``in_channels`` is 0 and the weight (and bias) are
    UninitializedParameters until the first forward, which takes ``in_channels`` from the input's channel dim,
    materializes and initializes the parameters, and turns the module into its plain class."""

    def _lazy_setup(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.in_channels = 0
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", UninitializedParameter(device=device, dtype=dtype) if bias else None)

    def _make_parameters(self, bias: bool, device, dtype) -> None:
        pass  # made on the first forward

    def _fan_in(self) -> int:
        return 1 if self.in_channels == 0 else super()._fan_in()

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002
        """Take ``in_channels`` from ``input`` and materialize the parameters (torch's LazyModuleMixin step)."""
        if not self.has_uninitialized_params():
            return
        batched = input.ndim == self._dims + 2
        if not batched and input.ndim != self._dims + 1:
            raise ValueError(f"{type(self).__name__}: expected a {self._dims + 1}-d or {self._dims + 2}-d input, "
                             f"got shape {list(input.shape)}")  # fmt: skip
        self.in_channels = input.shape[1 if batched else 0]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        per, other = (self.in_channels, self.out_channels // self.groups) if self.transposed else (
            self.out_channels, self.in_channels // self.groups)  # fmt: skip
        self.weight.materialize((per, other, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        init_weight_and_bias(self.weight, self.bias, self._fan_in())

    def _infer_from_loaded(self) -> None:
        self.in_channels = self.weight.shape[0] if self.transposed else self.weight.shape[1] * self.groups


def _lazy(name: str, base: type) -> type:
    signature = inspect.signature(base.__init__)

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, *args, **kwargs) -> None:
        bound = signature.bind(self, 0, out_channels, kernel_size, stride, padding, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        a["in_channels"] = a["groups"] if isinstance(a["groups"], int) and a["groups"] > 0 else 1  # until forward
        base.__init__(**a)
        self._lazy_setup(out_channels, a["bias"], a["device"], a["dtype"])

    doc = (f"Same as torch.nn.{name}: a {base.__name__} whose ``in_channels`` is inferred from the first input "
           f"(its weight and bias are UninitializedParameters until then); it becomes a {base.__name__}.")  # fmt: skip
    cls = type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "__doc__": doc, "__module__": __name__})
    cls.cls_to_become = base
    return cls


LazyConv1d = _lazy("LazyConv1d", Conv1d)
LazyConv2d = _lazy("LazyConv2d", Conv2d)
LazyConv3d = _lazy("LazyConv3d", Conv3d)
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", ConvTranspose1d)
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", ConvTranspose2d)
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", ConvTranspose3d)


class Unfold(_ArgsModule):
    """Same as torch.nn.Unfold."""

    _shown = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(_ArgsModule):
    """Same as torch.nn.Fold."""

    _shown = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(output_size=output_size, kernel_size=kernel_size, dilation=dilation, padding=padding,
                         stride=stride)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
