"""Micro-benchmarking: same as torch.utils.benchmark (``Timer``, ``Measurement``, ``Compare``) for Python
statements."""

from pyframe.utils.benchmark.utils import common as _common
from pyframe.utils.benchmark.utils import compare as _compare
from pyframe.utils.benchmark.utils import timer as _timer
from pyframe.utils.benchmark.utils.common import *  # noqa: F403
from pyframe.utils.benchmark.utils.compare import *  # noqa: F403
from pyframe.utils.benchmark.utils.timer import *  # noqa: F403

__all__ = [*_common.__all__, *_timer.__all__, *_compare.__all__]
