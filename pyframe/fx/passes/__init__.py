"""Graph passes: ``shape_prop.ShapeProp``."""

from pyframe import _submodules

# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
