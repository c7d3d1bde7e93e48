"""``Upsample`` (and its nearest/bilinear aliases), ``PixelShuffle``, ``PixelUnshuffle`` and ``ChannelShuffle``. Same
as torch.nn's."""

from __future__ import annotations

from pyframe._aliases import channel_shuffle
from pyframe.nn import functional as F
from pyframe.nn.modules._utils import _ArgsModule
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = [
    "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ChannelShuffle",
]  # fmt: skip


class Upsample(Module):
    """Same as torch.nn.Upsample (see ``F.interpolate`` for the modes)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:  # fmt: skip
        super().__init__()
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) else scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)  # fmt: skip

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Same as torch.nn.UpsamplingNearest2d."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Same as torch.nn.UpsamplingBilinear2d (bilinear with ``align_corners=True``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(_ArgsModule):
    """Same as torch.nn.PixelShuffle."""

    _shown = ("upscale_factor",)

    def __init__(self, upscale_factor: int) -> None:
        super().__init__(upscale_factor=upscale_factor)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)


class PixelUnshuffle(_ArgsModule):
    """Same as torch.nn.PixelUnshuffle."""

    _shown = ("downscale_factor",)

    def __init__(self, downscale_factor: int) -> None:
        super().__init__(downscale_factor=downscale_factor)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)


class ChannelShuffle(_ArgsModule):
    """Same as torch.nn.ChannelShuffle: the channels of ``(N, C, *)`` regrouped as ``(groups, C / groups)`` and
    transposed (``pyframe.channel_shuffle``), as ShuffleNet mixes its grouped convolutions."""

    def __init__(self, groups: int) -> None:
        super().__init__(groups=groups)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
