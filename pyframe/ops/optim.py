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
}

_new, _cast = ffi.new, ffi.cast


def fused_step(kind: str, params: list, grads: list, states: list, own: list, scalars: tuple = ()) -> None:
    """One step of optimizer ``kind`` (a key of ``_KINDS``) over a group, given by columns:
    ``params`` and ``grads`` contiguous, float32 or float64; ``states`` the kernel's state tensors
    in its order, a list per slot (None where a parameter has none), contiguous and of the
    parameter's dtype. The kernel's numbers (listed in ``optim.c``) are the group's ``scalars``
    followed by the parameter's own, ``own[i]``: a tuple (SGD's first-step flag, every number of
    an adaptive method), or Adam's 0-d float32 step count, which the kernel increments (as
    torch's ``step += 1``) and reads as the last number. In place; the version of every tensor
    written moves."""
    code = _KINDS[kind]
    slots = [[NULL] * len(params) for _ in range(3)]  # the kernel's three state pointers per parameter
    for k, column in enumerate(states):
        for i, s in enumerate(column):
            if s is not None:
                s._bump()
                slots[k][i] = s._ptr
    for t in params:
        t._bump()
    if own and isinstance(own[0], Tensor):  # step counts: one call per dtype increments them in C
        _steps(code, params, grads, slots, own, scalars)
        return
    hp, last = None, None
    for i, t in enumerate(params):  # a C call costs less than gathering pointer arrays for one
        if own[i] != last:
            last = own[i]
            hp = _new("double[]", (*scalars, *last))
        check(lib.pf_optim_step(code, t.dtype.code, t._numel, t._ptr, grads[i]._ptr, slots[0][i], slots[1][i],
                                slots[2][i], hp, len(hp)))  # fmt: skip


def _steps(code: int, params: list, grads: list, slots: list, steps: list, scalars: tuple) -> None:
    """``pf_optim_steps`` over each dtype's parameters, with their step counts."""
    for s in steps:
        s._bump()
    by_dtype: dict[int, list] = {}
    for i, t in enumerate(params):
        by_dtype.setdefault(t.dtype.code, []).append(i)
    hp = _new("double[]", (*scalars, 0.0))  # the last number, the step, is each parameter's own
    columns = ([t._ptr for t in params], [g._ptr for g in grads], *slots)
    for dtype, rows in by_dtype.items():
        ptrs = [_new("void *[]", [column[i] for i in rows]) for column in columns]
        numels = _new("int64_t[]", [params[i]._numel for i in rows])
        counts = _new("float *[]", [_cast("float *", steps[i]._ptr) for i in rows])
        check(lib.pf_optim_steps(code, dtype, len(rows), *ptrs, numels, counts, hp, len(hp)))
