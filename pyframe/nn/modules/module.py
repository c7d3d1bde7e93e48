"""``Module``: the base class of every layer. Same as torch.nn.Module.

Three things differ in how, not what:

- Every registration (``register_parameter``, ``register_buffer``, ``add_module``, attribute
  assignment, containers) goes through one method, ``Module._register``: validate, run the
  global registration chain, check what it returned, then commit. A hook or check that raises
  leaves the module as it was.
- ``__call__`` tests one condition ("any hook at all?") and otherwise calls ``forward``; with
  hooks it hands over to ``_hooked_call.call_with_hooks``.
- Full backward hooks put the module between two pass-through nodes of pyframe's own autograd
  (one on the inputs, one on the outputs, see ``_hooked_call.py``); nothing is a view, so
  in-place ops after a hooked module stay legal.

The global hooks (``pyframe/_hooks.py``, below ``nn``: it imports nothing from here) plug in at two
places: ``_prepare`` runs the registration registries' chain with this module's own conversion of a
replacement (``_ACCEPT``), and the hooked call path reads the call registries' snapshots while the
``_global_hooks_active`` flag (kept in sync by a ``_hooks`` listener) says there is any. The eight
``register_module_*`` functions are defined in ``_hooks`` and exported from here, as in torch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from pyframe import _device, _dtype, _grad_mode, _hooks
from pyframe._hooks import (
    BLOCK,
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from pyframe.nn.modules import _state_dict
from pyframe.nn.modules._hooked_call import call_with_hooks
from pyframe.nn.modules._state_dict import _IncompatibleKeys  # noqa: F401 - torch's path
from pyframe.nn.parameter import Buffer, Parameter
from pyframe.ops.creation import empty_like
from pyframe.tensor import Tensor
from pyframe.tensor import set_data as _set_data
from pyframe.utils.hooks import RemovableHandle

# set while any global forward or backward hook exists; the one global ``__call__`` reads
_global_hooks_active = False


def _sync_global_flag() -> None:
    global _global_hooks_active
    _global_hooks_active = _hooks.any_call_hooks()


_hooks.add_listener(_sync_global_flag)


# ---- helpers ---------------------------------------------------------------------------------------


def _typename(obj: Any) -> str:
    if isinstance(obj, Parameter):
        return "pyframe.nn.Parameter"
    if isinstance(obj, Tensor):
        return "pyframe.Tensor"
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    if not rest:
        return text
    return first + "\n" + "\n".join(" " * spaces + line for line in rest)


_DTYPE_NAMES = {d.name for d in _dtype.ALL} | {"float", "double", "half", "long", "int", "short"}
_KIND_DICT = {"parameter": "_parameters", "buffer": "_buffers", "module": "_modules"}
_REGISTRIES = {"parameter": _hooks.parameter_registration, "buffer": _hooks.buffer_registration,
               "module": _hooks.module_registration}  # fmt: skip


def _as_parameter(value: Any) -> Parameter | None:
    """A registration hook's replacement for a parameter: a plain tensor (``return param.to(dtype=...)``)
    becomes a Parameter keeping its ``requires_grad`` (API.md); None when it is no tensor."""
    if isinstance(value, Parameter):
        return value
    return Parameter(value.detach(), value.requires_grad) if isinstance(value, Tensor) else None


# what ``run_chain`` calls on a hook's replacement: the value to register, or None for a wrong kind
_ACCEPT = {
    "parameter": _as_parameter,
    "buffer": lambda v: v if isinstance(v, Tensor) else None,
    "module": lambda v: v if isinstance(v, Module) else None,
}


def _forward_unimplemented(self, *args: Any) -> Any:
    """Same as torch.nn.Module.forward: the computation of the module, defined by every subclass.

    Call the module (``model(x)``) rather than ``forward``: the call runs the module's and the global hooks
    (and so the plugins) around it. The base class raises NotImplementedError.
    """
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


# ---- Module ----------------------------------------------------------------------------------------


class Module:
    """Base class for all neural network modules. Same as torch.nn.Module (see the module
    docstring for what is built differently)."""

    training: bool
    _version: int = 1
    dump_patches: bool = False
    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got unexpected arguments: Module.__init__ takes none "
                f"(got {len(args)} positional, keywords {sorted(kwargs)})"
            )
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        self._init_hook_dicts()

    def _init_hook_dicts(self, missing_only: bool = False) -> None:
        for name in (
            "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks", "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks",
            "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
        ):  # fmt: skip
            if not (missing_only and name in self.__dict__):
                object.__setattr__(self, name, OrderedDict())

    # ---- registration: one path for parameters, buffers and submodules -------------------------

    def _register(self, kind: str, name: Any, value: Any, *, assign: bool = False, persistent: bool = True) -> None:
        """Validates, runs the global registration chain, checks its result, then commits.
        ``assign``: attribute-assignment semantics (``m.x = value``): another binding of ``name``
        (plain attribute, or another kind) is replaced instead of being an error."""
        value = self._prepare(kind, name, value, assign)
        self._commit(kind, name, value, assign, persistent)

    def _prepare(self, kind: str, name: Any, value: Any, assign: bool = False) -> Any:
        """Everything before the commit: returns the value to store. Raises before any change."""
        self._check_value(kind, name, value)
        self._check_name(kind, name, assign)
        registry = _REGISTRIES[kind]
        if not registry:
            return value
        result = registry.run_chain(self, name, value, _ACCEPT[kind])
        if result is BLOCK:
            return None
        if result is not value:
            self._check_value(kind, name, result)
            self._check_name(kind, name, assign)  # a hook may have bound the name meanwhile
        return result

    def _check_name(self, kind: str, name: Any, assign: bool) -> None:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if name in d[_KIND_DICT[kind]]:
            return
        # m.x = value replaces instance attributes and other kinds; a class attribute (a method, a
        # property) would shadow a registered parameter, so that is still an error (as torch)
        clash = (kind == "parameter" and hasattr(type(self), name)) if assign else hasattr(self, name)
        if clash:
            raise KeyError(f"attribute '{name}' already exists")

    @staticmethod
    def _check_value(kind: str, name: str, value: Any) -> None:
        if value is None:
            return
        if kind == "parameter":
            if not isinstance(value, Parameter):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' object to parameter '{name}' "
                    "(pyframe.nn.Parameter or None required)"
                )
            if value.grad_fn is not None:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                    f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                    "the forward() method."
                )
        elif kind == "buffer":
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' object to buffer '{name}' (pyframe.Tensor or None required)"
                )
        elif not isinstance(value, Module):
            raise TypeError(f"{_typename(value)} is not a Module subclass")

    def _commit(self, kind: str, name: str, value: Any, assign: bool, persistent: bool) -> None:
        d = self.__dict__
        if assign:
            d.pop(name, None)
            for other in ("_parameters", "_buffers", "_modules"):
                if other != _KIND_DICT[kind]:
                    d[other].pop(name, None)
            if kind != "buffer":
                d["_non_persistent_buffers_set"].discard(name)
        d[_KIND_DICT[kind]][name] = value
        if kind == "module":
            _hooks.link(self, name, value)  # so that qualified names are known (pyframe.plugins.qualified_name)
        elif kind == "buffer":
            if persistent:
                d["_non_persistent_buffers_set"].discard(name)
            else:
                d["_non_persistent_buffers_set"].add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Same as torch.nn.Module.register_parameter."""
        self._register("parameter", name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Same as torch.nn.Module.register_buffer; a non-persistent buffer stays out of state_dict."""
        self._register("buffer", name, tensor, persistent=persistent)

    def add_module(self, name: str, module: Module | None) -> None:
        """Same as torch.nn.Module.add_module."""
        self._register("module", name, module)

    register_module = add_module

    # ---- attribute access --------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            store = d.get(key)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._register("parameter", name, value, assign=True)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' (pyframe.nn.Parameter or None expected)"
                )
            self._register("parameter", name, None, assign=True)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._register("module", name, value, assign=True)
        elif name in d.get("_modules", ()):
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as child module '{name}' (pyframe.nn.Module or None expected)"
                )
            self._register("module", name, None, assign=True)
        elif isinstance(value, Buffer) or name in d.get("_buffers", ()):  # an nn.Buffer carries its persistence
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as buffer '{name}' (pyframe.Tensor or None expected)"
                )
            persistent = value.persistent if isinstance(value, Buffer) else name not in d["_non_persistent_buffers_set"]
            self._register("buffer", name, value, assign=True, persistent=persistent)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        if name in d["_parameters"]:
            del d["_parameters"][name]
        elif name in d["_buffers"]:
            del d["_buffers"][name]
            d["_non_persistent_buffers_set"].discard(name)
        elif name in d["_modules"]:
            del d["_modules"][name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list:
        keys = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted({k for k in keys if not k[0].isdigit()})

    def _get_name(self) -> str:
        return type(self).__name__

    def get_submodule(self, target: str) -> Module:
        """Same as torch.nn.Module.get_submodule: ``"net.0.conv"`` style paths."""
        return self if target == "" else self._get_member(target, Module, "an nn.Module")

    def get_parameter(self, target: str) -> Parameter:
        """Same as torch.nn.Module.get_parameter: the parameter a dotted path names (``"net.0.weight"``).

        Raises AttributeError when a step of the path does not exist or the last is not an ``nn.Parameter``.
        """
        return self._get_member(target, Parameter, "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """Same as torch.nn.Module.get_buffer: the buffer a dotted path names (``"bn.running_mean"``).

        Raises AttributeError when a step of the path does not exist or the last is not a registered buffer.
        """
        return self._get_member(target, None, "a buffer")

    def _get_member(self, target: str, cls: type | None, what: str) -> Any:
        """The value ``target`` ("net.0.weight") names, as torch checks it: every step must exist and the last
        must be a ``cls`` (``None``: one of its module's buffers)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        value = getattr(mod, name)
        if not (name in mod._buffers if cls is None else isinstance(value, cls)):
            raise AttributeError(f"`{name}` is not {what}")
        return value

    # ---- iteration -----------------------------------------------------------------------------

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """Same as torch.nn.Module.named_modules: this module, then its descendants depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Same as torch.nn.Module.modules: this module and every submodule, recursively, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Same as torch.nn.Module.named_children: (name, module) for each direct submodule, each module once."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        """Same as torch.nn.Module.children: the direct submodules, each once."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, get_members: Callable, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):  # fmt: skip
        seen = set()  # ids: a Tensor's == is elementwise, so tensors cannot go in a set themselves
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Same as torch.nn.Module.named_parameters."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Same as torch.nn.Module.parameters: the parameters of this module (and its submodules when ``recurse``),
        each once; what optimizers take.
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Same as torch.nn.Module.named_buffers: (dotted name, buffer) for each registered buffer (not None).

        Args:
            prefix: prepended to every name.
            recurse: include the buffers of submodules.
            remove_duplicate: yield a buffer shared by two modules once.
        """
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Same as torch.nn.Module.buffers: the registered buffers (of submodules too when ``recurse``)."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # ---- modes and conversions --------------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Same as torch.nn.Module.train: sets ``training`` on this module and every submodule; returns the module.

        ``mode`` must be a bool (ValueError otherwise). Dropout and batch norm read ``training``.
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Same as torch.nn.Module.eval: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Same as torch.nn.Module.requires_grad_: sets ``requires_grad`` on every parameter; returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Same as torch.nn.Module.zero_grad."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                else:
                    p.grad.requires_grad_(False)
                with _grad_mode.no_grad():
                    p.grad.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Same as torch.nn.Module.apply: calls ``fn`` on every submodule (children first), then on this module; returns
        the module.
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        """Converts every parameter and buffer with ``fn``. A parameter keeps its identity (its
        memory is rebound, as ``param.data = fn(param)`` in torch), so optimizers built before
        still hold it; buffers are replaced."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with _grad_mode.no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                new = fn(param)
                if new is not param:
                    _set_data(param, new)
                if param.grad is not None:
                    new_grad = fn(param.grad)
                    if new_grad is not param.grad:
                        _set_data(param.grad, new_grad)
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to_empty(self, *, device: Any = "cpu", recurse: bool = True) -> Module:
        """Same as torch.nn.Module.to_empty: every parameter and buffer given new, uninitialised memory on
        ``device`` (how a module built on the meta device gets memory); parameters keep their identity."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self) -> Module:
        """Same as torch.nn.Module.share_memory: every parameter, gradient and buffer moved into shared memory
        (``Tensor.share_memory_``), so processes of ``pyframe.multiprocessing`` train the same weights."""
        return self._apply(lambda t: t.share_memory_())

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Same as torch.nn.Module.to for dtypes (floating parameters and buffers are converted in
        place), the "cpu" device and the "meta" one (parameters and buffers become shapes without memory,
        as for a stateless base of ``func.functional_call``)."""
        target = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                target = a.dtype
            elif isinstance(a, _device.device) or (isinstance(a, str) and a not in _DTYPE_NAMES):
                device = a
            elif a is not None and not isinstance(a, bool):
                target = a
        dt = None if target is None else _dtype.as_dtype(target)
        if device is not None and _device.wants_meta(device):
            if dt is not None and not dt.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}")
            return self._apply(
                lambda t: t.to("meta", dtype=dt if dt is not None and t.dtype.is_floating_point else None)
            )
        _device.check_device(device)
        if target is None:
            return self
        if not dt.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dt}")
        return self._apply(lambda t: t.to(dt) if t.dtype.is_floating_point else t)

    def float(self) -> Module:
        """Same as torch.nn.Module.float: floating parameters and buffers converted to float32, in place."""
        return self.to(_dtype.float32)

    def double(self) -> Module:
        """Same as torch.nn.Module.double: floating parameters and buffers converted to float64, in place."""
        return self.to(_dtype.float64)

    def half(self) -> Module:
        """Same as torch.nn.Module.half: floating parameters and buffers converted to float16 (pyframe computes float16
        in float32 and stores float16).
        """
        return self.to(_dtype.float16)

    def bfloat16(self) -> Module:
        """Same as torch.nn.Module.bfloat16: floating parameters and buffers converted to bfloat16 (computed in
        float32 and stored as bfloat16), in place.
        """
        return self.to(_dtype.bfloat16)

    def cpu(self) -> Module:
        """Same as torch.nn.Module.cpu: the module itself, already in CPU memory."""
        return self

    def cuda(self, device=None) -> Module:
        """Raises pyframe's device error: there is no GPU."""
        _device.device("cuda" if device is None else f"cuda:{device}")
        return self

    def type(self, dst_type) -> Module:
        """Same as torch.nn.Module.type: every parameter and buffer converted with ``t.to(dst_type)``; returns the
        module.
        """
        return self._apply(lambda t: t.to(dst_type))

    # ---- state_dict (the methods are in _state_dict.py) ----------------------------------------------

    _save_to_state_dict = _state_dict._save_to_state_dict
    state_dict = _state_dict.state_dict
    _load_from_state_dict = _state_dict._load_from_state_dict
    _assign_loaded = _state_dict._assign_loaded
    load_state_dict = _state_dict.load_state_dict
    register_state_dict_pre_hook = _state_dict.register_state_dict_pre_hook
    register_state_dict_post_hook = _state_dict.register_state_dict_post_hook
    _register_state_dict_hook = _state_dict.register_state_dict_post_hook
    register_load_state_dict_pre_hook = _state_dict.register_load_state_dict_pre_hook
    register_load_state_dict_post_hook = _state_dict.register_load_state_dict_post_hook

    # ---- per-module hooks --------------------------------------------------------------------------

    def _add_hook(self, hooks: OrderedDict, hook: Callable, prepend: bool, flags: tuple = ()) -> RemovableHandle:
        """Adds ``hook``; ``flags``: (dict, enabled) pairs recording per-hook options under the same id."""
        handle = RemovableHandle(hooks, hook, extra_dicts=tuple(d for d, _ in flags))
        for d, on in flags:
            if on:
                d[handle.id] = True
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:  # fmt: skip
        """Same as torch.nn.Module.register_forward_pre_hook: ``hook(module, args)`` returns None or
        new args; with ``with_kwargs``, ``hook(module, args, kwargs)`` returns None or (args, kwargs)."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend,
                              ((self._forward_pre_hooks_with_kwargs, with_kwargs),))  # fmt: skip

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:  # fmt: skip
        """Same as torch.nn.Module.register_forward_hook: ``hook(module, args, output)`` (or
        ``(module, args, kwargs, output)``) returns None or a new output; ``always_call``: also run
        when forward raises."""
        flags = ((self._forward_hooks_with_kwargs, with_kwargs), (self._forward_hooks_always_called, always_call))
        return self._add_hook(self._forward_hooks, hook, prepend, flags)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Same as torch.nn.Module.register_full_backward_pre_hook: ``hook(module, grad_output)``
        before the module's gradients are computed; returns None or a new grad_output tuple."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Same as torch.nn.Module.register_full_backward_hook: ``hook(module, grad_input,
        grad_output)`` once the gradients of the module's inputs are known; returns None or a new
        grad_input tuple. Entries are None where no gradient flows."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The full backward hook (PyTorch's deprecated non-full semantics are not reproduced)."""
        return self.register_full_backward_hook(hook)

    # ---- calling -------------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # the dicts themselves, not a flag kept by register_*: code that fills them by hand
        # (m._forward_hooks[k] = h, as some torch programs do) must see its hooks run
        try:  # free unless forward raises: then a plugin whose change caused the error is named (a note)
            if not (
                _global_hooks_active
                or self._forward_hooks
                or self._forward_pre_hooks
                or self._backward_hooks
                or self._backward_pre_hooks
            ):
                return self.forward(*args, **kwargs)
            return call_with_hooks(self, args, kwargs, _global_hooks_active)
        except Exception as e:
            if _hooks._changes:
                _hooks.explain_error(self, e)
            raise

    # ---- repr, pickling ------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The module-specific part of ``repr``; override in subclasses. Same as torch's."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __getstate__(self) -> dict:
        return self.__dict__.copy()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_hook_dicts(missing_only=True)  # states from before a hook kind existed
        _hooks._link_below(self)  # unpickled submodules were never committed: link them for qualified names


__all__ = [
    "Module", "BLOCK", "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
    "register_module_module_registration_hook", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_pre_hook", "register_module_backward_hook", "register_module_full_backward_hook",
]  # fmt: skip
