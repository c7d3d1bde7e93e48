"""Optimizers. Same as torch.optim: ``SGD``, ``Adam``, ``AdamW`` on the ``Optimizer`` base."""

from pyframe.optim.adam import Adam, AdamW
from pyframe.optim.optimizer import Optimizer
from pyframe.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
