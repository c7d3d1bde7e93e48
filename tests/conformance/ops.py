"""op_db: every OpInfo's function, method and in-place variants, called in pyframe by the same name.

For each entry, ``SAMPLES`` samples (spread over the first ``POOL``) in float32 and float64 (or the first
dtype torch lists when the op takes neither) are converted through NumPy; the pyframe result must match torch's on the
same sample, and where torch supports autograd the float64 gradients for one seeded cotangent must
too (function variant). A sample torch itself rejects must be rejected by pyframe too. The function
entry also requires every ``error_inputs`` case to raise.
"""

from __future__ import annotations

import functools
import itertools
import types
import warnings

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import pyframe

from .convert import (
    Outcome,
    OutOfScope,
    _method,
    _pf_module,
    _qualified,
    _torch_path,
    _translate,
    clone_torch,
    compare,
    failure,
    flat,
    one_line,
    pf_arrays,
    to_pf,
    torch_arrays,
    torch_numpy,
)

_REJECTED = object()
POOL = 24  # samples generated per dtype, of which SAMPLES are run
SAMPLES = 3  # per dtype and entry: the first, the last and one between of the POOL
ERROR_INPUTS = 8
_FLOAT = (torch.float32, torch.float64)
_OTHER = (torch.int64, torch.int32, torch.bool, torch.uint8, torch.int16, torch.int8, torch.float16)
_EMPTY = {"empty", "empty_like", "new_empty", "empty_strided", "empty_permuted", "new_empty_strided"}
_RANDOM_WORDS = (
    "rand",
    "normal",
    "bernoulli",
    "multinomial",
    "uniform",
    "dropout",
    "rrelu",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "random_",
    "poisson",
)
_NAMESPACES = ("nn.functional", "linalg", "special", "fft", "masked", "sparse", "signal.windows", "nn")


def namespace(name: str) -> str:
    for ns in _NAMESPACES:
        if name.startswith(ns + "."):
            return "torch." + ns
    return "torch"


def entries() -> list[tuple[str, object, str]]:
    """(entry id, OpInfo, variant) in op_db's order; ids are `name[.variant]:function|method|inplace`."""
    out = []
    for op in op_db:
        base = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        for kind, fn in (("function", op.op), ("method", op.method_variant), ("inplace", op.inplace_variant)):
            if fn is not None:
                out.append((f"{base}:{kind}", op, kind))
    return out


# ---- the pyframe callable of the same name --------------------------------------------------------------


_GLOBALS: dict[int, dict] = {}


def _rebound(fn):
    """A Python function of torch's test suite (a lambda, a wrapper) with its module's torch names bound
    to pyframe's: `torch` to `pyframe`, `F` to `pyframe.nn.functional`, ..."""
    key = id(fn.__globals__)
    if key not in _GLOBALS:
        g = dict(fn.__globals__)
        for k, v in fn.__globals__.items():
            if isinstance(v, types.ModuleType) and (v.__name__ == "torch" or v.__name__.startswith("torch.")):
                if v.__name__.startswith("torch.testing"):
                    continue
                g[k] = _pf_module(v.__name__)
        _GLOBALS[key] = g
    closure = None
    if fn.__closure__:
        cells = []
        for c in fn.__closure__:
            try:
                v = c.cell_contents
            except ValueError:
                v = None
            cells.append(types.CellType(_translate(v)))
        closure = tuple(cells)
    new = types.FunctionType(fn.__code__, _GLOBALS[key], fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _by_name(op, fn) -> str | None:
    """The OpInfo's own name when torch has ``fn`` under it (torch.linalg.det's __name__ is linalg_det)."""
    got = torch
    for part in op.name.split("."):
        got = getattr(got, part, None)
    return op.name if got is fn and fn is not None else None


def pf_callable(op, kind: str):
    """The pyframe callable for ``op``'s variant ``kind``; raises Outcome('missing') when it has none."""
    fn = {"function": op.op, "method": op.method_variant, "inplace": op.inplace_variant}[kind]
    if isinstance(fn, functools.partial):
        inner = _translate(fn.func)
        if inner is fn.func:
            raise Outcome("missing", f"no pyframe name for {fn.func!r}"[:120])
        return functools.partial(inner, *fn.args, **fn.keywords)
    if kind != "function":
        name = getattr(fn, "__name__", None)
        if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
            return _rebound(fn)
        if not hasattr(pyframe.Tensor, name):
            raise Outcome("missing", f"Tensor.{name}")
        return _method(name)
    path = _torch_path(fn) or _by_name(op, fn)
    if path is not None:
        return _qualified(pyframe, path)
    if isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("torch.testing"):
        return _rebound(fn)
    if getattr(fn, "__qualname__", "").startswith(("Tensor.", "TensorBase.")):
        if not hasattr(pyframe.Tensor, fn.__name__):
            raise Outcome("missing", f"Tensor.{fn.__name__}")
        return _method(fn.__name__)
    if isinstance(fn, types.FunctionType) and (fn.__module__ or "").startswith("torch"):
        return _qualified(pyframe, fn.__module__[6:] + "." + fn.__name__ if fn.__module__ != "torch" else fn.__name__)
    t = _translate(fn)
    if t is fn:
        raise Outcome("missing", f"no pyframe name for {fn!r}"[:120])
    return t


# ---- one entry ----------------------------------------------------------------------------------------------


def _dtypes(op):
    supported = op.supported_dtypes("cpu")
    if not supported:
        raise OutOfScope("cuda-only")
    got = [d for d in _FLOAT if d in supported]
    if not got:
        got = [d for d in _OTHER if d in supported][:1]
    if not got:
        raise OutOfScope("complex")
    return got


def _call(fn, sample):
    return fn(sample.input, *sample.args, **sample.kwargs)


def _torch_fn(op, kind):
    return {"function": op.op, "method": op.method_variant, "inplace": op.inplace_variant}[kind]


def _equal(x, y) -> bool:
    return torch.equal(x, y) or (x.is_floating_point() and torch.allclose(x, y, equal_nan=True))


def _same(a, b) -> bool:
    try:
        for x, y in zip(flat(a), flat(b), strict=False):
            if isinstance(x, torch.Tensor) and not _equal(x, y):
                return False
        return True
    except Exception:
        return False


def _grad_check(op, kind, sample, pf_fn, rng) -> None:
    tleaves: list = []
    tin, targs, tkw = clone_torch((sample.input, sample.args, sample.kwargs), True, tleaves)
    if not tleaves:
        return
    try:
        tout = _torch_fn(op, kind)(tin, *targs, **tkw)
        if sample.output_process_fn_grad is not None:
            tout = sample.output_process_fn_grad(tout)
        touts = [o for o in flat(tout) if isinstance(o, torch.Tensor) and o.requires_grad]
        if not touts:
            return
        cots = [torch.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype) for o in touts]
        tgrads = torch.autograd.grad(touts, tleaves, cots, allow_unused=True)
    except Exception:
        return  # torch cannot differentiate this sample: nothing to compare
    pleaves: list = []
    try:
        pin, pargs, pkw = to_pf((sample.input, sample.args, sample.kwargs), True, pleaves)
        pout = pf_fn(pin, *pargs, **pkw)
        if sample.output_process_fn_grad is not None:
            pout = sample.output_process_fn_grad(pout)
    except Exception as exc:
        raise failure(exc) from None
    pouts = [o for o in flat(pout) if isinstance(o, pyframe.Tensor) and o.requires_grad]
    if len(pouts) != len(touts):
        raise Outcome("grad", f"{len(pouts)} differentiable results, torch has {len(touts)}")
    try:
        pcots = [pyframe.tensor(torch_numpy(c), dtype=o.dtype) for c, o in zip(cots, pouts, strict=False)]
        pgrads = pyframe.autograd.grad(pouts, pleaves, pcots, allow_unused=True)
    except Exception as exc:
        raise Outcome("grad", "backward: " + one_line(exc)) from None
    fd = None
    for i, (pg, tg, leaf) in enumerate(zip(pgrads, tgrads, tleaves, strict=False)):
        if leaf.layout != torch.strided:  # a sparse input's gradient, at its stored entries (torch's masked sense)
            mask = _pattern(leaf)
            tg = torch.zeros(leaf.shape, dtype=leaf.dtype) if tg is None else tg.detach().to_dense() * mask
            if pg is not None:
                pg = torch.from_numpy(np.array(pg.to_dense().detach().numpy())) * mask
        tg = torch.zeros_like(leaf) if tg is None else tg
        pg = torch.zeros_like(tg) if pg is None else torch.from_numpy(np.array(pg.detach().numpy()))
        try:
            torch.testing.assert_close(pg, tg, equal_nan=True, check_dtype=False)
        except AssertionError as exc:
            if fd is None and kind != "inplace":
                fd = _finite_differences(_torch_fn(op, kind), (tin, targs, tkw), sample, tleaves, cots)
            if fd is not None and _close(pg, fd[i]) and not _close(tg, fd[i]):
                continue  # torch's own gradient disagrees with finite differences of its forward; ours agrees
            raise Outcome("grad", f"input {i}: " + " ".join(str(exc).split("\n")[:3])[:140]) from None


def _pattern(t: torch.Tensor) -> torch.Tensor:
    """Where a sparse COO or CSR tensor stores entries, as a dense bool mask."""
    if t.layout == torch.sparse_csr:
        ones = torch.sparse_csr_tensor(t.crow_indices(), t.col_indices(), torch.ones_like(t.values()), t.shape)
    else:
        ones = torch.sparse_coo_tensor(t._indices(), torch.ones_like(t._values()), t.shape)
    return ones.detach().to_dense() != 0


def _close(a, b) -> bool:
    return torch.allclose(a.double(), b, rtol=1e-5, atol=1e-6, equal_nan=True)


FD_LIMIT = 512  # leaf elements up to which a disputed gradient is checked by finite differences


def _finite_differences(tfn, call, sample, leaves, cots) -> list | None:
    """The float64 vector-Jacobian product of torch's forward with the cotangents ``cots``, by central differences
    (None for samples with more than ``FD_LIMIT`` leaf elements, or when the forward fails)."""
    if sum(leaf.numel() for leaf in leaves) > FD_LIMIT or any(c.dtype != torch.float64 for c in cots):
        return None
    tin, targs, tkw = call

    def value() -> float:
        out = tfn(tin, *targs, **tkw)
        if sample.output_process_fn_grad is not None:
            out = sample.output_process_fn_grad(out)
        outs = [o for o in flat(out) if isinstance(o, torch.Tensor) and o.requires_grad]
        return sum((o.detach() * c).sum().item() for o, c in zip(outs, cots, strict=True))

    eps, grads = 1e-6, []
    try:
        for leaf in leaves:
            g = torch.zeros(leaf.numel(), dtype=torch.float64)
            flat_leaf = leaf.detach().view(-1)
            for k in range(leaf.numel()):
                x = flat_leaf[k].item()
                flat_leaf[k] = x + eps
                up = value()
                flat_leaf[k] = x - eps
                down = value()
                flat_leaf[k] = x
                g[k] = (up - down) / (2 * eps)
            grads.append(g.view(leaf.shape))
    except Exception:
        return None
    return grads


def _samples(op, dtype):
    grad = dtype == torch.float64 and op.supports_autograd
    # the sample function itself: OpInfo.sample_inputs wraps it in a tracker that inspects the stack per sample
    torch.manual_seed(0)
    pool = list(itertools.islice(op.sample_inputs_func(op, "cpu", dtype, grad), POOL))
    if len(pool) <= SAMPLES:
        return pool
    # spread over the first POOL: op_db lists the degenerate cases (empty, 0-d, length 1) first
    return [pool[round(i * (len(pool) - 1) / (SAMPLES - 1))] for i in range(SAMPLES)]


def _scope(op, kind) -> OutOfScope | None:
    fn = _torch_fn(op, kind)
    if "jiterator" in type(fn).__module__ or op.name.startswith("jiterator"):
        return OutOfScope("cuda-only")
    last = op.name.rsplit(".", 1)[-1]
    private = last.startswith("_") and not (last.startswith("__") and last.endswith("__"))
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or private:
        return OutOfScope("internal")
    if _aten_only(op, fn):
        return OutOfScope("internal")
    return None


_PUBLIC = (torch, torch.nn.functional, torch.Tensor, torch.linalg, torch.special, torch.fft)


def _aten_only(op, fn) -> bool:
    """A test wrapper that calls an operator through ``torch.ops.aten`` whose name torch exposes nowhere in its
    public namespaces (``max_pool2d_with_indices_backward``): the op under test is a private aten operator."""
    code = getattr(fn, "__code__", None)
    if code is None or not {"ops", "aten"} <= set(code.co_names):
        return False
    last = op.name.rsplit(".", 1)[-1]
    return last in code.co_names and not any(hasattr(ns, last) for ns in _PUBLIC)


def run_entry(op, kind: str) -> tuple[str, str]:
    """(category, reason) of one entry. Out of scope comes first: it is a property of torch's op."""
    scope = _scope(op, kind)
    if scope is not None:
        return scope.category, scope.reason
    try:
        dtypes = _dtypes(op)
    except Outcome as o:
        return o.category, o.reason
    try:
        pf_fn, missing = pf_callable(op, kind), None
    except Outcome as o:
        pf_fn, missing = None, o
    rng = np.random.default_rng(0)
    compared = 0
    scope = None
    nondeterministic = _random(op)
    for dtype in dtypes:
        for sample in _samples(op, dtype):
            tfn = _torch_fn(op, kind)
            try:
                torch_arrays((sample.input, sample.args, list(sample.kwargs.values())))
                t1 = _call(tfn, _clone_sample(sample))
                torch_arrays(t1)
            except OutOfScope as o:
                scope = o
                continue
            except Exception:
                t1 = _REJECTED
            if missing is not None:
                return missing.category, missing.reason
            try:
                pin, pargs, pkw = to_pf((sample.input, sample.args, sample.kwargs), False)
            except OutOfScope as o:
                scope = o
                continue
            except Outcome as o:
                return o.category, o.reason
            if t1 is _REJECTED:
                # torch rejects this sample: pyframe must too
                try:
                    pf_fn(pin, *pargs, **pkw)
                except Exception:
                    continue
                return "error-input-accepted", f"a {dtype} sample torch rejects ({sample.name or 'unnamed'})"
            random = nondeterministic or not _same(t1, _call(tfn, _clone_sample(sample)))
            try:
                pout = pf_fn(pin, *pargs, **pkw)
            except Exception as exc:
                o = failure(exc)
                return o.category, o.reason
            try:
                compare(pout, t1, values=not random)
            except OutOfScope as o:
                scope = o
                continue
            except Outcome as o:
                if not (o.category == "wrong" and dtype == torch.float32 and _as_accurate(tfn, sample, pout, t1)):
                    return o.category, f"{dtype}: {o.reason}".replace("torch.", "")
            compared += 1
            if dtype == torch.float64 and not random and op.supports_autograd and _grad_kind(op) == kind:
                try:
                    _grad_check(op, kind, sample, pf_fn, rng)
                except Outcome as o:
                    return o.category, o.reason
    if compared == 0:
        if missing is not None and scope is None:
            return missing.category, missing.reason
        if scope is not None:
            return scope.category, scope.reason
        return "pass", "no sample torch accepts"
    if kind == "function" or _grad_kind(op) == kind:
        accepted = _error_inputs(op, pf_fn)
        if accepted:
            return "error-input-accepted", accepted
    return "pass", ""


def _as_accurate(tfn, sample, pout, t1) -> bool:
    """A float32 result that differs from torch's float32 one by more than torch.testing's tolerance may still be
    as right: both are roundings of the exact answer, summed in different orders. It agrees when, for every
    result, its largest distance from torch's float64 result on the same sample is at most twice torch's own
    float32 one's (an accumulation-order difference); a real bug is far further off."""

    def wide(t):
        return t.detach().to(torch.float64) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t

    try:
        t64 = _call(tfn, _clone_sample(sample).transform(wide))
        got, want, exact = pf_arrays(pout), torch_arrays(t1), torch_arrays(t64)
    except Exception:
        return False
    if not len(got) == len(want) == len(exact):
        return False
    for g, w, e in zip(got, want, exact, strict=True):
        if not isinstance(w, torch.Tensor) or w.dtype != torch.float32:
            continue
        if not isinstance(g, torch.Tensor) or g.shape != w.shape or e.shape != w.shape or e.dtype != torch.float64:
            return False
        if g.isnan().ne(e.isnan()).any():
            return False
        ours = (g.double() - e).nan_to_num(nan=0.0).abs().max().item() if g.numel() else 0.0
        theirs = (w.double() - e).nan_to_num(nan=0.0).abs().max().item() if w.numel() else 0.0
        if not ours <= 2 * theirs:
            return False
    return True


def _random(op) -> bool:
    """Random or uninitialised results: only structure, shapes and dtypes are compared."""
    if op.name in _EMPTY or getattr(op, "has_nondeterministic_output", False):
        return True
    if any(w in op.name for w in _RANDOM_WORDS):
        return True
    code = getattr(op.op, "__code__", None)
    return code is not None and "wrapper_set_seed" in code.co_names


def _grad_kind(op) -> str:
    return "function" if op.op is not None else ("method" if op.method_variant is not None else "inplace")


def _clone_sample(sample):
    return sample.transform(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t)


def _kind(a) -> str:
    if isinstance(a, torch.Tensor):
        return f"{str(a.dtype).replace('torch.', '')}{list(a.shape)}"
    return type(a).__name__


def _error_inputs(op, pf_fn) -> str:
    if op.error_inputs_func is None:
        return ""
    try:
        torch.manual_seed(0)
        errs = list(itertools.islice(op.error_inputs_func(op, "cpu"), ERROR_INPUTS))
    except Exception:
        return ""
    for e in errs:
        e = e[0] if isinstance(e, tuple) else e
        s = e.sample_input
        try:  # an error input torch itself accepts (some only raise on other devices) asks nothing
            _call(_torch_fn(op, _grad_kind(op)), s)
            continue
        except Exception:
            pass
        try:
            pin, pargs, pkw = to_pf((s.input, s.args, s.kwargs), False)
        except OutOfScope:
            continue
        except Exception:  # pyframe cannot even hold the input: that rejects it too
            continue
        try:
            pf_fn(pin, *pargs, **pkw)
        except Exception:
            continue
        kinds = ", ".join(_kind(a) for a in (s.input, *s.args, *s.kwargs.values()))
        return f"accepts ({kinds}) that torch rejects" + (f": {e.error_regex}" if e.error_regex else "")[:160]
    return ""


def run(select=None) -> dict[str, tuple[str, str, str]]:
    """{entry id: (namespace, category, reason)} over op_db (or the ids ``select`` keeps)."""
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for eid, op, kind in entries():
            if select is not None and not select(eid):
                continue
            try:
                cat, reason = run_entry(op, kind)
            except Exception as exc:  # the harness itself (sample generation) failed
                cat, reason = "error", "harness: " + one_line(exc)
            results[eid] = (namespace(op.name), cat, reason)
    return results
