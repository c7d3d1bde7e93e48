"""How tensors cross process boundaries: multiprocessing's pickler sends a tensor's shared-memory name, not its
bytes (torch.multiprocessing.reductions)."""

from __future__ import annotations

import multiprocessing.reduction

from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor, rebuild_shared, shared_copy, shared_handle

__all__ = ["init_reductions", "reduce_tensor"]


def _rebuild_tensor(fd, handle: tuple, requires_grad: bool, parameter: bool) -> Tensor:
    t = rebuild_shared(fd.detach(), *handle[1:])
    if parameter:
        return Parameter(t, requires_grad)
    t.requires_grad = requires_grad
    return t


def reduce_tensor(t: Tensor):
    """The pickle reduction of ``t`` for another process: its storage moved into shared memory (a shared copy
    when other views hold the storage) and sent as a duplicate of its file descriptor."""
    if t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    requires_grad, parameter = t.requires_grad, isinstance(t, Parameter)
    if not t.is_shared():
        try:
            t.share_memory_()
        except RuntimeError:  # views share the storage: send a shared copy (the receiver's writes stay its own)
            copy = t.detach()
            copy._storage = shared_copy(t._storage, t.dtype)
            copy._ptr = copy._storage.data + copy._offset * t.dtype.itemsize
            copy._desc = None
            t = copy
    handle = shared_handle(t)
    # the descriptor is duplicated now (into the child being spawned, or kept by this process's resource sharer
    # until the receiver takes it), so the memory outlives ``t`` here
    return (_rebuild_tensor, (multiprocessing.reduction.DupFd(handle[0]), handle, requires_grad, parameter))


def init_reductions() -> None:
    """Register ``reduce_tensor`` with multiprocessing's pickler for Tensor and Parameter."""
    for cls in (Tensor, Parameter):
        multiprocessing.reduction.ForkingPickler.register(cls, reduce_tensor)
