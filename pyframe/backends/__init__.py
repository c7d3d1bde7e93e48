"""torch.backends for CPU programs: each backend is a submodule (``import torch.backends.cudnn as cudnn`` works),
with torch's flags and queries. The CUDA-side flags (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``...) may be set
and read and change nothing here; the queries answer for this build: OpenMP is available (the C core's kernels are
OpenMP-parallel), CUDA, cuDNN, MPS, MKL and oneDNN are not."""

from __future__ import annotations

from pyframe.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
