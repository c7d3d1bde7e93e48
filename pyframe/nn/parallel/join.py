"""Same as torch.distributed.algorithms.join.Join for DistributedDataParallel: training with uneven inputs.

Inside the context each synchronised forward of a rank that still has data first all-reduces a 1 (how many
ranks still train). A rank whose loop has ended leaves the ``with`` body and, until that count is 0, shadows
every iteration of the others: it sends 0 to the count, takes part in the buffer broadcast, and all-reduces
zeros for every gradient bucket (in index order, through the communication hook if one is registered), so
the others' collectives always have every rank (with ``throw_on_early_termination=True`` it does not: that
count, which every rank takes part in, makes every rank raise ``RuntimeError`` in the iteration where the
first rank ran out of inputs, and the group stays usable). Gradients are divided by the initial world size (or, with
``divide_by_initial_world_size=False``, by the ranks still training). At the end the ranks that joined last
broadcast their parameters (and buffers) to the others, whose optimizers stopped stepping earlier."""

from __future__ import annotations

from pyframe._grad_mode import no_grad

__all__ = ["Join"]


class Join:
    """``with Join([ddp_model]): for batch in my_uneven_batches: ...`` (or ``with ddp_model.join(): ...``)."""

    def __init__(self, joinables: list, enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs) -> None:  # fmt: skip
        if not isinstance(joinables, (list, tuple)) or not joinables:
            raise ValueError("Join needs a non-empty list of joinables (DistributedDataParallel modules)")
        for j in joinables:
            if not hasattr(j, "_notify_join"):  # DistributedDataParallel (imported the other way round)
                raise TypeError(f"Join works with DistributedDataParallel modules (torch's Joinable); got "
                                f"{type(j).__name__}: wrap the model in DistributedDataParallel first")  # fmt: skip
        self._throw = bool(throw_on_early_termination)
        self._joinables = list(joinables)
        self._enable = bool(enable)
        self._divide_initial = bool(kwargs.get("divide_by_initial_world_size", True))

    def __enter__(self) -> Join:
        if self._enable:
            for ddp in self._joinables:
                ddp._joining = True
                ddp._divide_initial = self._divide_initial
                ddp._join_throw = self._throw
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self._enable:
            return False
        try:
            if exc_type is None:
                for ddp in self._joinables:
                    _shadow_until_all_joined(ddp)
        finally:
            for ddp in self._joinables:
                ddp._joining = ddp._join_throw = False
                ddp._divisor = ddp._world
        return False


def _shadow_until_all_joined(ddp) -> None:
    last = True
    while ddp._notify_join(0) > 0:
        last = False
        _shadow_iteration(ddp)
    _sync_final_model(ddp, last)


def _shadow_iteration(ddp) -> None:
    if ddp.broadcast_buffers and ddp._world > 1:
        buffers = list(ddp.module.buffers())
        if buffers:
            ddp._broadcast(buffers, "DistributedDataParallel (buffer broadcast)")
    with no_grad():
        for b in ddp._buckets:
            b.flat.zero_()
            ddp._launch(b)
        for b in ddp._buckets:
            if b.future is not None:
                b.future.wait()
            else:
                b.work.wait()
        if ddp.find_unused_parameters:
            ddp._unused = [(b, s) for b in ddp._buckets for s in range(len(b.params))]
            ddp._globally_used()
    ddp._reset()


def _sync_final_model(ddp, last: bool) -> None:
    """The highest rank among those that joined last broadcasts its parameters (and buffers)."""
    from pyframe._dtype import int32
    from pyframe.ops.creation import tensor

    g = ddp._group
    mine = tensor([g.backend.rank if last else -1], dtype=int32)
    g.backend.allreduce(mine.numpy(), "max", "DistributedDataParallel.join (last joiner)").wait()
    src = int(mine.numpy()[0])
    states = [*ddp.module.parameters(), *(ddp.module.buffers() if ddp.broadcast_buffers else ())]
    works = [g.backend.broadcast(t.detach().numpy(), src, f"DistributedDataParallel.join (final model) "
                                 f"{t.dtype.name}[{t._numel}]", True) for t in states if t._numel]  # fmt: skip
    for w in works:
        w.wait()
    for t in states:
        t._bump()
