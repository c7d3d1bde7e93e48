"""pyframe: a deep-learning framework with a C core. Names mirror PyTorch's."""

from __future__ import annotations

import math

# The Tensor comes first: the ops modules build on it, and _tensor_methods binds them to it.
from pyframe.tensor import Size, Tensor  # isort: skip
from pyframe import (
    _backend,
    _einops,
    _submodules,
    _tensor_methods,
    accelerator,
    autograd,
    backends,
    cuda,
    hookspecs,
    nn,
    ops,
    optim,
    utils,
)
from pyframe._backend import ShapeError, empty_cache, get_num_threads, memory_cached, set_num_threads, show_config
from pyframe._device import (
    DeviceError,
    channels_last,
    channels_last_3d,
    contiguous_format,
    device,
    get_default_device,
    layout,
    memory_format,
    preserve_format,
    set_default_device,
    strided,
)  # fmt: skip
from pyframe._dtype import (
    bfloat16,
    bool_,
    can_cast,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)  # fmt: skip
from pyframe._eager import (
    are_deterministic_algorithms_enabled,
    get_float32_matmul_precision,
    get_num_interop_threads,
    is_storage,
    set_default_tensor_type,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    typename,
    use_deterministic_algorithms,
)
from pyframe._format import set_printoptions
from pyframe._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)  # fmt: skip
from pyframe._version import __version__ as __version__
from pyframe.hookspecs import hookimpl
from pyframe.ops import *  # noqa: F403
from pyframe.ops.stats import is_complex
from pyframe.serialization import load, save

from pyframe import plugins  # isort: skip
import pyframe.utils.data  # noqa: F401  # isort: skip - torch.utils.data is an attribute after import torch
from pyframe import linalg  # isort: skip
from pyframe import distributions  # isort: skip
from pyframe.linalg import det, geqrf, logdet, lu_unpack, matrix_exp, ormqr, slogdet  # isort: skip
from pyframe.linalg.lu import torch_lu as lu, torch_lu_solve as lu_solve  # isort: skip
from pyframe.linalg.solve import cholesky_inverse, cholesky_solve, triangular_solve  # isort: skip
from pyframe.linalg.lowrank import pca_lowrank, svd_lowrank  # isort: skip
from pyframe import _aliases  # isort: skip - torch's top-level aliases and compositions, and their methods
from pyframe._aliases import *  # noqa: F403  # isort: skip
from pyframe import _functional_forms  # isort: skip
from pyframe._functional_forms import *  # noqa: F403  # isort: skip
from pyframe import signal  # isort: skip
from pyframe import special  # isort: skip
from pyframe import masked  # isort: skip
from pyframe import fft  # isort: skip
import pyframe.autograd.functional  # noqa: F401  # isort: skip - torch.autograd.functional is an attribute
from pyframe import func  # isort: skip
from pyframe.func import vmap  # isort: skip - torch.vmap is torch.func.vmap
from pyframe._higher_order_ops import cond  # isort: skip - torch.cond is torch._higher_order_ops.cond
from pyframe import profiler  # isort: skip - also makes torch.autograd.profiler an attribute
import pyframe.ops.profiler  # noqa: F401  # isort: skip - torch.ops.profiler is an attribute
from pyframe import amp, cpu, jit, random, testing  # isort: skip
import pyframe.optim.swa_utils  # noqa: F401  # isort: skip - torch.optim.swa_utils is an attribute
import pyframe.utils.checkpoint  # noqa: F401  # isort: skip - torch.utils.checkpoint is an attribute
from pyframe.amp.autocast_mode import (  # isort: skip
    autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
    set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled, is_autocast_cpu_enabled,
    set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype, get_autocast_gpu_dtype,
)  # fmt: skip
from pyframe.autograd.anomaly_mode import (  # isort: skip
    is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled,
)  # fmt: skip

inverse = linalg.inv


# torch's constants
pi, e, inf, nan = math.pi, math.e, math.inf, math.nan

# PyTorch's dtype names and aliases; they shadow builtins in this module only
bool = bool_  # noqa: A001
half, float, double, long, int = float16, float32, float64, int64, int32  # noqa: A001
short = int16
range = ops.creation.torch_range  # noqa: A001 - torch.range (start to end included); shadows range here only
newaxis = None  # torch's (and NumPy's) name for None in indexing: x[:, newaxis]

_tensor_methods.bind()

_aliases.bind()

__all__ = [
    "Size", "Tensor", "ShapeError", "autograd", "nn", "optim", "dtype", "bool", "float16", "float32", "float64",
    "utils", "int32", "int64", "half", "float", "double", "long", "int", "uint8", "int8", "int16", "short",
    "bfloat16", "no_grad", "enable_grad", "is_grad_enabled",
    "set_grad_enabled", "hookimpl", "hookspecs", "set_num_threads", "get_num_threads", "show_config", "save",
    "load", "DeviceError", "device", "set_default_device", "get_default_device", "cuda", "accelerator", "backends",
    "pi", "e", "inf", "nan", "finfo", "iinfo", "get_default_dtype", "set_default_dtype", "promote_types", "can_cast",
    "inference_mode", "is_inference_mode_enabled", "compile", "use_deterministic_algorithms",
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_num_interop_threads",
    "get_num_interop_threads", "set_flush_denormal", "set_default_tensor_type", "typename", "is_storage", "range",
    "newaxis",
    "are_deterministic_algorithms_enabled", "is_complex", "set_printoptions", "distributions", "linalg", "det",
    "inverse", "matrix_exp", "slogdet", "geqrf", "logdet", "lu", "lu_solve", "lu_unpack",
    "cholesky_inverse", "cholesky_solve", "triangular_solve", "ormqr", "svd_lowrank",
    "pca_lowrank",
    "empty_cache", "memory_cached", "memory_format", "contiguous_format", "preserve_format", "channels_last",
    "channels_last_3d", "layout", "strided",
    *ops.__all__,
    *_aliases.__all__, *_functional_forms.__all__, "signal", "special", "masked", "fft", "func", "profiler",
    "amp", "cpu", "jit", "random", "testing", "autocast", "is_autocast_enabled", "get_autocast_dtype",
    "set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
    "get_autocast_gpu_dtype",
    "vmap", "cond",
]  # fmt: skip


# torch's subpackages (torch.fx, torch.distributed, torch._dynamo...) are attributes after `import torch`:
# pyframe imports each on first use (some have a cost and are rarely used). `compile` too: with a callable
# backend it captures graphs with pyframe.fx, which sits above this package.
_LAZY_NAMES = {"compile": "pyframe._compile"}
__getattr__ = _submodules.lazy(__name__, names=_LAZY_NAMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_NAMES})


# einops' rearrange/reduce/repeat/pack/einsum on pyframe tensors (a backend defined when einops is imported)
_einops.install()


# last, so that plugins see a complete pyframe: read the plugin config (a bad value fails here) and load the
# enabled plugins; disabled ones are never imported. The `pyframe` command imports this package before its own
# code runs, and exists to diagnose such errors: under it the error is kept for the command to print.
_startup_error: Exception | None = None
try:
    if _backend.startup_error is not None:
        raise _backend.startup_error
    plugins._load_at_import()
except (ValueError, plugins.PluginError) as _e:
    if not plugins._invoked_as_cli():
        raise
    _startup_error = _e
