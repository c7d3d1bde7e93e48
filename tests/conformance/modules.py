"""module_db: every ModuleInfo's class, built in pyframe by the same name from the same arguments.

For the first ``INPUTS`` module inputs in float32 and float64: torch's module is built (seeded), its
state is copied into pyframe's through NumPy (``load_state_dict``), both run the same forward input
(in training mode, and in eval mode too where the two differ), and the outputs must agree; in float64
the gradients of the inputs and parameters for one seeded cotangent must too.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch.testing._internal.common_modules import module_db

import pyframe
import pyframe.nn

from .convert import Outcome, OutOfScope, clone_torch, compare, failure, flat, one_line, to_pf, torch_numpy

INPUTS = 2


def entries() -> list[tuple[str, object]]:
    return [(f"nn.{m.module_cls.__name__}", m) for m in module_db]


def _inputs(info, dtype):
    kw = dict(device="cpu", dtype=dtype, requires_grad=dtype == torch.float64, training=True)
    return list(info.module_inputs_func(info, **kw))[:INPUTS]


def _build(info, pf_cls, mi, dtype):
    cargs, ckw = mi.constructor_input.args, mi.constructor_input.kwargs
    torch.manual_seed(0)
    tm = info.module_cls(*cargs, **ckw).to(dtype)
    try:
        pm = pf_cls(*to_pf(cargs, False), **to_pf(ckw, False)).to(to_pf(dtype))
    except Exception as exc:
        raise failure(exc) from None
    return tm, pm


def _load(tm, pm):
    state = {k: to_pf(v, False) for k, v in tm.state_dict().items()}
    try:
        pm.load_state_dict(state)
    except Exception as exc:
        raise Outcome("wrong", "state_dict: " + one_line(exc)) from None


def _forward(tm, pm, fi, grad):
    tleaves, pleaves = [], []
    targs, tkw = clone_torch((fi.args, fi.kwargs), grad, tleaves)
    tout = tm(*targs, **tkw)
    pargs, pkw = to_pf((fi.args, fi.kwargs), grad, pleaves)
    try:
        pout = pm(*pargs, **pkw)
    except Exception as exc:
        raise failure(exc) from None
    return tout, pout, tleaves, pleaves


def _grads(tm, pm, tout, pout, tleaves, pleaves, rng):
    touts = [o for o in flat(tout) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not touts:
        return
    tparams = dict(tm.named_parameters())
    pparams = dict(pm.named_parameters())
    if sorted(tparams) != sorted(pparams):
        raise Outcome("wrong", f"parameters {sorted(pparams)}, torch {sorted(tparams)}")
    names = sorted(tparams)
    cots = [torch.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in touts]
    twrt = tleaves + [tparams[n] for n in names]
    tg = torch.autograd.grad(touts, twrt, cots, allow_unused=True)
    pouts = [o for o in flat(pout) if isinstance(o, pyframe.Tensor) and o.requires_grad]
    if len(pouts) != len(touts):
        raise Outcome("grad", f"{len(pouts)} differentiable results, torch has {len(touts)}")
    pwrt = pleaves + [pparams[n] for n in names]
    try:
        pcots = [pyframe.tensor(torch_numpy(c), dtype=o.dtype) for c, o in zip(cots, pouts, strict=False)]
        pg = pyframe.autograd.grad(pouts, pwrt, pcots, allow_unused=True)
    except Exception as exc:
        raise Outcome("grad", "backward: " + one_line(exc)) from None
    labels = [f"input {i}" for i in range(len(tleaves))] + names
    for label, p, t, w in zip(labels, pg, tg, twrt, strict=False):
        t = torch.zeros_like(w) if t is None else t
        p = torch.zeros_like(w) if p is None else torch.from_numpy(np.array(p.detach().numpy()))
        try:
            torch.testing.assert_close(p, t, equal_nan=True, check_dtype=False)
        except AssertionError as exc:
            raise Outcome("grad", f"{label}: " + " ".join(str(exc).split("\n")[:3])[:140]) from None


def _random(tm, fi) -> bool:
    try:
        a = tm(*clone_torch(fi.args, False), **clone_torch(fi.kwargs, False))
        b = tm(*clone_torch(fi.args, False), **clone_torch(fi.kwargs, False))
        return not all(
            torch.equal(x, y)
            for x, y in zip(flat(a), flat(b), strict=False)
            if isinstance(x, torch.Tensor) and not x.is_complex()
        )
    except Exception:
        return False


def run_entry(info) -> tuple[str, str]:
    name = info.module_cls.__name__
    pf_cls = getattr(pyframe.nn, name, None)
    if pf_cls is None:
        return "missing", f"pyframe.nn.{name}"
    rng = np.random.default_rng(0)
    compared = 0
    scope = None
    for dtype in (torch.float32, torch.float64):
        if dtype not in info.dtypes:
            continue
        for mi in _inputs(info, dtype):
            if mi.forward_input is None:
                continue
            try:
                tm, pm = _build(info, pf_cls, mi, dtype)
                modes = (True, False) if info.train_and_eval_differ else (True,)
                for training in modes:
                    tm.train(training)
                    pm.train(training)
                    if info.is_lazy:  # materialise both, then copy
                        _forward(tm, pm, mi.forward_input, False)
                    _load(tm, pm)
                    random = _random(tm, mi.forward_input)
                    _load(tm, pm)
                    grad = dtype == torch.float64 and not random
                    tout, pout, tl, pl = _forward(tm, pm, mi.forward_input, grad)
                    try:
                        compare(pout, tout, values=not random)
                    except Outcome as o:
                        if isinstance(o, OutOfScope):
                            raise
                        raise Outcome(o.category, f"{mi.desc or 'input'} ({'train' if training else 'eval'}, "
                                      f"{dtype}): {o.reason}".replace("torch.", "")) from None  # fmt: skip
                    if grad:
                        _grads(tm, pm, tout, pout, tl, pl, rng)
                    compared += 1
            except OutOfScope as o:
                scope = o
            except Outcome as o:
                return o.category, o.reason
    if compared == 0 and scope is not None:
        return scope.category, scope.reason
    return "pass", ""


def run(select=None) -> dict[str, tuple[str, str, str]]:
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eid, info in entries():
            if select is not None and not select(eid):
                continue
            try:
                cat, reason = run_entry(info)
            except Exception as exc:
                cat, reason = "error", "harness: " + one_line(exc)
            results[eid] = ("torch.nn (modules)", cat, reason)
    return results
