"""The caching allocator: freed blocks are cached up to a bound below the machine's memory, and empty_cache
returns them."""

import os

import pyframe


def test_empty_cache_returns_cached_blocks():
    x = pyframe.zeros(1 << 20)  # 4 MiB: from the C allocator, cached when freed
    del x
    cached, limit = pyframe.memory_cached()
    assert cached >= 4 << 20
    assert 0 < limit <= 1 << 30 and limit <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 16
    pyframe.empty_cache()
    assert pyframe.memory_cached()[0] == 0
