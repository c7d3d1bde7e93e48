"""Every test of this folder ends with no process group left initialized."""

import pytest

import pyframe.distributed as dist


@pytest.fixture(autouse=True)
def _no_group():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()
