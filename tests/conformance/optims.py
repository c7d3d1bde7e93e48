"""optim_db: every OptimizerInfo's class, run in pyframe by the same name, step for step beside torch.

Each configuration of ``optim_inputs_func("cpu")`` builds both optimizers over the same two float64
matrices and takes ``STEPS`` closure steps of one loss (through sparse embedding lookups for an optimizer
that takes only sparse gradients, and both ways for one that also takes them: a configuration torch refuses
sparse gradients under must be refused too); after every step the parameters must agree
(torch.testing's float64 tolerances). Every ``optim_error_inputs_func`` case torch rejects (at
construction or at the step) must raise in pyframe too.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch.testing._internal.common_optimizers import optim_db

import pyframe
import pyframe.optim

from .convert import Outcome, failure, one_line, to_pf

STEPS = 5


def entries() -> list[tuple[str, object]]:
    return [(f"optim.{o.optim_cls.__name__}", o) for o in optim_db]


def _params(lib):
    rng = np.random.default_rng(0)
    w, v = rng.standard_normal((4, 3)), rng.standard_normal((2, 5))
    return [lib.tensor(w, requires_grad=True), lib.tensor(v, requires_grad=True)]


def _loss(lib, params, step, sparse=False):
    w, v = params
    if sparse:  # sparse gradients: rows looked up by embedding (one twice), other rows on other steps
        lookup = lib.nn.functional.embedding
        w = lookup(lib.tensor([[0, 2], [2, 3]] if step % 2 == 0 else [[1, 3]]), w, sparse=True)
        v = lookup(lib.tensor([1, 1] if step % 3 else [0]), v, sparse=True)
    return (w.sin() * (1.0 + 0.1 * step)).sum() + ((v - 0.5) ** 2).sum() * 0.5 + (w * w).sum() * 0.1


def _closure(lib, opt, params, step, sparse=False):
    def closure():
        opt.zero_grad()
        loss = _loss(lib, params, step[0], sparse)
        loss.backward()
        return loss

    return closure


def _config(info, oi, sparse: bool) -> tuple[str, str]:
    tparams, pparams = _params(torch), _params(pyframe)
    topt = info.optim_cls(tparams, **oi.kwargs)
    try:
        popt = getattr(pyframe.optim, info.optim_cls.__name__)(pparams, **to_pf(oi.kwargs, False))
    except Exception as exc:
        raise failure(exc) from None
    tstep, pstep = [0], [0]
    tclosure = _closure(torch, topt, tparams, tstep, sparse)
    pclosure = _closure(pyframe, popt, pparams, pstep, sparse)
    for step in range(STEPS):
        tstep[0] = pstep[0] = step
        try:
            topt.step(tclosure)
        except Exception:
            if not sparse:
                raise
            try:  # torch refuses sparse gradients with this configuration (weight_decay ...): pyframe must too
                popt.step(pclosure)
            except Exception:
                return
            raise Outcome("error-input-accepted", f"{oi.desc}: sparse gradients, which torch refuses") from None
        try:
            popt.step(pclosure)
        except Exception as exc:
            raise failure(exc) from None
        for i, (p, t) in enumerate(zip(pparams, tparams, strict=False)):
            got = torch.from_numpy(np.array(p.detach().numpy()))
            try:
                torch.testing.assert_close(got, t.detach())
            except AssertionError as exc:
                msg = " ".join(str(exc).split("\n")[:3])
                raise Outcome("wrong", f"{oi.desc}: step {step + 1}, param {i}: {msg}"[:180]) from None


def _error_inputs(info) -> str:
    if info.optim_error_inputs_func is None:
        return ""
    try:
        errs = info.optim_error_inputs_func(device="cpu", dtype=torch.float32)
    except Exception:
        return ""
    cls = getattr(pyframe.optim, info.optim_cls.__name__)
    for e in errs:
        oi = e.optimizer_error_input
        try:
            params = to_pf(oi.params, False) if oi.params is not None else _params(pyframe)
            kwargs = to_pf(oi.kwargs, False)
        except Exception:
            continue  # pyframe cannot hold the input (complex, sparse): skip it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                opt = cls(params, **kwargs)
                if e.error_on.name == "STEP_ERROR":
                    for p in opt.param_groups[0]["params"]:
                        p.grad = pyframe.ones_like(p)
                    opt.step()
            except Exception:
                continue
        if issubclass(e.error_type, Warning) and any(issubclass(w.category, e.error_type) for w in caught):
            continue
        return f"accepts {oi.desc or oi.kwargs}: {e.error_regex}"[:160]
    return ""


def run_entry(info) -> tuple[str, str]:
    name = info.optim_cls.__name__
    if getattr(pyframe.optim, name, None) is None:
        return "missing", f"pyframe.optim.{name}"
    for oi in info.optim_inputs_func(device="cpu"):
        if oi.params is not None:
            continue
        # sparse-only optimizers step sparse gradients; SGD and Adagrad, which also take them, both kinds
        for sparse in (
            (True,) if info.only_supports_sparse_grads else (False, True) if info.supports_sparse else (False,)
        ):
            try:
                _config(info, oi, sparse)
            except Outcome as o:
                o.reason = ("sparse gradients: " if sparse else "") + o.reason
                return o.category, f"{oi.desc}: {o.reason}" if not o.reason.startswith(oi.desc) else o.reason
    accepted = _error_inputs(info)
    if accepted:
        return "error-input-accepted", accepted
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
            results[eid] = ("torch.optim", cat, reason)
    return results
