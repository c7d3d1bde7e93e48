"""Memory: the allocator's counters and huge-page advice. Measured with the core allocator's
live-bytes counter (``_backend.memory_stats``), so nothing depends on the load."""

from __future__ import annotations

import gc

import pytest

import pyframe
from pyframe import _backend

N = 1 << 16  # elements: 256 KiB of float32, well above the 64 KiB under which Python's allocator serves


def live() -> int:
    gc.collect()
    return _backend.memory_stats()[0]


def _counting() -> bool:
    t = pyframe.empty(N)  # noqa: F841 - alive while the counters are read
    return _backend.memory_stats()[0] > 0


pytestmark = pytest.mark.skipif(not _counting(), reason="no allocator counters (AddressSanitizer build)")


def test_allocator_counters():
    pyframe.empty_cache()
    base, _, cached = _backend.memory_stats()
    assert cached == 0
    _backend.reset_peak_memory()
    a = pyframe.empty(N)  # class 256 KiB
    b = pyframe.empty(N + 1)  # 256 KiB + 4 bytes: the next class, 320 KiB
    now, peak, _ = _backend.memory_stats()
    assert now - base == 256 * 1024 + 320 * 1024 and peak == now
    del a
    gc.collect()
    now, peak, cached = _backend.memory_stats()
    assert now - base == 320 * 1024 and peak - base == 576 * 1024 and cached == 256 * 1024
    del b
    pyframe.empty_cache()
    assert _backend.memory_stats()[0] == base and _backend.memory_stats()[2] == 0


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_large_block_costs_about_its_size():
    # 6.3 MB, as an attention matrix of nanoGPT's: its size class is 7 MiB in an 8 MiB block; huge pages
    # advised over the whole block made all 8 MiB resident, now only the whole 2 MiB pages it writes are
    pyframe.empty_cache()
    n = 4 * 6 * 256 * 256
    before = _rss()
    t = pyframe.ones(n)
    grown = _rss() - before
    assert t[-1].item() == 1.0
    assert grown <= 4 * n + (1 << 20), grown
