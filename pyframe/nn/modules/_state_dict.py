"""The state_dict machinery of ``Module`` (``state_dict``, ``load_state_dict``, their hooks), kept apart from
``module.py`` for its size. These are ``Module``'s methods: the class binds each under the same name (a subclass
overrides ``_load_from_state_dict`` or ``_save_to_state_dict`` as in torch). Same as torch.nn.Module's."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from pyframe import _grad_mode
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor
from pyframe.utils.hooks import RemovableHandle

__all__: list[str] = []


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns. Same as torch's."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
    for name, param in self._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in self._buffers.items():
        if buf is not None and name not in self._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()


def state_dict(self, *args: Any, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
    """Same as torch.nn.Module.state_dict: an OrderedDict of parameters and persistent
    buffers (detached unless ``keep_vars``), with ``_metadata`` holding each module's version."""
    if args:  # torch's deprecated positional form (destination, prefix, keep_vars)
        destination = args[0]
        prefix = args[1] if len(args) > 1 else prefix
        keep_vars = args[2] if len(args) > 2 else keep_vars
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    metadata = getattr(destination, "_metadata", None)
    if metadata is not None:
        metadata[prefix[:-1]] = {"version": self._version}
    for hook in self._state_dict_pre_hooks.values():
        hook(self, prefix, keep_vars)
    self._save_to_state_dict(destination, prefix, keep_vars)
    for name, module in self._modules.items():
        if module is not None:
            module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in self._state_dict_hooks.values():
        result = hook(self, destination, prefix, {"version": self._version})
        if result is not None:
            destination = result
    return destination


def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                          error_msgs) -> None:  # fmt: skip
    """Copies this module's own entries (not its children's) from ``state_dict``. Same
    contract as torch's, so subclasses can override it to migrate old checkpoints."""
    for hook in self._load_state_dict_pre_hooks.values():
        hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
    assign = local_metadata.get("assign_to_params_buffers", False)
    local = {k: v for k, v in self._parameters.items() if v is not None}
    local.update(
        (k, v) for k, v in self._buffers.items() if v is not None and k not in self._non_persistent_buffers_set
    )
    for name, current in local.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", expected pyframe.Tensor from checkpoint '
                f"but received {type(value)}"
            )
            continue
        if current.ndim == 0 and value.ndim == 1 and value._numel == 1:  # torch's old 0-d format
            value = value[0]
        if value._shape != current._shape:
            error_msgs.append(
                f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                f"the shape in current model is {current.shape}."
            )
            continue
        try:
            with _grad_mode.no_grad():
                if assign:
                    self._assign_loaded(name, current, value)
                else:
                    current.copy_(value)
        except Exception as ex:  # noqa: BLE001 - reported with the key, as torch does
            error_msgs.append(
                f'While copying the parameter named "{key}", whose dimensions in the model are '
                f"{current.shape} and whose dimensions in the checkpoint are {value.shape}, an exception "
                f"occurred : {ex.args}."
            )
    if strict:
        for key in state_dict:
            if key.startswith(prefix):
                first, dot, _ = key[len(prefix) :].partition(".")
                if (dot and first not in self._modules) or (not dot and first not in local):
                    unexpected_keys.append(key)


def _assign_loaded(self, name: str, current: Tensor, value: Tensor) -> None:
    if name in self._parameters:
        if isinstance(value, Parameter):
            value.requires_grad = current.requires_grad
        else:
            value = Parameter(value.detach(), current.requires_grad)
        self._parameters[name] = value
    else:
        self._buffers[name] = value


def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False) -> _IncompatibleKeys:
    """Same as torch.nn.Module.load_state_dict: copies values in place under no_grad (or,
    with ``assign``, stores the given tensors); returns ``(missing_keys, unexpected_keys)``
    and raises RuntimeError listing every problem when ``strict`` or a shape is wrong."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing_keys: list = []
    unexpected_keys: list = []
    error_msgs: list = []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)

    def load(module, local_state: dict, prefix: str = "") -> None:
        local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
        if assign:
            local_metadata["assign_to_params_buffers"] = True
        module._load_from_state_dict(local_state, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                     error_msgs)  # fmt: skip
        for name, child in module._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
        keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        for hook in module._load_state_dict_post_hooks.values():
            if hook(module, keys) is not None:
                raise RuntimeError("load_state_dict post hooks should return None")

    load(self, state_dict)
    if strict:
        if unexpected_keys:
            error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected_keys)))  # fmt: skip
        if missing_keys:
            error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing_keys)))  # fmt: skip
    if error_msgs:
        raise RuntimeError(
            "Error(s) in loading state_dict for {}:\n\t{}".format(self._get_name(), "\n\t".join(error_msgs))
        )
    return _IncompatibleKeys(missing_keys, unexpected_keys)


def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
    """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
    return RemovableHandle(self._state_dict_pre_hooks, hook)


def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
    """``hook(module, state_dict, prefix, local_metadata)`` after this module's entries were saved."""
    return RemovableHandle(self._state_dict_hooks, hook)


def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
    """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
    error_msgs)`` before this module's entries are loaded; may edit ``state_dict`` in place."""
    return RemovableHandle(self._load_state_dict_pre_hooks, hook)


def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
    """``hook(module, incompatible_keys)`` after loading; may edit the key lists in place."""
    return RemovableHandle(self._load_state_dict_post_hooks, hook)
