"""Optimizers and learning-rate schedulers. Same as torch.optim."""

from pyframe.optim import lr_scheduler
from pyframe.optim import torch_paths as _torch_paths  # noqa: F401 - registers torch.optim.adamw and kin
from pyframe.optim.adafactor import Adafactor
from pyframe.optim.adam import Adam, AdamW
from pyframe.optim.adaptive import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop
from pyframe.optim.asgd import ASGD
from pyframe.optim.lbfgs import LBFGS
from pyframe.optim.muon import Muon
from pyframe.optim.optimizer import Optimizer
from pyframe.optim.rprop import Rprop
from pyframe.optim.sgd import SGD
from pyframe.optim.sparse_adam import SparseAdam

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam", "LBFGS",
    "ASGD", "Rprop", "Adafactor", "Muon", "SparseAdam",
    "lr_scheduler",
]  # fmt: skip
