"""The ``Optimizer`` base class: parameter groups, per-parameter state, ``zero_grad``,
``state_dict`` / ``load_state_dict``, and the step and state-dict hooks. Same as torch.optim.Optimizer.

Subclasses implement ``_update(group)``, which steps one group's parameters under no_grad;
``step`` runs the closure (with grad enabled) and then every group.
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError
from pyframe.ops.creation import zeros_like
from pyframe.ops.optim import fused_step
from pyframe.tensor import Tensor, empty_tensor
from pyframe.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


# torch's sentinel for an argument a custom optimizer must be given: ``def __init__(self, params, lr=required)``
required = _RequiredParameter()

# hooks of every optimizer's step, as torch's: pre hooks run before each instance's own, post hooks after
_global_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
_INSTANCE_HOOKS = (
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks",
)  # fmt: skip


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Same as torch.optim.optimizer.register_optimizer_step_pre_hook: ``hook(optimizer, args, kwargs)`` runs
    before every optimizer's ``step`` (``args`` starts with the optimizer) and may return ``(new_args,
    new_kwargs)``."""
    return RemovableHandle(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Same as torch.optim.optimizer.register_optimizer_step_post_hook: ``hook(optimizer, args, kwargs)`` runs
    after every optimizer's ``step``."""
    return RemovableHandle(_global_step_post_hooks, hook)


def _hooked_step(step: Callable) -> Callable:
    """``step`` running the global and the instance's step hooks around it. A ``step`` reached from another
    (a subclass's calling ``super().step()``) runs them once, in the outermost call."""

    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        pre, post = self.__dict__.get("_optimizer_step_pre_hooks"), self.__dict__.get("_optimizer_step_post_hooks")
        if self._stepping or not (_global_step_pre_hooks or _global_step_post_hooks or pre or post):
            return step(*args, **kwargs)
        self._stepping = True
        try:
            for hook in [*_global_step_pre_hooks.values(), *(pre or {}).values()]:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            out = step(*args, **kwargs)
            for hook in [*(post or {}).values(), *_global_step_post_hooks.values()]:
                hook(self, args, kwargs)
            return out
        finally:
            self._stepping = False

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


_STEPPED_DTYPES = (_dtype.float32, _dtype.float64)  # what the fused C kernels update


class Optimizer:
    """Same as torch.optim.Optimizer: ``params`` is an iterable of tensors, of ``(name, tensor)``
    pairs, or of dicts each defining a parameter group (``{"params": [...], "lr": ...}``) whose
    missing options are filled from ``defaults``.

    pyframe differs in: a parameter repeated within a group is an error (torch warns), and
    ``state_dict()`` returns copies of the state tensors (torch returns references)."""

    # state entries shaped like their parameter; load_state_dict checks their shapes
    _param_shaped_state: tuple[str, ...] = ()
    _stepping = False  # inside a hooked step (see _hooked_step)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)  # type: ignore[method-assign]

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {type(params).__name__}"
            )
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_hooks()

    def _init_hooks(self) -> None:
        for name in _INSTANCE_HOOKS:
            self.__dict__.setdefault(name, OrderedDict())

    # ---- hooks -------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before each ``step`` of this optimizer (after the global
        ones) and may return ``(new_args, new_kwargs)``."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after each ``step`` of this optimizer (before the global
        ones)."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs before ``state_dict()`` builds its result."""
        return _add(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs on ``state_dict()``'s result and may return a new one."""
        return _add(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict)`` runs before ``load_state_dict`` and may return the state dict to load."""
        return _add(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer)`` runs after ``load_state_dict`` has loaded."""
        return _add(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # ---- parameter groups --------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a group of parameters with its own options (missing ones from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("param_group must have a 'params' entry")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of "
                "tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) and len(p) == 2 else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not (p.is_leaf or p._retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        group["params"] = params
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in group):
                which = "with names" if "param_names" in group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    # ---- gradients and steps -------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every parameter: to None (default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g.grad_fn = None  # detach_() in place, as torch
                    g.requires_grad = False
                    g.zero_()

    def step(self, closure: Callable[[], Any] | None = None):
        """One optimization step over every group; returns ``closure()``'s loss when given (the
        closure runs with grad enabled, the update under no_grad)."""
        loss = None
        if closure is not None:
            with _grad_mode.enable_grad():
                loss = closure()
        with _grad_mode.no_grad():
            self._check_writable()
            for group in self.param_groups:
                self._update(group)
        return loss

    def _check_writable(self) -> None:
        """Every parameter and gradient of the step checked before any state or parameter
        changes: a bad one found halfway would leave earlier parameters stepped and this one's
        momentum updated but not its value."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if type(g) is not Tensor or g._shape != p._shape or g.dtype is not p.dtype:
                    self._grad_of(p)  # raises saying what is wrong
                if p.dtype not in _STEPPED_DTYPES:
                    self._grad_of(p)
                if not p._contig:
                    p._write_check()

    def _update(self, group: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement step()")

    # helpers for subclasses: the C kernels want contiguous buffers of the parameter's dtype

    # whether the step takes sparse gradients (SGD, Adagrad; SparseAdam takes only them), and torch's
    # message where it does not ({} is the class's name)
    _sparse_grads = False
    _sparse_message = "{} does not support sparse gradients"

    def _grad_of(self, p: Tensor) -> Tensor:
        """``p.grad`` checked against ``p`` and made contiguous (a sparse one is returned as it is)."""
        if p.dtype not in _STEPPED_DTYPES:
            raise TypeError(f"{type(self).__name__} steps float32 and float64 parameters, got {p.dtype.name}")
        g = p.grad
        if not isinstance(g, Tensor):
            raise TypeError(f"a parameter's grad must be a Tensor or None, got {type(g).__name__}")
        if g.is_sparse and not self._sparse_grads:
            raise RuntimeError(self._sparse_message.format(type(self).__name__))
        if g._shape != p._shape:
            raise ShapeError(f"gradient of shape {list(g._shape)} does not match its parameter's {list(p._shape)}")
        if g.dtype is not p.dtype:
            raise TypeError(f"gradient of dtype {g.dtype.name} does not match its parameter's {p.dtype.name}")
        return g if g._contig or g.is_sparse or g.is_contiguous() else g.contiguous()

    @staticmethod
    def _buffer(state: dict[str, Any], key: str, p: Tensor) -> Tensor:
        """State tensor ``key``, checked against ``p`` and made contiguous of ``p``'s dtype."""
        t = state[key]
        if not isinstance(t, Tensor) or t._shape != p._shape:
            what = f"shape {list(t._shape)}" if isinstance(t, Tensor) else type(t).__name__
            raise ShapeError(f"optimizer state {key!r} is {what}, but its parameter has shape {list(p._shape)}")
        if t.dtype is not p.dtype:
            t = state[key] = t.to(p.dtype)
        elif not (t._contig or t.is_contiguous()):
            t = state[key] = t.contiguous()
        return t

    @staticmethod
    def _next_step(state: dict[str, Any]) -> float:
        """Adds one to ``state["step"]`` (a 0-d float32 tensor, as torch's) and returns it."""
        t = state.get("step")
        if not (isinstance(t, Tensor) and t._numel == 1 and t.dtype.is_floating_point):
            # a number or an odd tensor from a loaded state: make it torch's kind
            value = 0.0 if t is None else float(t)
            t = state["step"] = empty_tensor((), _dtype.float32).fill_(value)
        t.add_(1.0)  # rounds to float32, as torch's float32 step += 1
        return t.item()

    @staticmethod
    def _target(p: Tensor) -> Tensor:
        """``p`` itself when its memory is contiguous, else a contiguous copy for the kernel to
        update (the optimizer copies it back)."""
        return p if p._contig or p.is_contiguous() else p.contiguous()

    # ---- state_dict --------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``: torch's
        format, parameters replaced by their position across all groups; state tensors are copies."""
        for hook in list(self._optimizer_state_dict_pre_hooks.values()):
            hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {}
        for key, value in self.state.items():
            k = index[id(key)] if isinstance(key, Tensor) and id(key) in index else key
            state[k] = {n: v.detach().clone() if isinstance(v, Tensor) else deepcopy(v) for n, v in value.items()}
        out = {"state": state, "param_groups": groups}
        for hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = hook(self, out)
            if result is not None:
                out = result
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads what ``state_dict()`` returned (from this optimizer class, with the same group
        sizes): state tensors are copied and cast to their parameter's dtype (``step`` is kept)."""
        for hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        if not isinstance(state_dict, dict):
            raise TypeError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        for key in ("state", "param_groups"):
            if key not in state_dict:
                raise ValueError(f"loaded state dict has no {key!r} entry (expected keys 'state' and 'param_groups')")
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError(
                f"loaded state dict has a different number of parameter groups: {len(saved_groups)}, "
                f"but the optimizer has {len(groups)}"
            )
        for i, (g, s) in enumerate(zip(groups, saved_groups, strict=True)):
            if not isinstance(s, dict) or "params" not in s:
                raise ValueError(f"loaded parameter group {i} is not a dict with a 'params' entry")
            if len(g["params"]) != len(s["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                    f"group: group {i} has {len(s['params'])} parameters saved, the optimizer's has "
                    f"{len(g['params'])}"
                )
        id_map = {}
        for g, s in zip(groups, saved_groups, strict=True):
            id_map.update(zip(s["params"], g["params"], strict=True))

        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, value in state_dict["state"].items():
            param = id_map.get(k)
            if param is None:  # state not tied to a parameter is kept as it is (as torch)
                state[k] = value
                continue
            if not isinstance(value, dict):
                raise ValueError(f"state of parameter {k} must be a dict, got {type(value).__name__}")
            state[param] = {name: self._load_value(param, k, name, v) for name, v in value.items()}

        new_groups = []
        for g, s in zip(groups, saved_groups, strict=True):
            s["params"] = g["params"]
            if "param_names" in g and "param_names" not in s:
                s["param_names"] = g["param_names"]
            for name, default in self.defaults.items():
                s.setdefault(name, default)
            new_groups.append(s)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            hook(self)

    def _load_value(self, param: Tensor, index, name: str, value):
        if not isinstance(value, Tensor):
            return deepcopy(value)
        value = value.detach()
        if name == "step":
            return value.clone()
        if name in self._param_shaped_state and value._shape != param._shape:
            raise ShapeError(
                f"loaded state {name!r} of parameter {index} has shape {list(value._shape)}, "
                f"but the parameter has shape {list(param._shape)}"
            )
        if param.dtype.is_floating_point and value.dtype is not param.dtype:
            return value.to(param.dtype)  # a new tensor already
        return value.clone()


def _add(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(hooks, hook)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


Optimizer.step = _hooked_step(Optimizer.step)  # type: ignore[method-assign]


def check_number(name: str, value, low: float = 0.0, high: float | None = None, high_open: bool = False) -> None:
    """torch's hyperparameter check: ``value`` (a number or a one-element tensor) at least ``low``
    and at most (or below, ``high_open``) ``high``; NaN fails."""
    if isinstance(value, Tensor):
        value = value.item()
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError(f"Invalid {name}: {value!r}")


def check_betas(betas) -> tuple[float, float]:
    """A pair of decay rates in [0, 1), as floats."""
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise ValueError(f"Invalid betas: {betas!r} (expected a pair of floats in [0, 1))")
    for i, b in enumerate(betas):
        check_number(f"beta parameter at index {i}", b, 0.0, 1.0, high_open=True)
    return float(betas[0]), float(betas[1])


def check_adam_args(lr, betas, eps, weight_decay) -> tuple[float, float]:
    """The checks of Adam and its relatives (Adamax, NAdam, RAdam), in torch's order; the betas as floats."""
    check_number("learning rate", lr)
    check_number("epsilon value", eps)
    betas = check_betas(betas)
    check_number("weight_decay value", weight_decay)
    return betas


class _FusedOptimizer(Optimizer):
    """The optimizers whose update is one fused C step (``pyframe.ops.optim.fused_step``): for each
    parameter with a gradient its state is made or checked, then the kernel steps the group. A class
    names its kernel (``_kind``) and answers four questions: which parameter-shaped state tensors
    the kernel updates (``_buffers``), how a parameter's state starts (``_init_state``), what the
    kernel needs from one parameter's state (``_per_param``) and from the group (``_scalars``)."""

    _kind = ""

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        flags = [name for name in ("capturable", "differentiable") if defaults.get(name)]
        if flags:  # graph capture and differentiating through the step need what a fused C kernel is not
            raise ValueError(f"pyframe's {type(self).__name__} does not support {', '.join(flags)}=True")
        super().__init__(params, defaults)

    def _buffers(self, group: dict[str, Any]) -> tuple[str | None, ...]:
        """The state tensors the kernel updates, in its order; None for a slot it leaves unused."""
        return ()

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """A parameter's state before its first step (a missing buffer is made as zeros later)."""

    def _per_param(self, group: dict[str, Any], state: dict[str, Any] | None) -> Any:
        """What the kernel takes per parameter (see ``fused_step``), from its state (None when the
        update keeps none); read before missing buffers are made."""
        return None

    def _scalars(self, group: dict[str, Any]) -> tuple:
        """The group's numbers, in the kernel's order."""
        return ()

    def _update(self, group: dict[str, Any]) -> None:
        names = self._buffers(group)
        batch, copies = [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            state, states = None, ()
            if names:  # torch keeps no state for a parameter whose update needs none (SGD without momentum)
                state = self.state[p]
                if not state:
                    self._init_state(p, group, state)
            if g.is_sparse:  # SGD and Adagrad: torch's sparse update, outside the fused kernel
                self._sparse_step(p, g, group, state)
                continue
            own = self._per_param(group, state)
            if names:
                states = [None if name is None else self._state_buffer(state, name, p) for name in names]
            t = self._target(p)
            if t is not p:
                copies.append((p, t))
            batch.append((t, g, states, own))
        fused_step(self._kind, batch, self._scalars(group))
        for p, t in copies:  # the kernel updated a contiguous copy
            p.copy_(t)

    def _sparse_step(self, p: Tensor, g: Tensor, group: dict[str, Any], state: dict[str, Any] | None) -> None:
        """The update of ``p`` by a sparse gradient (for a class with ``_sparse_grads``)."""
        raise RuntimeError(self._sparse_message.format(type(self).__name__))

    def _state_buffer(self, state: dict[str, Any], name: str, p: Tensor) -> Tensor:
        """State tensor ``name`` checked against ``p`` (made as zeros when missing)."""
        t = state.get(name)
        if t is None:
            t = state[name] = zeros_like(p)
        elif t._contig and t.dtype is p.dtype and t._shape == p._shape:  # the usual case, checked inline
            return t
        return self._buffer(state, name, p)
