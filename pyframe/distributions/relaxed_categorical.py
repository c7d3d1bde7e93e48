"""``ExpRelaxedCategorical``, ``RelaxedOneHotCategorical``
at torch's module path (``pyframe.distributions.relaxed_categorical``); defined in
:mod:`pyframe.distributions.relaxed`."""

from pyframe.distributions.relaxed import ExpRelaxedCategorical, RelaxedOneHotCategorical

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
