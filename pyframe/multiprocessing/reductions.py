"""How tensors cross process boundaries: multiprocessing's pickler sends a tensor's shared-memory name, not its
bytes (torch.multiprocessing.reductions)."""

from __future__ import annotations

import multiprocessing.reduction

from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor, rebuild_shared, shared_copy, shared_handle

__all__ = ["init_reductions", "reduce_tensor"]


def _rebuild_tensor(handle: tuple, requires_grad: bool, parameter: bool) -> Tensor:
    t = rebuild_shared(*handle)
    if parameter:
        return Parameter(t, requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_tensor(t: Tensor):
    """The pickle reduction of ``t`` for another process: its storage moved into shared memory (a shared copy
    when other views hold the storage) and sent by name."""
    if t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    if not t.is_shared():
        try:
            t.share_memory_()
        except RuntimeError:  # views share the storage: send a shared copy (the receiver's writes stay its own),
            # kept alive by this process so that the receiver can still map it when it unpickles
            copy = t.detach()
            copy._storage = shared_copy(t._storage, t.dtype)
            copy._ptr = copy._storage.data + copy._offset * t.dtype.itemsize
            copy._desc = None
            _SENT_COPIES.append(copy._storage)
            return (_rebuild_tensor, (shared_handle(copy), t.requires_grad, isinstance(t, Parameter)))
    return (_rebuild_tensor, (shared_handle(t), t.requires_grad, isinstance(t, Parameter)))


# shared copies of tensors whose storage could not move: they live as long as this process
_SENT_COPIES: list = []


def init_reductions() -> None:
    """Register ``reduce_tensor`` with multiprocessing's pickler for Tensor and Parameter."""
    for cls in (Tensor, Parameter):
        multiprocessing.reduction.ForkingPickler.register(cls, reduce_tensor)
