"""torch.distributed.elastic, the part scripts started by a launcher import: ``multiprocessing.errors.record``."""

from pyframe import _submodules

# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
