"""Same as torch.nn.SyncBatchNorm: batch normalisation whose batch statistics are those of the global
batch (every rank's samples), through a differentiable sum across ranks: forward all-reduces each rank's
per-channel sum, sum of squares and count; backward all-reduces the gradients of those sums (torch's
math). In eval mode, or in a world of one, it is BatchNorm."""

from __future__ import annotations

from pyframe import distributed as dist
from pyframe._grad_mode import no_grad
from pyframe.autograd.function import Function
from pyframe.nn.modules.normalization import _BatchNorm
from pyframe.tensor import Tensor

__all__ = ["SyncBatchNorm"]


class _SumAcrossRanks(Function):
    @staticmethod
    def forward(ctx, t: Tensor, group) -> Tensor:
        ctx.group = group
        out = t.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SyncBatchNorm(_BatchNorm):
    """Same as torch.nn.SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats, process_group):
    input ``(N, C, ...)``; build one from a model's BatchNorm layers with ``convert_sync_batchnorm``."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:  # noqa: A002 - torch's name
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        self._check_input_dim(input)
        world = dist.get_world_size(self.process_group) if dist.is_initialized() else 1
        if not self.training or world == 1:
            return super().forward(input)
        from pyframe.ops.creation import tensor
        from pyframe.ops.join import cat

        c = self.num_features
        dims = [d for d in range(input.dim()) if d != 1]
        count = tensor([float(input.numel() // c)], dtype=input.dtype)
        stats = cat([input.sum(dims), (input * input).sum(dims), count])
        total = _SumAcrossRanks.apply(stats, self.process_group)
        n = total[2 * c]
        mean = total[:c] / n
        var = total[c : 2 * c] / n - mean * mean  # biased, to normalise
        shape = [1, c] + [1] * (input.dim() - 2)
        out = (input - mean.reshape(shape)) / (var.reshape(shape) + self.eps).sqrt()
        if self.weight is not None:
            out = out * self.weight.reshape(shape) + self.bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
                m = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
                nn_ = float(n)
                self.running_mean.mul_(1 - m).add_(mean.detach() * m)
                self.running_var.mul_(1 - m).add_(var.detach() * (m * nn_ / max(nn_ - 1, 1)))
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Same as torch's: every BatchNorm*d in ``module`` replaced by a SyncBatchNorm with its parameters and
        running statistics (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)  # fmt: skip
            with no_grad():
                if module.affine:
                    out.weight.copy_(module.weight)
                    out.bias.copy_(module.bias)
                    out.weight.requires_grad_(module.weight.requires_grad)
                    out.bias.requires_grad_(module.bias.requires_grad)
                if module.track_running_stats:
                    out.running_mean.copy_(module.running_mean)
                    out.running_var.copy_(module.running_var)
                    out.num_batches_tracked.copy_(module.num_batches_tracked)
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
