"""Pruning. Same as torch.nn.utils.prune.

A pruned parameter ``name`` becomes the parameter ``name_orig`` and the buffer ``name_mask``;
a forward pre-hook (the pruning method itself) recomputes the plain attribute
``name = name_orig * name_mask`` before every forward. Everything goes through the module's
public registration and hook paths, so pyframe's global registration and forward-pre hooks
(and plugins) see a pruned module exactly as torch users expect.

Differences: the random methods draw from pyframe's stream, and a bad ``amount`` (or a
registration hook that raises) leaves the module unchanged.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from pyframe import _dtype, _grad_mode
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops.random import rand
from pyframe.tensor import Tensor

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured", "PruningContainer",
    "RandomStructured", "RandomUnstructured", "custom_from_mask", "global_unstructured", "identity", "is_pruned",
    "l1_unstructured", "ln_structured", "random_structured", "random_unstructured", "remove",
]  # fmt: skip


# ---- selection -------------------------------------------------------------------------------


def _extreme(values: Tensor, k: int, largest: bool) -> Tensor:
    """A bool mask of the ``k`` smallest (or largest) entries of ``values``, picked by ``topk``
    as torch's methods do."""
    from pyframe.ops._common import zeros_of
    from pyframe.ops.sorting import topk

    with _grad_mode.no_grad():
        v = values.detach().reshape(-1)
        hits = zeros_of((v._numel,), _dtype.float32)
        if k > 0:
            idx = topk(v, k, largest=largest).indices
            ix.index_add_(hits, 0, idx, ew.add(zeros_of((k,), _dtype.float32), 1.0))
        return ew.gt(hits, 0.0).reshape(values._shape)


# ---- argument checks (torch's wording) -------------------------------------------------------


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def _validate_structured_pruning(t: Tensor) -> None:
    if t.ndim <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
            f"{tuple(t.shape)} with {t.ndim} dims"
        )


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.ndim or dim < -t.ndim:
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _channel_mask(t: Tensor, dim: int, keep: Tensor) -> Tensor:
    """Ones where the index along ``dim`` is kept (``keep`` a bool vector of that length)."""
    shape = [1] * t.ndim
    shape[dim] = t._shape[dim]
    with _grad_mode.no_grad():
        return ew.where(keep.reshape(shape), 1.0, 0.0).to(t.dtype).expand(*t._shape).contiguous()


# ---- methods ---------------------------------------------------------------------------------


class BasePruningMethod(ABC):
    """Same as torch.nn.utils.prune.BasePruningMethod: subclasses set ``PRUNING_TYPE``
    ("unstructured", "structured" with a ``dim``, or "global") and implement ``compute_mask``."""

    _tensor_name: str
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for ``t``, given the mask already applied (``default_mask``)."""

    def apply_mask(self, module) -> Tensor:
        """``name_orig * name_mask`` of ``module``."""
        if getattr(self, "_tensor_name", None) is None:
            raise AttributeError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return ew.mul(mask.to(orig.dtype), orig)

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores: Tensor | None = None, **kwargs):
        """Prunes ``module.name`` (in place) and returns the method (or the container holding it)."""
        old_method = None
        found = 0
        hooks_to_remove = []
        for k, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                hooks_to_remove.append(k)
                found += 1
        if found > 1:
            raise RuntimeError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                               "Use a PruningContainer.")  # fmt: skip
        orig = getattr(module, name)
        if not isinstance(orig, Tensor):
            raise TypeError(f"Parameter '{name}' of module {type(module).__name__} is {type(orig).__name__}, "
                            "not a tensor that can be pruned")  # fmt: skip
        if importance_scores is not None and importance_scores._shape != orig._shape:
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
        method = cls(*args, **kwargs)  # validates its arguments before the module changes
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        scores = importance_scores if importance_scores is not None else orig
        # the mask is computed before anything changes, so a bad amount leaves the module as it was
        try:
            with _grad_mode.no_grad():
                if old_method is None:
                    default_mask = ew.add(ew.mul(orig.detach(), 0.0), 1.0)
                else:
                    default_mask = getattr(module, name + "_mask").detach().clone()
                mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        except Exception:
            if method is old_method:
                method._pruning_methods = method._pruning_methods[:-1]
            raise
        saved_params = dict(module._parameters)
        if old_method is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        try:
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
        except Exception:  # e.g. a global registration hook refused the mask: undo what changed
            if old_method is None:
                module._parameters.clear()
                module._parameters.update(saved_params)
                module._buffers.pop(name + "_mask", None)
                module.__dict__.pop(name, None)
            elif method is old_method:
                method._pruning_methods = method._pruning_methods[:-1]
            raise
        for k in hooks_to_remove:
            del module._forward_pre_hooks[k]
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None):
        """``t`` with the mask this method computes for it applied."""
        scores = importance_scores if importance_scores is not None else t
        if default_mask is None:
            default_mask = ew.add(ew.mul(t.detach(), 0.0), 1.0)
        return ew.mul(t, self.compute_mask(scores, default_mask=default_mask))

    def remove(self, module) -> None:
        """Makes the pruning permanent: ``name`` is a parameter again holding the pruned values,
        and ``name_orig`` / ``name_mask`` are gone."""
        if getattr(self, "_tensor_name", None) is None:
            raise AttributeError(f"Module {module} has to be pruned before pruning can be removed")
        name = self._tensor_name
        weight = self.apply_mask(module)
        if name in module.__dict__:
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        with _grad_mode.no_grad():
            orig.copy_(weight.detach())
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


class PruningContainer(BasePruningMethod):
    """Same as torch.nn.utils.prune.PruningContainer: the sequence of methods applied to one
    tensor; each new one acts only on what the earlier ones left."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if not isinstance(args, Iterable):
            self._tensor_name = args._tensor_name
            self.add_pruning_method(args)
        elif len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Same as torch.nn.utils.prune.PruningContainer.add_pruning_method: adds a method acting on the same parameter
        name (TypeError for a non-pruning method, ValueError for another parameter).
        """
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer. Found '{method._tensor_name}'")  # fmt: skip
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask computed on the entries (or slices) still unpruned."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype) if default_mask.dtype is not t.dtype else default_mask.clone()
        if method.PRUNING_TYPE == "unstructured":
            keep = ew.eq(default_mask, 1)
            sub = method.compute_mask(t[keep], default_mask=default_mask[keep])
            mask[keep] = sub.to(mask.dtype)
            return mask
        if method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` "
                                     "defined.")  # fmt: skip
            dim = method.dim + t.ndim if method.dim < 0 else method.dim
            if not 0 <= dim < t.ndim:
                raise IndexError(f"Index is out of bounds for tensor of size {tuple(t.shape)}")
            others = tuple(d for d in range(t.ndim) if d != dim)
            keep = ew.ne(rd.sum(default_mask, others), 0) if others else ew.ne(default_mask, 0)
            idx = ix.nonzero(keep).reshape(-1)
            sub = method.compute_mask(ix.index_select(t, dim, idx), ix.index_select(default_mask, dim, idx))
            key = [slice(None)] * t.ndim
            key[dim] = idx
            mask[tuple(key)] = sub.to(mask.dtype)
            return mask
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask=mask)
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")


class Identity(BasePruningMethod):
    """Same as torch.nn.utils.prune.Identity: prunes nothing (mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module, name: str):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Drops the ``amount`` entries ranked first by ``_scores`` (largest or smallest first)."""

    PRUNING_TYPE = "unstructured"
    _drop_largest = True

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _scores(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_pruning_amount(self.amount, t._numel)
        k = _compute_nparams_toprune(self.amount, t._numel)
        mask = default_mask.clone()
        if k:
            drop = _extreme(self._scores(t), k, largest=self._drop_largest)
            mask = ew.where(drop.reshape(t._shape), 0.0, mask).to(mask.dtype)
        return mask


class RandomUnstructured(_Unstructured):
    """Same as torch.nn.utils.prune.RandomUnstructured: ``amount`` entries chosen at random."""

    def _scores(self, t: Tensor) -> Tensor:
        return rand(t._numel, dtype=_dtype.float64)

    @classmethod
    def apply(cls, module, name: str, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Same as torch.nn.utils.prune.L1Unstructured: the ``amount`` entries of smallest |value|."""

    _drop_largest = False

    def _scores(self, t: Tensor) -> Tensor:
        return ew.abs(t)

    @classmethod
    def apply(cls, module, name: str, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Drops ``amount`` whole slices along ``dim``: those ``_kept`` leaves out."""

    PRUNING_TYPE = "structured"

    def _kept(self, t: Tensor, dim: int, k: int) -> Tensor:
        """A bool per slice along ``dim``: True for the ``size - k`` slices kept."""
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t._shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        dim = self.dim % t.ndim
        return ew.mul(_channel_mask(t, dim, self._kept(t, dim, k)), default_mask.to(t.dtype))


class RandomStructured(_Structured):
    """Same as torch.nn.utils.prune.RandomStructured: ``amount`` whole slices along ``dim`` at random."""

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _kept(self, t: Tensor, dim: int, k: int) -> Tensor:
        return ew.logical_not(_extreme(rand(t._shape[dim], dtype=_dtype.float64), k, largest=False))

    @classmethod
    def apply(cls, module, name: str, amount, dim: int = -1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Same as torch.nn.utils.prune.LnStructured: the ``amount`` slices along ``dim`` of
    smallest L``n`` norm."""

    def __init__(self, amount, n, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def _kept(self, t: Tensor, dim: int, k: int) -> Tensor:
        norms = rd.norm(t, self.n, tuple(d for d in range(t.ndim) if d != dim))
        return _extreme(norms, t._shape[dim] - k, largest=True)

    @classmethod
    def apply(cls, module, name: str, amount, n, dim: int, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Same as torch.nn.utils.prune.CustomFromMask: a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask._shape != self.mask._shape:
            raise ValueError(f"mask of shape {list(self.mask._shape)} does not match the parameter's shape "
                             f"{list(default_mask._shape)}")  # fmt: skip
        return ew.mul(default_mask, self.mask.to(default_mask.dtype))

    @classmethod
    def apply(cls, module, name: str, mask: Tensor):
        return super().apply(module, name, mask=mask)


# ---- functions -------------------------------------------------------------------------------


def identity(module, name: str):
    """Same as torch.nn.utils.prune.identity: reparametrizes ``name`` with a mask of ones."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Same as torch.nn.utils.prune.random_unstructured."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores: Tensor | None = None):
    """Same as torch.nn.utils.prune.l1_unstructured."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Same as torch.nn.utils.prune.random_structured."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores: Tensor | None = None):
    """Same as torch.nn.utils.prune.ln_structured."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name: str, mask: Tensor):
    """Same as torch.nn.utils.prune.custom_from_mask."""
    CustomFromMask.apply(module, name, mask)
    return module


def _mask_or_ones(module, name: str) -> Tensor:
    mask = getattr(module, name + "_mask", None)
    return mask if mask is not None else ew.add(ew.mul(getattr(module, name).detach(), 0.0), 1.0)


def global_unstructured(parameters, pruning_method, importance_scores: dict | None = None, **kwargs) -> None:
    """Same as torch.nn.utils.prune.global_unstructured: one unstructured method over all the
    ``(module, name)`` pairs at once, then each gets its part of the mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    from pyframe.nn.utils.convert_parameters import parameters_to_vector

    with _grad_mode.no_grad():
        scores = parameters_to_vector(
            [importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters]
        )  # fmt: skip
        default_mask = parameters_to_vector([_mask_or_ones(m, n) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")  # fmt: skip
    container.add_pruning_method(method)
    with _grad_mode.no_grad():
        final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num = param._numel
        custom_from_mask(module, name, mask=final_mask[pointer : pointer + num].reshape(param._shape))
        pointer += num


def remove(module, name: str):
    """Same as torch.nn.utils.prune.remove: makes the pruning of ``name`` permanent."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Same as torch.nn.utils.prune.is_pruned: whether any submodule has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
