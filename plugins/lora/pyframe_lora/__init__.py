"""pyframe plugin ``lora``: LoRA (low-rank adaptation) by configuration, following PEFT's numbers.

Configured with ``[lora] targets = ["*.q_proj", "*.v_proj"], rank = 8, alpha = 16, dropout = 0.05``, it

- gives every ``Linear`` whose qualified name matches ``targets`` a low-rank adapter when the layer is attached to
  its parent (the pattern's last component is known then; see pyframe's "Qualified names"): the weight becomes
  ``W + (alpha / rank) * B @ A`` through pyframe's parametrizations (``register_parametrization``, the machinery
  of the built-in ``parametrize`` plugin; ``apply`` is also the ``pyframe.parametrizations`` entry point
  ``lora``, for ``[[parametrize.rules]]``), with ``A`` (rank x in) initialised as PEFT does
  (``kaiming_uniform_(a=sqrt(5))``) and ``B`` (out x rank) zero, so the model starts unchanged; with
  ``dropout`` > 0 the adapter's input is dropped out in training, as PEFT places it
  (``base(x) + scale * B(A(dropout(x)))``);
- freezes every other parameter (the targeted weights and biases included), as PEFT does, through the
  parameter-registration hook: the adapters are the only parameters that require grad when construction ends,
  so an optimizer built right after the model trains only them;
- at the outermost module's first call (``pyframe_model_ready``), when every name is final, adapts a targeted
  ``Linear`` the attach-time decision could not see (e.g. ``targets = ["encoder.*.q_proj"]``), with a warning: an
  optimizer built before that call does not hold its adapter.

``state_dict(model)`` is the adapters only; ``load_state_dict(model, sd)`` loads them back; ``merge(model)`` folds
them into the weights (plain ``Linear`` layers again, for export). A base checkpoint (plain ``x.weight`` keys) loads
into an adapted model with ``model.load_state_dict`` as it is: the base weight goes under the adapter, the adapter
keeps its values. Until the model's first call, while ``B`` is still zero, reading a targeted ``weight`` gives the
base weight itself, so a model's own ``init.normal_(module.weight)`` in its ``__init__`` initialises the base
weight as it does without the plugin (PEFT adapts a model after it is built).

With ``targets`` empty (the default) the plugin does nothing at all.
"""

from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Mapping
from typing import Any

import pluggy

# The same marker as ``pyframe.hookimpl``, built here so that importing this module before pyframe is safe.
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = [
    "LoRAParametrization",
    "adapters",
    "apply",
    "state_dict",
    "load_state_dict",
    "merge",
    "pyframe_declare_settings",
    "pyframe_configure",
    "pyframe_unconfigure",
    "pyframe_module_parameter_registration",
    "pyframe_module_module_registration",
    "pyframe_model_ready",
    "pyframe_summary",
]
__version__ = "0.1.0"

NAME = "lora"
DEFAULTS = {"targets": [], "rank": 8, "alpha": 8.0, "dropout": 0.0}  # PEFT's r, lora_alpha, lora_dropout

_state: dict[str, Any] = {**DEFAULTS, "patterns": None, "busy": False}
stats = {"layers adapted": 0, "adapter parameters": 0, "parameters frozen": 0}
_dropout_hooks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Linear -> handle of its dropout hook


_LORA_CLASS: Any = None


def _class():
    """``LoRAParametrization`` (defined on first use: it subclasses pyframe's Module, and importing this plugin
    must not import pyframe)."""
    global _LORA_CLASS
    if _LORA_CLASS is not None:
        return _LORA_CLASS

    import pyframe
    from pyframe import nn

    class _LoRA(nn.Module):
        """The adapter of one weight ``W`` (out x in): ``forward(W) = W + scaling * lora_B @ lora_A``."""

        def __init__(self, in_features: int, out_features: int, rank: int = 8, alpha: float = 8.0,
                     dropout: float = 0.0, dtype: Any = None) -> None:  # fmt: skip
            super().__init__()
            if rank < 1:
                raise ValueError(f"LoRA rank must be >= 1, got {rank}")
            self.rank, self.alpha, self.dropout = int(rank), float(alpha), float(dropout)
            self.scaling = self.alpha / self.rank
            self.ready = False  # set at the model's first call (pyframe_model_ready)
            self.lora_A = nn.Parameter(pyframe.empty(self.rank, in_features, dtype=dtype))
            self.lora_B = nn.Parameter(pyframe.zeros(out_features, self.rank, dtype=dtype))
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # PEFT's init_lora_weights=True

        def forward(self, W: Any) -> Any:
            if not self.ready and not bool(self.lora_B.any()):
                # the model is still being built (its first call makes it ready) and B = 0: the same values, and
                # the base weight itself, so that the model's own init (init.normal_(m.weight)) reaches it
                return W
            return W + (self.lora_B @ self.lora_A) * self.scaling

        def right_inverse(self, W: Any) -> Any:
            return W - (self.lora_B @ self.lora_A).detach() * self.scaling  # assigning sets the effective weight

        def extra_repr(self) -> str:
            return f"rank={self.rank}, alpha={self.alpha}, dropout={self.dropout}"

    _LoRA.__name__ = _LoRA.__qualname__ = "LoRAParametrization"
    _LoRA.__module__ = __name__
    _LORA_CLASS = _LoRA
    return _LoRA


def __getattr__(name: str) -> Any:
    """``pyframe_lora.LoRAParametrization``, the adapter module (defined on first use)."""
    if name == "LoRAParametrization":
        return _class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- settings ----------------------------------------------------------------------------------------------


@hookimpl
def pyframe_declare_settings() -> dict:
    from pyframe.plugins import NamePatterns, Setting, declare

    return declare(
        changes_numerics=lambda s: bool(s["targets"]),  # adapters and frozen parameters: a different model
        active=lambda s: bool(s["targets"]),  # installed but not configured: no hook, no hooked call path
        targets=Setting(
            NamePatterns,
            list(DEFAULTS["targets"]),
            help="qualified names of the Linear layers to adapt, e.g. ['*.q_proj', '*.v_proj']; empty: off",
        ),
        rank=Setting(int, DEFAULTS["rank"], ge=1, help="r: the adapters' rank"),
        alpha=Setting(float, DEFAULTS["alpha"], gt=0.0, help="lora_alpha: the update is scaled by alpha / rank"),
        dropout=Setting(float, DEFAULTS["dropout"], ge=0.0, lt=1.0, help="lora_dropout on the adapter's input"),
    )


@hookimpl
def pyframe_configure(settings: Mapping) -> None:
    from pyframe.plugins import NamePatterns

    _state.update({k: settings[k] for k in DEFAULTS})
    _state["patterns"] = NamePatterns(settings["targets"]) if settings["targets"] else None
    stats.update(dict.fromkeys(stats, 0))


@hookimpl
def pyframe_unconfigure() -> None:
    _state.update(DEFAULTS, patterns=None)


# ---- construction ------------------------------------------------------------------------------------------


def _is_adapter_member(module: Any) -> bool:
    return _LORA_CLASS is not None and isinstance(module, _LORA_CLASS)


@hookimpl
def pyframe_module_parameter_registration(module: Any, name: str, param: Any) -> None:
    """Every parameter but an adapter's is registered frozen (PEFT freezes the whole base model)."""
    if _state["patterns"] is None or param is None or _is_adapter_member(module):
        return None
    if param.requires_grad:
        param.requires_grad_(False)  # in place: a tied parameter stays one object
        stats["parameters frozen"] += 1
    return None


def _linear_type() -> Any:
    from pyframe import nn

    return nn.Linear


def _targeted(module: Any) -> bool:
    from pyframe.nn.utils import parametrize

    return issubclass(parametrize.type_before_parametrizations(module), _linear_type()) and not is_adapted(module)


def is_adapted(module: Any) -> bool:
    """True when ``module`` (a Linear) carries a LoRA adapter on its weight."""
    from pyframe.nn.utils import parametrize

    return parametrize.is_parametrized(module, "weight") and any(
        _is_adapter_member(p) for p in module.parametrizations["weight"]
    )


@hookimpl
def pyframe_module_module_registration(module: Any, name: str, submodule: Any) -> None:
    """A Linear attached under a name the targets match (as far as the tree is known) gets its adapter now."""
    patterns = _state["patterns"]
    if patterns is None or submodule is None or _state["busy"] or _is_adapter_member(module):
        return None
    from pyframe.plugins import qualified_name

    if _targeted(submodule) and patterns.match_suffix(qualified_name(module, name)):
        adapt(submodule)
    return None


@hookimpl
def pyframe_model_ready(model: Any) -> None:
    """Every name is final: a targeted Linear the attach-time decision missed is adapted now, with a warning."""
    patterns = _state["patterns"]
    if patterns is None:
        return
    late = [n for n, m in model.named_modules() if n and patterns.match(n) and _targeted(m)]
    for n in late:
        adapt(model.get_submodule(n))
    for m in model.modules():
        if _is_adapter_member(m):
            m.ready = True  # from the first forward on, the weight is always W + scale * B @ A
    if late:
        warnings.warn(
            f"lora: {', '.join(late)} matched targets only once the model was complete (its first call); their "
            "adapters exist from now on, so an optimizer built before this call does not train them. Name them "
            "by their last components (e.g. '*.q_proj') to have them adapted while the model is built",
            stacklevel=2,
        )


def adapt(linear: Any, *, rank: int | None = None, alpha: float | None = None, dropout: float | None = None) -> Any:
    """Puts a LoRA adapter on ``linear.weight`` (the configured rank, alpha and dropout unless given); returns it."""
    from pyframe.nn.utils import parametrize
    from pyframe.plugins import record_change

    rank = _state["rank"] if rank is None else rank
    alpha = _state["alpha"] if alpha is None else alpha
    dropout = _state["dropout"] if dropout is None else dropout
    weight = linear.weight
    _state["busy"] = True
    try:
        lora = _class()(linear.in_features, linear.out_features, rank, alpha, dropout, dtype=weight.dtype)
        parametrize.register_parametrization(linear, "weight", lora, unsafe=True)
    finally:
        _state["busy"] = False
    if dropout > 0:
        _dropout_hooks[linear] = linear.register_forward_hook(_dropout_input)
    linear._load_state_dict_pre_hooks[id(lora)] = _load_base_weight  # plain "weight" keys load under the adapter
    stats["layers adapted"] += 1
    stats["adapter parameters"] += lora.lora_A.numel() + lora.lora_B.numel()
    record_change(
        NAME, linear, "weight", f"adapted (rank {rank}, alpha {alpha:g}, dropout {dropout:g})", old=weight,
        new={"lora_A": list(lora.lora_A.shape), "lora_B": list(lora.lora_B.shape), "scaling": lora.scaling},
    )  # fmt: skip
    return lora


def apply(module: Any, tensor_name: str = "weight", **options: Any) -> Any:
    """The ``pyframe.parametrizations`` entry point ``lora``, for the built-in ``parametrize`` plugin's rules
    (``[[parametrize.rules]] names = ["*.q_proj"], tensor = "weight", parametrization = "lora", options = {rank =
    4}``): an adapter on a ``Linear``'s weight, with ``rank``/``alpha``/``dropout`` from ``options`` or the
    ``[lora]`` settings. Unlike ``[lora] targets`` it freezes nothing."""
    if tensor_name != "weight" or not issubclass(_type_of(module), _linear_type()):
        raise ValueError(
            f"parametrization 'lora' adapts the weight of a Linear, got {type(module).__name__}.{tensor_name}"
        )
    unknown = sorted(set(options) - {"rank", "alpha", "dropout"})
    if unknown:
        raise TypeError(f"parametrization 'lora' options are rank, alpha and dropout, got {unknown}")
    if is_adapted(module):
        return _adapter(module)
    return adapt(module, **options)


def _type_of(module: Any) -> type:
    from pyframe.nn.utils import parametrize

    return parametrize.type_before_parametrizations(module)


def _adapter(linear: Any) -> Any:
    return next(p for p in linear.parametrizations["weight"] if _is_adapter_member(p))


def _dropout_input(linear: Any, args: tuple, output: Any) -> Any:
    """PEFT drops out the adapter's input only: ``base(x) + s * B(A(dropout(x)))``. The parametrized weight gave
    ``base(x) + s * B(A(x))``; this adds ``s * B(A(dropout(x) - x))``."""
    lora = _adapter(linear)
    if not linear.training or lora.dropout == 0:
        return None
    import pyframe.nn.functional as F

    x = args[0]
    dx = F.dropout(x, lora.dropout, True) - x
    return output + (dx @ lora.lora_A.t() @ lora.lora_B.t()) * lora.scaling


def _load_base_weight(linear, state_dict, prefix, local_metadata, strict, missing, unexpected, errors) -> None:
    """A checkpoint of the model without adapters: ``<prefix>weight`` is the base weight, and the adapter keeps
    the values it has."""
    key = prefix + "weight"
    base = prefix + "parametrizations.weight.original"
    if key in state_dict and base not in state_dict:
        state_dict[base] = state_dict.pop(key)
        for i, p in enumerate(linear.parametrizations["weight"]):
            for name, t in [*p._parameters.items(), *p._buffers.items()]:
                state_dict.setdefault(f"{prefix}parametrizations.weight.{i}.{name}", t)


# ---- after training ----------------------------------------------------------------------------------------


def adapters(model: Any) -> dict[str, Any]:
    """``{qualified name of the Linear: its LoRAParametrization}`` for every adapted layer of ``model``."""
    return {n: _adapter(m) for n, m in model.named_modules() if is_adapted(m)}


def state_dict(model: Any) -> dict[str, Any]:
    """The adapters' parameters only (``<layer>.parametrizations.weight.<i>.lora_A`` / ``lora_B``, the keys they
    have in ``model.state_dict()``), detached: what a LoRA checkpoint saves."""
    full = model.state_dict()
    return {k: v for k, v in full.items() if k.rsplit(".", 1)[-1] in ("lora_A", "lora_B") and ".parametrizations." in k}


def load_state_dict(model: Any, adapters_sd: Mapping) -> None:
    """Loads what ``state_dict`` saved into the adapters of ``model`` (every key must be an adapter's)."""
    own = state_dict(model)
    unknown = sorted(set(adapters_sd) - set(own))
    missing = sorted(set(own) - set(adapters_sd))
    if unknown or missing:
        raise KeyError(f"lora.load_state_dict: keys not adapters of this model: {unknown}; adapters missing: {missing}")
    model.load_state_dict({**model.state_dict(), **dict(adapters_sd)})


def merge(model: Any) -> Any:
    """Folds every adapter into its weight (``W + alpha / rank * B @ A``) and removes it: plain ``Linear`` layers
    with ``weight`` keys again, for export. The merged weights keep ``requires_grad`` False. Returns ``model``."""
    from pyframe.nn.utils import parametrize

    for _, m in list(model.named_modules()):
        if not is_adapted(m):
            continue
        handle = _dropout_hooks.pop(m, None)
        if handle is not None:
            handle.remove()
        lora = _adapter(m)
        m._load_state_dict_pre_hooks.pop(id(lora), None)
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
    return model


@hookimpl
def pyframe_summary() -> dict:
    """Linear layers adapted, their adapter parameters, and the parameters frozen."""
    return dict(stats)
