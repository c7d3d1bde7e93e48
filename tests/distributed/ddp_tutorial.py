"""torch's DDP tutorial (https://pytorch.org/tutorials/intermediate/ddp_tutorial.html), its torchrun
example ``elastic_ddp.py`` in its CPU form (backend "gloo", no device ids), unchanged but for the imports.
Run by tests/distributed/test_launcher.py as ``python -m pyframe.distributed.run --nproc-per-node 2 ...``."""

import os

import pyframe as torch
import pyframe.distributed as dist
import pyframe.nn as nn
import pyframe.optim as optim
from pyframe.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()  # noqa: UP008 - as the tutorial writes it
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print(f"Start running basic DDP example on rank {rank}.")
    model = ToyModel()
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    loss_fn(outputs, labels).backward()
    optimizer.step()
    env = [os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR")]
    print(f"rank {rank} env {env} world {dist.get_world_size()}")
    dist.destroy_process_group()
    print(f"Finished running basic DDP example on rank {rank}.")


if __name__ == "__main__":
    demo_basic()
