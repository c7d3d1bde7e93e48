"""Fused optimizer steps: one C pass updates a parameter and its state (``core_c/src/optim.c``,
``pf_optim_steps``). The optimizers of ``pyframe.optim`` gather a group's parameters, gradients
and state and call ``fused_step`` once per group; this is the only module that calls the kernels."""

from __future__ import annotations

from pyframe._backend import NULL, check, ffi, lib
from pyframe.tensor import Tensor

__all__ = ["fused_step"]

_KINDS = {
    "sgd": lib.PF_OPTIM_SGD,
    "adam": lib.PF_OPTIM_ADAM,
    "adadelta": lib.PF_OPTIM_ADADELTA,
    "adagrad": lib.PF_OPTIM_ADAGRAD,
    "rmsprop": lib.PF_OPTIM_RMSPROP,
    "adamax": lib.PF_OPTIM_ADAMAX,
    "nadam": lib.PF_OPTIM_NADAM,
    "radam": lib.PF_OPTIM_RADAM,
    "asgd": lib.PF_OPTIM_ASGD,
    "rprop": lib.PF_OPTIM_RPROP,
}

_new, _cast = ffi.new, ffi.cast


def fused_step(kind: str, batch: list, scalars: tuple = ()) -> None:
    """One step of optimizer ``kind`` (a key of ``_KINDS``) over ``batch``: per parameter a tuple
    ``(param, grad, states, own)``. ``param`` and ``grad`` are contiguous, float32 or float64;
    ``states`` the kernel's state tensors in its order (None where unused), contiguous and of
    the parameter's dtype. The kernel's numbers (listed in ``optim.c``) are the group's
    ``scalars`` followed by the parameter's ``own``: a tuple (SGD's first-step flag, every number
    of an adaptive method), or Adam's 0-d float32 step count, which the kernel increments (as
    torch's ``step += 1``) and reads as the last number. In place; the version of every tensor
    written moves."""
    code = _KINDS[kind]
    if batch and isinstance(batch[0][3], Tensor):  # step counts: one call per dtype increments them in C
        _steps(code, batch, scalars)
        return
    # one pf_optim_steps call per (dtype, per-parameter numbers): every parameter of a model at once
    # (SGD's first-step flag is the same for all but in odd cases; a group of one is one pf_optim_step)
    groups: dict[tuple, list] = {}
    for t, g, states, own in batch:
        ptrs = [NULL, NULL, NULL]
        for k, s in enumerate(states):
            if s is not None:
                s._bump()
                ptrs[k] = s._ptr
        t._bump()
        key = (t.dtype.code, own)
        rows = groups.get(key)
        if rows is None:
            rows = groups[key] = []
        rows.append((t._ptr, g._ptr, *ptrs, t._numel))
    for (dtype, own), rows in groups.items():
        hp = _new("double[]", (*scalars, *own))
        if len(rows) == 1:  # a C call costs less than gathering pointer arrays for one
            check(lib.pf_optim_step(code, dtype, rows[0][5], *rows[0][:5], hp, len(hp)))
            continue
        cols = list(zip(*rows, strict=True))
        ptrs = [_new("void *[]", column) for column in cols[:5]]
        check(lib.pf_optim_steps(code, dtype, len(rows), *ptrs, _new("int64_t[]", cols[5]), NULL, hp, len(hp)))


def _steps(code: int, batch: list, scalars: tuple) -> None:
    """Adam: ``pf_optim_steps`` over each dtype's parameters, with their step counts."""
    by_dtype: dict[int, tuple] = {}
    for t, g, states, step in batch:
        lists = by_dtype.get(t.dtype.code)
        if lists is None:
            lists = by_dtype[t.dtype.code] = ([], [], [], [], [], [], [])
        m, v, vmax = states  # exp_avg, exp_avg_sq, and max_exp_avg_sq (None without amsgrad)
        lists[0].append(t._ptr)
        lists[1].append(g._ptr)
        lists[2].append(m._ptr)
        lists[3].append(v._ptr)
        lists[4].append(NULL if vmax is None else vmax._ptr)
        lists[5].append(t._numel)
        lists[6].append(_cast("float *", step._ptr))
        t._bump()
        m._bump()
        v._bump()
        step._bump()
        if vmax is not None:
            vmax._bump()
    hp = _new("double[]", (*scalars, 0.0))  # the last number, the step, is each parameter's own
    for dtype, (ps, gs, s0, s1, s2, numels, steps) in by_dtype.items():
        ptrs = [_new("void *[]", column) for column in (ps, gs, s0, s1, s2)]
        check(lib.pf_optim_steps(code, dtype, len(ps), *ptrs, _new("int64_t[]", numels), _new("float *[]", steps), hp,
                                 len(hp)))  # fmt: skip
