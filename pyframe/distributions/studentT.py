"""``StudentT`` at torch's module path (``pyframe.distributions.studentT``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import StudentT

__all__ = ["StudentT"]
