"""Hostile checkpoint files: every truncation and byte flip of a saved checkpoint, and crafted headers; then
the torch-format and safetensors walk of ``hostile_torch.py``.

    python -m tools.fuzz.hostile            # both walks, the torch one shortened (make fuzz-short, a few seconds)
    python -m tools.fuzz.hostile --full     # every file of both walks
    python -m tools.fuzz.hostile --asan     # --full over the AddressSanitizer build of the core (make fuzz)

Each file must either load (a flip that the format cannot see, e.g. inside a JSON string, still gives
valid values) or be refused with a ``CheckpointError``; anything else (another exception, a crash, a
hang, a bool storage holding another byte) is counted as a failure. Prints
``hostile checkpoints: N files, R refused, L loaded, F failures``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import struct
import subprocess
import sys
import zlib

import numpy as np

import pyframe as pf
from pyframe.serialization import CheckpointError


def _sample() -> bytes:
    buf = io.BytesIO()
    model = {"w": pf.arange(6.0).reshape(2, 3), "mask": pf.tensor([True, False])}
    model["n"] = pf.tensor([1, 2], dtype=pf.int32)
    pf.save({"model": model, "step": 3, "name": "x"}, buf)
    return buf.getvalue()


def _crafted(good: bytes) -> list[bytes]:
    """Headers that pass the CRC but lie: wrong sizes, strides past the storage, bad dtypes, bool bytes."""
    (hlen,) = struct.unpack_from("<Q", good, 16)
    header = json.loads(good[24 : 24 + hlen])
    data = good[(24 + hlen + 63) // 64 * 64 :]
    out = []

    def craft(h: dict, d: bytes = data) -> bytes:
        hb = json.dumps(h).encode()
        return struct.pack("<8sIIQ", b"PYFRAME\x00", 1, zlib.crc32(hb), len(hb)) + hb + bytes(-(24 + len(hb)) % 64) + d

    edits = [
        ("tensors", 0, "shape", [1000]), ("tensors", 0, "stride", [2**62, 1]), ("tensors", 0, "offset", 2**40),
        ("tensors", 0, "shape", [-1, 3]), ("tensors", 0, "class", "os.system"), ("storages", 0, "dtype", "object"),
        ("storages", 0, "nbytes", 2**61), ("storages", 0, "offset", 1), ("tensors", 0, "storage", 9),
        ("tensors", 0, "requires_grad", "yes"), ("tensors", 2, "requires_grad", True), ("storages", 1, "crc32", -1),
    ]  # fmt: skip
    for key, i, field, value in edits:
        h = json.loads(json.dumps(header))
        if i < len(h[key]):
            h[key][i][field] = value
            out.append(craft(h))
    mask = next(i for i, s in enumerate(header["storages"]) if s["dtype"] == "bool")
    s = header["storages"][mask]
    d = bytearray(data)
    d[s["offset"]] = 2  # a bool byte that is neither 0 nor 1, with a matching CRC
    h = json.loads(json.dumps(header))
    h["storages"][mask]["crc32"] = zlib.crc32(bytes(d[s["offset"] : s["offset"] + s["nbytes"]]))
    out.append(craft(h, bytes(d)))
    out.append(craft({"format": 1, "object": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}, b""))
    return out


def _check(data: bytes) -> str:
    try:
        obj = pf.load(io.BytesIO(data))
    except CheckpointError:
        return "refused"
    except Exception as e:  # noqa: BLE001 - anything but CheckpointError is a failure
        return f"failure: {type(e).__name__}: {e}"
    mask = obj["model"]["mask"] if isinstance(obj, dict) and isinstance(obj.get("model"), dict) else None
    if isinstance(mask, pf.Tensor) and mask.dtype == pf.bool and not np.isin(mask.numpy().view(np.uint8), (0, 1)).all():
        return "failure: a bool tensor holds a byte other than 0 and 1"
    return "loaded"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz.hostile", description=__doc__.split("\n")[0])
    p.add_argument("--asan", action="store_true", help="--full over the AddressSanitizer build of the core")
    p.add_argument("--full", action="store_true", help="every truncation and flip of the torch-format samples")
    args = p.parse_args(argv)
    if args.asan and not os.environ.get("PYFRAME_FUZZ_CORE"):
        from tools.fuzz.asan import asan_env

        env = dict(os.environ, **asan_env())
        cmd = [sys.executable, "-m", "tools.fuzz.hostile", "--full"]
        return subprocess.run(cmd, env=env, check=False).returncode
    from tools.fuzz import hostile_torch

    good = _sample()
    files = [good[:n] for n in range(len(good))]  # every truncation
    for pos in range(len(good)):  # every byte flipped
        b = bytearray(good)
        b[pos] ^= 0xFF
        files.append(bytes(b))
    files += _crafted(good)
    counts = {"refused": 0, "loaded": 0, "failure": 0}
    for i, f in enumerate(files):
        verdict = _check(f)
        counts[verdict.split(":")[0]] += 1
        if verdict.startswith("failure"):
            print(f"file {i} ({len(f)} bytes): {verdict}")
    print(
        f"hostile checkpoints: {len(files)} files ({len(good)} truncations, {len(good)} byte flips, "
        f"{len(files) - 2 * len(good)} crafted), {counts['refused']} refused, {counts['loaded']} loaded, "
        f"{counts['failure']} failures"
    )
    torch_failed = hostile_torch.run(short=not (args.full or args.asan))
    return 1 if counts["failure"] or torch_failed else 0


if __name__ == "__main__":
    sys.exit(main())
