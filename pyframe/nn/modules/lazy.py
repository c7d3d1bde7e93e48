"""``LazyModuleMixin``: what the lazy modules share (``LazyLinear``, ``LazyConv2d``, ``LazyBatchNorm2d`` ...).
Same as torch.nn.modules.lazy.

A lazy module holds ``UninitializedParameter``/``UninitializedBuffer`` entries until its first call, which takes
the missing sizes from the input (``initialize_parameters``), materializes and initializes them, and turns the
module into its plain class (``cls_to_become``: a ``LazyLinear`` becomes a ``Linear``). torch does the first
step in a forward pre-hook; here the mixin's ``forward`` does it, so a user's own pre-hooks still run first and
see the lazy module, as in torch. ``load_state_dict`` of a materialized state gives the shapes as well (and the
size attributes, which torch leaves at 0); the module keeps its lazy class until its first call, as torch's.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from pyframe.nn.parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Same as torch.nn.modules.lazy.LazyModuleMixin: a module class lists it first among its bases and defines
    ``initialize_parameters(*inputs)``, which materializes every uninitialized parameter and buffer from the
    first input; ``cls_to_become`` is the class the module then becomes (None: it keeps its class)."""

    cls_to_become: type | None = None

    def has_uninitialized_params(self) -> bool:
        """Same as torch's: whether a parameter or buffer of this module (not its children) is still uninitialized."""
        return any(is_lazy(t) for t in chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize and initialize the parameters from the first input (each lazy class defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _infer_from_loaded(self) -> None:
        """After ``load_state_dict`` materialized everything: set the size attributes from the loaded shapes."""

    def _become(self) -> None:
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self.initialize_parameters(*args, **kwargs)
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        self._become()
        return self.forward(*args, **kwargs)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        # an uninitialized entry is saved as itself (its detach() would be an ordinary empty tensor)
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars or is_lazy(param) else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars or is_lazy(buf) else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:  # fmt: skip
        still_lazy = []
        for name, t in chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if t is None or not is_lazy(t) or key not in state_dict:
                continue
            value = state_dict[key]
            if is_lazy(value):  # both uninitialized: nothing to copy
                still_lazy.append(key)
            else:
                t.materialize(value.shape, dtype=value.dtype)
        state = {k: v for k, v in state_dict.items() if k not in still_lazy}
        keys_before = len(missing_keys)
        super()._load_from_state_dict(state, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)  # fmt: skip
        missing_keys[keys_before:] = [k for k in missing_keys[keys_before:] if k not in still_lazy]
        if not self.has_uninitialized_params():
            self._infer_from_loaded()  # the class changes at the first call, as torch's
