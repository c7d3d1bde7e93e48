"""Pooling layers: max, average, power-average, adaptive average and adaptive max in 1-3 dims, and max
unpooling. Same as torch.nn's."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules._utils import _ArgsModule, _tuple
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "MaxPool2d", "AdaptiveAvgPool1d", "AvgPool1d", "MaxPool1d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "LPPool3d",
    "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
]  # fmt: skip


class _MaxPoolNd(_ArgsModule):
    """MaxPool1d's and MaxPool2d's arguments (``stride`` defaults to ``kernel_size``), given to
    the class's functional form (``fn=``)."""

    _shown = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:  # fmt: skip
        super().__init__(kernel_size=kernel_size, stride=stride if stride is not None else kernel_size,
                         padding=padding, dilation=dilation, return_indices=return_indices,
                         ceil_mode=ceil_mode)  # fmt: skip

    def forward(self, input: Tensor):  # noqa: A002 - torch's name
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                        self.return_indices)  # fmt: skip


class MaxPool1d(_MaxPoolNd, fn=F.max_pool1d):
    """Same as torch.nn.MaxPool1d; ``stride`` defaults to ``kernel_size``."""


class MaxPool2d(_MaxPoolNd, fn=F.max_pool2d):
    """Same as torch.nn.MaxPool2d; ``stride`` defaults to ``kernel_size``."""


class MaxPool3d(_MaxPoolNd, fn=F.max_pool3d):
    """Same as torch.nn.MaxPool3d; ``stride`` defaults to ``kernel_size``."""


class _AvgPoolNd(_ArgsModule):
    """The average pools' base (torch's ``_AvgPoolNd``): AvgPool2d's and AvgPool3d's arguments (``stride``
    defaults to ``kernel_size``), given to the class's functional form (``fn=``)."""

    _shown = ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:  # fmt: skip
        super().__init__(kernel_size=kernel_size, stride=stride if stride is not None else kernel_size,
                         padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         divisor_override=divisor_override)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)  # fmt: skip


class AvgPool1d(_AvgPoolNd):
    """Same as torch.nn.AvgPool1d; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:  # fmt: skip
        _ArgsModule.__init__(self, kernel_size=_tuple(kernel_size, 1, "kernel_size"),
                             stride=_tuple(stride if stride is not None else kernel_size, 1, "stride"),
                             padding=_tuple(padding, 1, "padding"), ceil_mode=ceil_mode,
                             count_include_pad=count_include_pad)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)  # fmt: skip


class AvgPool2d(_AvgPoolNd, fn=F.avg_pool2d):
    """Same as torch.nn.AvgPool2d; ``stride`` defaults to ``kernel_size``."""


class AvgPool3d(_AvgPoolNd, fn=F.avg_pool3d):
    """Same as torch.nn.AvgPool3d; ``stride`` defaults to ``kernel_size``."""


class _AdaptiveAvgPoolNd(_ArgsModule):
    """The adaptive average pools' argument: a fixed ``output_size`` (None keeps a dim)."""

    _shown = ("output_size",)

    def __init__(self, output_size) -> None:
        super().__init__(output_size=output_size)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd, fn=F.adaptive_avg_pool1d):
    """Same as torch.nn.AdaptiveAvgPool1d."""


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd, fn=F.adaptive_avg_pool2d):
    """Same as torch.nn.AdaptiveAvgPool2d: averages to a fixed ``output_size`` (None keeps a dim)."""


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd, fn=F.adaptive_avg_pool3d):
    """Same as torch.nn.AdaptiveAvgPool3d."""


class _AdaptiveMaxPoolNd(_ArgsModule):
    """The adaptive max pools' arguments."""

    _shown = ("output_size",)

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size=output_size, return_indices=return_indices)

    def forward(self, input: Tensor):  # noqa: A002
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd, fn=F.adaptive_max_pool1d):
    """Same as torch.nn.AdaptiveMaxPool1d."""


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd, fn=F.adaptive_max_pool2d):
    """Same as torch.nn.AdaptiveMaxPool2d."""


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd, fn=F.adaptive_max_pool3d):
    """Same as torch.nn.AdaptiveMaxPool3d."""


class _LPPoolNd(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def extra_repr(self) -> str:
        return "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}".format(
            **self.__dict__
        )


class LPPool1d(_LPPoolNd):
    """Same as torch.nn.LPPool1d (``F.lp_pool1d``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Same as torch.nn.LPPool2d (``F.lp_pool2d``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Same as torch.nn.LPPool3d (``F.lp_pool3d``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class _MaxUnpoolNd(_ArgsModule):
    """The max unpools' arguments (``stride`` defaults to ``kernel_size``), as tuples like torch's."""

    _shown = ("kernel_size", "stride", "padding")
    _dims = 1

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        n = self._dims
        super().__init__(kernel_size=_tuple(kernel_size, n, "kernel_size"),
                         stride=_tuple(stride if stride is not None else kernel_size, n, "stride"),
                         padding=_tuple(padding, n, "padding"))  # fmt: skip

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd, fn=F.max_unpool1d):
    """Same as torch.nn.MaxUnpool1d: the partial inverse of MaxPool1d."""

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd, fn=F.max_unpool2d):
    """Same as torch.nn.MaxUnpool2d: the partial inverse of MaxPool2d."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd, fn=F.max_unpool3d):
    """Same as torch.nn.MaxUnpool3d: the partial inverse of MaxPool3d."""

    _dims = 3


class _FractionalMaxPoolNd(Module):
    """The fractional max pools' arguments: ``output_size`` or ``output_ratio`` (each in (0, 1)), and
    ``_random_samples`` kept as a buffer, as torch."""

    _dims = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:  # fmt: skip
        super().__init__()
        n, name = self._dims, type(self).__name__
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n, "output_size") if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n, "output_ratio") if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):  # noqa: A002
        fn = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)  # fmt: skip


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Same as torch.nn.FractionalMaxPool2d (Graham's fractional max pooling)."""

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Same as torch.nn.FractionalMaxPool3d."""

    _dims = 3
