"""Development tools that are not part of the pyframe package (the fuzzer)."""
