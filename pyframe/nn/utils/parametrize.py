"""Parametrizations of parameters and buffers. Same as torch.nn.utils.parametrize, see docs/parametrize.md.

``register_parametrization(module, "weight", P)`` moves the tensor to
``module.parametrizations.weight.original`` (the same Parameter object, so an optimizer built before keeps
working) and makes ``module.weight`` return ``P(original)``, computed on every access (or once per
``cached()`` block and version of the originals).

How it differs from PyTorch (see ``docs/parametrize.md``):

- The class of a parametrized module is swapped to one ``Parametrized<Class>`` subclass per original class
  (not one per instance); it resolves parametrized names in ``__getattr__``/``__setattr__`` and pickles as
  the original class, so ``pickle``, ``copy.deepcopy`` and ``state_dict`` all work.
- Parametrizations are evaluated through ``forward`` (never ``__call__``): global hooks and plugins see only
  the user's modules. Registration hooks do see ``parametrizations``, the ``ParametrizationList`` and
  ``original``.
- ``cached()`` keys each value on the versions of its originals: an in-place change (an optimizer step)
  inside the block gives a fresh value.
- An ``AttributeError`` raised inside a parametrization reaches the caller as itself, with a note naming the
  parametrization, instead of being mistaken for a missing attribute of the module.
- ``load_unparametrized_state_dict(model, state_dict)`` loads a checkpoint saved before the
  parametrization (plain ``weight`` keys) through ``right_inverse``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyframe import _grad_mode
from pyframe.nn.modules.container import ModuleDict, ModuleList
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor
from pyframe.tensor import set_data as _set_data

__all__ = [
    "register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
    "type_before_parametrizations", "transfer_parametrizations_and_params", "ParametrizationList",
    "load_unparametrized_state_dict",
]  # fmt: skip


# ---- cache -----------------------------------------------------------------------------------------------

# the cache of the innermost active ``cached()`` block: id(ParametrizationList) -> (plist, versions, value)
_cache: contextvars.ContextVar[dict | None] = contextvars.ContextVar("pyframe_parametrize_cache", default=None)


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside the block each parametrized tensor is computed once and reused, as torch's ``cached()``;
    unlike torch, a value is recomputed when one of its originals changed in place (the storage version
    counter moved, e.g. an optimizer step) or was rebound. Nested blocks share the outermost cache."""
    outer = _cache.get()
    token = _cache.set(outer if outer is not None else {})
    try:
        yield
    finally:
        _cache.reset(token)


def _versions(plist: ParametrizationList) -> tuple:
    return tuple((t.data_ptr(), t._version) for t in plist._originals())


def _evaluate(plist: ParametrizationList, name: str) -> Tensor:
    cache = _cache.get()
    if cache is None:
        return _compute(plist, name)
    key = id(plist)
    versions = _versions(plist)
    hit = cache.get(key)
    if hit is not None and hit[1] == versions:
        return hit[2]
    value = _compute(plist, name)
    cache[key] = (plist, versions, value)  # holding plist keeps its id from being reused
    return value


def _compute(plist: ParametrizationList, name: str) -> Tensor:
    try:
        return plist.forward()
    except AttributeError as e:
        # raised from Module.__getattr__, so Python passes it on as it is (torch's version is caught by
        # the attribute fallback and turned into "no attribute 'weight'")
        e.add_note(f"raised inside the parametrization of '{name}' ({', '.join(type(p).__name__ for p in plist)})")
        raise


# ---- the swapped class -------------------------------------------------------------------------------------

_PARAMETRIZED_CLASSES: dict[type, type] = {}


def _new_parametrized(cls: type) -> Module:
    """Unpickling/deepcopy constructor: an empty instance of the parametrized subclass of ``cls``."""
    return object.__new__(_parametrized_class(cls))


def _parametrized_class(cls: type) -> type:
    """One ``Parametrized<cls>`` subclass per original class, created on first use."""
    new = _PARAMETRIZED_CLASSES.get(cls)
    if new is not None:
        return new
    base_getattr = cls.__getattr__
    base_setattr = cls.__setattr__

    def __getattr__(self, name: str) -> Any:
        plists = self.__dict__["_modules"].get("parametrizations")
        if plists is not None:
            plist = plists._modules.get(name)
            if plist is not None:
                return _evaluate(plist, name)
        return base_getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        mods = self.__dict__.get("_modules")
        plists = mods.get("parametrizations") if mods is not None else None
        if plists is not None and name in plists._modules:
            plists._modules[name].right_inverse(value)
            return
        base_setattr(self, name, value)

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_new_parametrized, (cls,), self.__getstate__())

    def __dir__(self) -> list:
        plists = self.__dict__["_modules"].get("parametrizations")
        return sorted({*cls.__dir__(self), *(plists._modules if plists is not None else ())})

    new = type(
        f"Parametrized{cls.__name__}",
        (cls,),
        {
            "__getattr__": __getattr__,
            "__setattr__": __setattr__,
            "__reduce_ex__": __reduce_ex__,
            "__dir__": __dir__,
            "__module__": cls.__module__,
            "_pyframe_unparametrized_class": cls,
        },
    )
    _PARAMETRIZED_CLASSES[cls] = new
    return new


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` before any parametrization was registered (``type(module)`` otherwise)."""
    cls = type(module)
    return cls.__dict__.get("_pyframe_unparametrized_class", cls)


# ---- ParametrizationList -------------------------------------------------------------------------------------


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """Puts ``src``'s values into ``dest`` keeping ``dest``'s identity (optimizers keep working)."""
    with _grad_mode.no_grad():
        if dest.shape == src.shape and dest.dtype == src.dtype:
            if src is not dest:
                dest.copy_(src)
        else:
            _set_data(dest, src.detach().clone())


def _register_parameter_or_buffer(module: Module, name: str, x: Tensor, persistent: bool = True) -> None:
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x, persistent=persistent)


def _is_tensor_sequence(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes, Tensor))


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, and its original(s): ``original`` (a tensor) or
    ``original0``, ``original1``, ... when the first parametrization's ``right_inverse`` returns a
    sequence. Same as torch's. ``forward()`` evaluates the chain (calling each ``forward`` directly)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False,
                 persistent: bool = True) -> None:  # fmt: skip
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with _grad_mode.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):
                        new = module.right_inverse(new)
        if not isinstance(new, Tensor) and not _is_tensor_sequence(new):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original, persistent)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}."
                    )
                originali = originali.detach()
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali, persistent)
        if not self.unsafe:
            Z = _compute(self, "original")
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {Z.dtype}"
                )
            if Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {Z.shape}"
                )

    def _originals(self) -> list[Tensor]:
        d = {**self._parameters, **self._buffers}
        if self.is_tensor:
            return [d["original"]]
        return [d[f"original{i}"] for i in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Sets the original(s) so that the chain evaluates to ``value`` (``module.weight = value``)."""
        with _grad_mode.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            originals = self._originals()
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != originals[0].dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} while `original` has "
                        f"dtype {originals[0].dtype}"
                    )
                _maybe_set(originals[0], value)
            else:
                if not _is_tensor_sequence(value):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                        f"Got a sequence of length {len(value)}."
                    )
                for i, (orig, tensor) in enumerate(zip(originals, value, strict=True)):
                    if not isinstance(tensor, Tensor):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. Got element {i} "
                                         f"of type {type(tensor).__name__}")  # fmt: skip
                    if orig.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                         f"`original{i}` has dtype {orig.dtype}")  # fmt: skip
                    _maybe_set(orig, tensor)

    def forward(self) -> Tensor:
        """Same as torch's ParametrizationList.forward: the parametrized value, the original tensor(s) passed through
        every
        parametrization in registration order.
        """
        mods = list(self._modules.values())
        originals = self._originals()
        x = mods[0].forward(*originals)
        for m in mods[1:]:
            x = m.forward(x)
        return x


# ---- public functions --------------------------------------------------------------------------------------


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """True if ``module`` has a parametrization (on ``tensor_name`` when given). Same as torch's."""
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    if tensor_name is None:
        return len(plists) > 0
    return tensor_name in plists._modules


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:  # fmt: skip
    """Adds ``parametrization`` to the parameter or buffer ``tensor_name`` of ``module``. Same as torch's.

    ``module.<tensor_name>`` then returns ``parametrization(original)`` (several registrations chain,
    the first registered applied first); the original is ``module.parametrizations.<tensor_name>.original``
    (the same Parameter object, holding ``right_inverse(tensor)`` when the parametrization has one) and is
    where ``.grad`` accumulates. If ``right_inverse`` returns a sequence, the originals are new Parameters
    ``original0``, ``original1``... (add them to your optimizer). Assigning ``module.<tensor_name> = X``
    runs the ``right_inverse`` chain. ``unsafe=True`` skips the dtype/shape consistency checks. Raises
    ValueError if ``module`` has no parameter, buffer or parametrized tensor ``tensor_name``."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"parametrization must be a pyframe.nn.Module, got {type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization.forward(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\nparametrization(module.{tensor_name})"
                    f".dtype: {X.dtype}"
                )
            if X.shape != Y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\nparametrization(module.{tensor_name})"
                    f".shape: {X.shape}"
                )
            if hasattr(parametrization, "right_inverse"):
                try:
                    with _grad_mode.no_grad():
                        Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype or Z.shape != Y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have the same dtype and shape "
                            f"as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}: "
                            f"{Y.dtype} {Y.shape}\nreturned: {Z.dtype} {Z.shape}"
                        )
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    d = module.__dict__
    if tensor_name in d["_parameters"] and d["_parameters"][tensor_name] is not None:
        original, persistent = d["_parameters"][tensor_name], True
    elif tensor_name in d["_buffers"] and d["_buffers"][tensor_name] is not None:
        original = d["_buffers"][tensor_name]
        persistent = tensor_name not in d["_non_persistent_buffers_set"]
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    plist = ParametrizationList([parametrization], original, unsafe=unsafe, persistent=persistent)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        if "_pyframe_unparametrized_class" not in cls.__dict__:
            module.__class__ = _parametrized_class(cls)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Removes the parametrizations on ``tensor_name``. Same as torch's: with ``leave_parametrized`` the
    tensor keeps its current (parametrized) value, in the original Parameter object when there is one
    original; otherwise it gets the original back (an error for several originals)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist._originals()[0]
        if leave_parametrized:
            with _grad_mode.no_grad():
                t = _compute(plist, tensor_name)
            _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of "
                "a sequence of tensors."
            )
        t = _compute(plist, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    persistent = "original" not in plist._non_persistent_buffers_set and "original0" not in (
        plist._non_persistent_buffers_set
    )
    del module.parametrizations[tensor_name]
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type_before_parametrizations(module)
    _register_parameter_or_buffer(module, tensor_name, original, persistent)
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:  # fmt: skip
    """Copies the parametrizations (and originals' values) of ``from_module`` onto ``to_module``. As torch's."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations.keys())
    import copy

    for name in names:
        src = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            if not hasattr(to_module, name):
                to_module.register_parameter(name, Parameter(getattr(from_module, name).detach().clone()))
            for p in src:
                register_parametrization(to_module, name, copy.deepcopy(p), unsafe=True)
        dst = to_module.parametrizations[name]
        for a, b in zip(dst._originals(), src._originals(), strict=True):
            _maybe_set(a, b)
    return to_module


def load_unparametrized_state_dict(module: Module, state_dict: Mapping, strict: bool = True, assign: bool = False):
    """Loads a checkpoint written before the parametrizations were registered: a plain ``<prefix>weight``
    key of a parametrized tensor is assigned through the ``right_inverse`` chain (as ``m.weight = value``),
    and the resulting originals (plus any buffers of the parametrizations missing from the checkpoint, such
    as orthogonal's ``base`` or spectral_norm's ``_u``/``_v``) are loaded with everything else by
    ``module.load_state_dict(..., strict)``. Keys already in the parametrized form are loaded as they are.
    Returns what ``load_state_dict`` returns."""
    sd = dict(state_dict)
    metadata = getattr(state_dict, "_metadata", None)
    for prefix, m in module.named_modules():
        if not is_parametrized(m):
            continue
        pre = prefix + "." if prefix else ""
        for name in list(m.parametrizations.keys()):
            key = pre + name
            if key not in sd:
                continue
            value = sd.pop(key)
            setattr(m, name, value)
            sub = pre + "parametrizations." + name + "."
            for k, v in m.parametrizations[name].state_dict(prefix=sub).items():
                sd.setdefault(k, v)
    from collections import OrderedDict

    out = OrderedDict(sd)
    if metadata is not None:
        out._metadata = metadata
    return module.load_state_dict(out, strict=strict, assign=assign)
