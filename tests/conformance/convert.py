"""Torch objects to pyframe ones through NumPy, results back to NumPy, and how outcomes are named.

Each entry of the harness ends in one category: `pass`, `missing` (pyframe has no such name, dtype or
argument form), `wrong` (values, shape or dtype differ), `error` (pyframe raises where torch does not),
`grad` (float64 gradients differ or their backward raises), `error-input-accepted` (an `error_inputs`
case that torch rejects runs in pyframe), `out-of-scope` (complex, quantized or CUDA-only: see `SCOPE`).
"""

from __future__ import annotations

import types

import numpy as np
import torch

import pyframe

# tiny samples: torch's thread pool only waits on a shared machine (10-40 ms an op under load)
torch.set_num_threads(1)

CATEGORIES = ("pass", "missing", "wrong", "error", "grad", "error-input-accepted", "out-of-scope")

# the reasons an entry is out of scope, by the word its reason starts with
SCOPE = {
    "complex": "pyframe has no complex dtypes (torch's samples or results are complex)",
    "quantized": "pyframe has no quantized tensors",
    "cuda-only": "torch runs it on CUDA only (no CPU dtypes, or a jiterator kernel)",
    "internal": "a private aten operator or underscored name, not torch's public API",
}


class Outcome(Exception):
    """Ends an entry (or a sample) with ``category`` and a one-line ``reason``."""

    def __init__(self, category: str, reason: str):
        super().__init__(reason)
        self.category = category
        self.reason = reason


class OutOfScope(Outcome):
    def __init__(self, why: str):
        super().__init__("out-of-scope", f"{why}: {SCOPE[why]}")


def one_line(exc: BaseException, limit: int = 160) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_missing(exc: BaseException) -> bool:
    """An AttributeError for a name pyframe lacks (a module, Tensor or class attribute)."""
    if isinstance(exc, Outcome):
        return exc.category == "missing"
    if isinstance(exc, AttributeError):
        text = str(exc)
        return "pyframe" in text or "'Tensor'" in text or "has no attribute" in text and "torch" not in text
    return False


def failure(exc: BaseException) -> Outcome:
    """An exception raised by pyframe (or by converting for it), as the entry's outcome."""
    if isinstance(exc, Outcome):
        return exc
    if is_missing(exc):
        return Outcome("missing", one_line(exc))
    return Outcome("error", one_line(exc))


# ---- torch names -> pyframe names ----


class _Mirror:
    """Stands for a torch module pyframe does not have: any attribute of it is missing."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise Outcome("missing", f"pyframe{self._name[5:]}.{attr} (no module pyframe{self._name[5:]})")


def _pf_module(torch_name: str):
    import importlib

    try:
        return importlib.import_module("pyframe" + torch_name[5:])
    except ImportError:
        return _Mirror(torch_name)


def _qualified(obj, name: str):
    got = pyframe
    for part in name.split("."):
        got = getattr(got, part, None)
        if got is None:
            where = name.rsplit(".", 1)[0] if "." in name else ""
            raise Outcome("missing", f"pyframe.{name}" + (f" (pyframe.{where})" if where else ""))
    return got


def _torch_path(fn) -> str | None:
    """'nn.functional.relu' for torch.nn.functional.relu; None when ``fn`` is not a public torch callable."""
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    for ns in ("", "nn.functional.", "linalg.", "special.", "fft.", "masked.", "sparse.", "signal.windows."):
        mod = torch
        for part in ns.rstrip(".").split(".") if ns else ():
            mod = getattr(mod, part, None)
        if mod is not None and getattr(mod, name, None) is fn:
            return ns + name
    return None


def _translate(v):
    if (
        isinstance(v, types.ModuleType)
        and v.__name__.startswith("torch")
        and not v.__name__.startswith("torch.testing")
    ):
        return _pf_module(v.__name__)
    if callable(v) and not isinstance(v, type):
        path = _torch_path(v)
        if path is not None:
            return _Lazy(path)
        if isinstance(v, (types.MethodDescriptorType, types.WrapperDescriptorType)) or (
            getattr(v, "__objclass__", None) in (torch._C.TensorBase, torch.Tensor)
        ):
            return _method(v.__name__)
    return v


class _Lazy:
    def __init__(self, path):
        self.path = path

    def __call__(self, *args, **kwargs):
        return _qualified(pyframe, self.path)(*args, **kwargs)


def _method(name):
    """Tensor.name called as torch's method descriptor is: on a tensor only."""

    def call(self, *args, **kwargs):
        if not isinstance(self, pyframe.Tensor):
            raise TypeError(f"descriptor '{name}' applies to Tensors, not {type(self).__name__}")
        if not hasattr(type(self), name):
            raise Outcome("missing", f"Tensor.{name}")
        return getattr(self, name)(*args, **kwargs)

    return call


# ---- torch -> pyframe --------------------------------------------------------------------------------

_DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}
_COMPLEX = {torch.complex32, torch.complex64, torch.complex128}


def pf_dtype(dt: torch.dtype):
    if dt in _COMPLEX:
        raise OutOfScope("complex")
    if dt.is_quantized if hasattr(dt, "is_quantized") else False:
        raise OutOfScope("quantized")
    name = _DTYPE_NAMES.get(dt, str(dt).replace("torch.", ""))
    got = getattr(pyframe, name, None)
    if got is None:
        raise Outcome("missing", f"dtype {name}")
    return got


def to_pf(obj, grad: bool = True, leaves: list | None = None, memo: dict | None = None):
    """``obj`` (a sample's input, args or kwargs) with every torch object replaced by pyframe's.

    Tensors go through NumPy; a floating tensor that requires grad becomes a pyframe leaf that
    does too when ``grad`` (and is appended to ``leaves``). One torch tensor met twice becomes one
    pyframe tensor."""
    if memo is None:
        memo = {}
    if isinstance(obj, torch.Tensor):
        if id(obj) in memo:
            return memo[id(obj)]
        memo[id(obj)] = t = _tensor(obj, grad, leaves)
        return t
    if isinstance(obj, list):
        return [to_pf(o, grad, leaves, memo) for o in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(to_pf(o, grad, leaves, memo) for o in obj)
    if isinstance(obj, dict):
        return {k: to_pf(v, grad, leaves, memo) for k, v in obj.items()}
    return _other(obj)


def _tensor(obj, grad, leaves):
    if obj.is_complex():
        raise OutOfScope("complex")
    if obj.is_quantized:
        raise OutOfScope("quantized")
    if obj.layout != torch.strided:
        return _sparse(obj, grad, leaves)
    dt = pf_dtype(obj.dtype)
    arr = obj.detach()
    arr = arr.to(torch.float32).numpy() if obj.dtype == torch.bfloat16 else arr.numpy()
    t = pyframe.tensor(np.array(arr), dtype=dt)
    if grad and obj.requires_grad:
        t.requires_grad_(True)
        if leaves is not None:
            leaves.append(t)
    return t


def _sparse(obj, grad, leaves):
    """A torch sparse COO or CSR tensor as pyframe's, built from its indices and values."""
    parts = {
        torch.sparse_coo: ("sparse_coo_tensor", "_indices", "_values"),
        torch.sparse_csr: ("sparse_csr_tensor", "crow_indices", "col_indices", "values"),
    }.get(obj.layout)
    make = parts and getattr(pyframe, parts[0], None)
    if make is None:
        raise Outcome("missing", f"layout {obj.layout}")
    args = [_tensor(getattr(obj, name)().detach(), False, None) for name in parts[1:]]
    t = make(*args, tuple(obj.shape))
    if obj.layout == torch.sparse_coo and obj.is_coalesced():
        t = t.coalesce()
    if grad and obj.requires_grad:
        t.requires_grad_(True)
        if leaves is not None:
            leaves.append(t)
    return t


def _other(obj):
    if isinstance(obj, torch.dtype):
        return pf_dtype(obj)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.device):
        return pyframe.device(str(obj))
    if isinstance(obj, torch.memory_format):
        name = str(obj).replace("torch.", "")
        got = getattr(pyframe, name, None)
        if got is None:
            raise Outcome("missing", f"pyframe.{name}")
        return got
    if isinstance(obj, torch.layout):
        got = getattr(pyframe, str(obj).replace("torch.", ""), None)
        if got is None:
            raise Outcome("missing", f"pyframe.{obj}")
        return got
    if isinstance(obj, torch.Generator):
        raise Outcome("missing", "generator= arguments")
    if isinstance(obj, complex):
        raise OutOfScope("complex")
    if type(obj).__name__ == "LinearCrossEntropyOptions":  # a dataclass of plain fields and one dtype
        cls = getattr(pyframe.nn, "LinearCrossEntropyOptions", None)
        if cls is None:
            raise Outcome("missing", "pyframe.nn.LinearCrossEntropyOptions")
        fields = {f: getattr(obj, f) for f in obj.__dataclass_fields__}
        return cls(**{k: pf_dtype(v) if isinstance(v, torch.dtype) else v for k, v in fields.items()})
    if isinstance(obj, torch.nn.Module):
        rebuild = _MODULE_ARGS.get(type(obj).__name__)
        if rebuild is None:
            raise Outcome("error", f"harness: cannot convert a torch {type(obj).__name__} argument")
        return rebuild(obj)
    if callable(obj) and not isinstance(obj, type):
        return _translate(obj)
    return obj


def clone_torch(obj, grad: bool = True, leaves: list | None = None, memo: dict | None = None):
    """A fresh copy of a torch sample's tensors (leaves again), so that in-place calls do not share."""
    if memo is None:
        memo = {}
    if isinstance(obj, torch.Tensor):
        if id(obj) not in memo:
            t = memo[id(obj)] = obj.detach().clone()
            if grad and obj.requires_grad:
                t.requires_grad_(True)
                if leaves is not None:
                    leaves.append(t)
        return memo[id(obj)]
    if isinstance(obj, list):
        return [clone_torch(o, grad, leaves, memo) for o in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(clone_torch(o, grad, leaves, memo) for o in obj)
    if isinstance(obj, dict):
        return {k: clone_torch(v, grad, leaves, memo) for k, v in obj.items()}
    return obj


# ---- results -> NumPy --------------------------------------------------------------------------------


def flat(obj) -> list:
    """The values of a result, in order: tensors, numbers, and the items of tuples and lists."""
    if isinstance(obj, (list, tuple)):
        return [v for o in obj for v in flat(o)]
    return [obj]


def torch_arrays(obj) -> list:
    out = []
    for v in flat(obj):
        if isinstance(v, torch.Tensor):
            if v.is_complex():
                raise OutOfScope("complex")
            if v.layout != torch.strided:
                v = v.to_dense()
            out.append(v.detach())
        else:
            if isinstance(v, complex):
                raise OutOfScope("complex")
            out.append(v)
    return out


def torch_numpy(t: torch.Tensor) -> np.ndarray:
    """A torch tensor's values as a NumPy array (bfloat16, which NumPy lacks, through float32: exact)."""
    return (t.float() if t.dtype == torch.bfloat16 else t).detach().numpy()


def pf_arrays(obj) -> list:
    out = []
    for v in flat(obj):
        if isinstance(v, pyframe.Tensor):
            if v.layout is not pyframe.strided:  # as torch's sparse results above: compared as dense
                v = v.to_dense()
            if v.dtype == pyframe.bfloat16:  # NumPy has none: through float32 (exact)
                out.append(torch.from_numpy(np.array(v.detach().float().numpy())).to(torch.bfloat16))
                continue
            arr = v.detach().numpy()
            out.append(torch.from_numpy(np.array(arr)))
        else:
            out.append(v)
    return out


def compare(pf_out, torch_out, values: bool = True) -> None:
    """Raises Outcome('wrong') unless the two results agree (torch.testing's tolerances by dtype);
    with ``values`` False only structure, shapes and dtypes are compared (random and empty ops)."""
    want = torch_arrays(torch_out)
    try:
        got = pf_arrays(pf_out)
    except Exception as exc:  # a result pyframe cannot show as an array
        raise Outcome("wrong", one_line(exc)) from None
    if len(got) != len(want):
        raise Outcome("wrong", f"{len(got)} results, torch gives {len(want)}")
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        where = f"result {i}: " if len(want) > 1 else ""
        if isinstance(w, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise Outcome("wrong", f"{where}{type(g).__name__}, torch gives a tensor")
            if tuple(g.shape) != tuple(w.shape):
                raise Outcome("wrong", f"{where}shape {tuple(g.shape)}, torch {tuple(w.shape)}")
            wd = w.dtype
            if g.dtype != wd:
                raise Outcome("wrong", f"{where}dtype {g.dtype}, torch {w.dtype}".replace("torch.", ""))
            if values:
                try:
                    torch.testing.assert_close(g, w.to(wd), equal_nan=True)
                except AssertionError as exc:
                    msg = " ".join(str(exc).split("\n")[:3])
                    raise Outcome("wrong", f"{where}{msg}"[:160]) from None
        elif values and isinstance(w, (int, float, bool)):
            gv = g.item() if isinstance(g, torch.Tensor) and g.numel() == 1 else g
            try:
                torch.testing.assert_close(gv, w, equal_nan=True, check_dtype=False)
            except (AssertionError, TypeError, ValueError) as exc:
                raise Outcome("wrong", f"{where}{one_line(exc)}"[:160]) from None


# ---- torch modules given as constructor arguments (TransformerEncoder(layer, n)) -------------------------------
# rebuilt in pyframe from the hyperparameters the torch module keeps; the caller loads the weights afterwards
# through the outer module's state_dict


def _transformer_layer(obj):
    cls = getattr(pyframe.nn, type(obj).__name__, None)
    if cls is None:
        raise Outcome("missing", f"pyframe.nn.{type(obj).__name__}")
    act = obj.activation
    return cls(
        obj.self_attn.embed_dim,
        obj.self_attn.num_heads,
        dim_feedforward=obj.linear1.out_features,
        dropout=obj.dropout.p,
        activation=_translate(act) if not isinstance(act, torch.nn.Module) else _other(act),
        layer_norm_eps=obj.norm1.eps,
        batch_first=obj.self_attn.batch_first,
        norm_first=obj.norm_first,
        bias=obj.linear1.bias is not None,
        dtype=pf_dtype(obj.linear1.weight.dtype),
    )


def _layer_norm(obj):
    return pyframe.nn.LayerNorm(obj.normalized_shape, eps=obj.eps, elementwise_affine=obj.elementwise_affine,
                                bias=obj.bias is not None, dtype=pf_dtype(obj.weight.dtype) if obj.weight is not None
                                else None)  # fmt: skip


def _simple_module(obj):
    cls = getattr(pyframe.nn, type(obj).__name__, None)
    if cls is None:
        raise Outcome("missing", f"pyframe.nn.{type(obj).__name__}")
    return cls()


def _distance(obj):
    if isinstance(obj, torch.nn.PairwiseDistance):
        return pyframe.nn.PairwiseDistance(p=obj.norm, eps=obj.eps, keepdim=obj.keepdim)
    return pyframe.nn.CosineSimilarity(dim=obj.dim, eps=obj.eps)


_MODULE_ARGS = {
    "PairwiseDistance": _distance,
    "CosineSimilarity": _distance,
    "TransformerEncoderLayer": _transformer_layer,
    "TransformerDecoderLayer": _transformer_layer,
    "LayerNorm": _layer_norm,
    "ReLU": _simple_module,
    "GELU": _simple_module,
}
