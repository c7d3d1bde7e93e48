"""``torch._dynamo.config``: torch's common settings, which training scripts set (``suppress_errors = True``) and
``pyframe.compile`` reads (``cache_size_limit``: the graphs one compiled model keeps before it runs eagerly)."""

from __future__ import annotations

from types import SimpleNamespace

config = SimpleNamespace(
    suppress_errors=False, verbose=False, cache_size_limit=8, accumulated_cache_size_limit=256,
    optimize_ddp=True, capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
    automatic_dynamic_shapes=True, assume_static_by_default=True, recompile_limit=8,
)  # fmt: skip
