"""Same as torch.distributed: process groups over a backend found through plugins, collectives,
point-to-point messages and object collectives.

Backends: the built-in ``"single"`` (a world of one process, no transport) and whatever installed
plugins provide through the ``pyframe_distributed_backends`` hookspec (``pyframe-mpi`` gives ``"mpi"``;
``"gloo"`` runs on it). Every collective is checked across ranks (the same collective, op, dtype, shape
and root on every rank) before data moves, so a mismatch is a clear ``DistBackendError`` on every rank
instead of a hang or garbage. Launch with ``python -m pyframe.distributed.run --nproc-per-node N
script.py`` (torchrun's interface) or ``mpiexec``. See ``docs/distributed.md``.
"""

from __future__ import annotations

from datetime import timedelta  # noqa: F401 - an attribute of this module since its first release (compat table)

from pyframe import _submodules
from pyframe.distributed.backend import Backend, DistBackendError, DistError, DistTimeoutError
from pyframe.distributed.collectives import (
    Future,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    gather,
    monitored_barrier,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from pyframe.distributed.p2p import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    irecv,
    isend,
    recv,
    scatter_object_list,
    send,
)
from pyframe.distributed.process_group import (
    GroupMember,
    ProcessGroup,
    available_backends,
    default_pg_timeout,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    is_torchelastic_launched,
    new_group,
)

__all__ = [
    "ReduceOp", "Backend", "DistError", "DistBackendError", "DistTimeoutError", "Work", "Future", "ProcessGroup",
    "GroupMember", "group", "is_available", "is_initialized", "is_torchelastic_launched", "init_process_group",
    "destroy_process_group", "new_group", "get_rank", "get_world_size", "get_backend", "get_process_group_ranks",
    "get_global_rank", "get_group_rank", "available_backends", "default_pg_timeout", "all_reduce", "broadcast",
    "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter",
    "all_to_all", "all_to_all_single", "barrier", "monitored_barrier", "send", "recv", "isend", "irecv",
    "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list",
    "get_default_backend_for_device",
]  # fmt: skip


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
