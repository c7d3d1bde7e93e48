"""Same as torch.utils.tensorboard: ``SummaryWriter`` writes TensorBoard event files (scalars, histograms, images,
text, hyperparameters) that ``tensorboard --logdir runs`` shows. The file format and its protocol buffers come from
the ``tensorboard`` package (``pip install tensorboard``, or pyframe's ``tensorboard`` extra), as in torch."""

from pyframe.utils.tensorboard.writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
