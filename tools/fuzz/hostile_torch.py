"""Hostile torch-format and safetensors files for ``pyframe.load`` and ``pyframe.safetensors``.

    python -m tools.fuzz.hostile            # pyframe's own format, then these (every 4th cut and flip)
    python -m tools.fuzz.hostile --full     # every cut and flip (make fuzz: with --asan)

Every truncation and byte flip of a torch zip checkpoint, a legacy one and a safetensors file; pickles that
name ``os.system``, ``builtins.eval``, ``subprocess``, ``__reduce__`` chains, crafted ``_rebuild_tensor_v2``
sizes, strides and offsets; storages whose size disagrees with their zip member, duplicate and missing
members, compressed members and zip bombs; random mutations of the pickle repacked with valid CRCs; crafted
safetensors headers. Each file must be refused with a ``CheckpointError`` or load to valid values; anything
else is a failure, and so is any ``exec``, ``import``, ``os.system`` or ``subprocess`` event an audit hook
sees while the files load, or a peak memory more than ``MAX_GROWTH`` bytes above the start.
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import random
import resource
import struct
import sys
import time
import warnings
import zipfile
import zlib

import numpy as np

import pyframe as pf
import pyframe.safetensors as pst
from pyframe.serialization import CheckpointError, torch_writer

MAX_GROWTH = 256 << 20

_WATCH = ("exec", "import", "compile", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
          "subprocess.Popen", "ctypes.dlopen", "pickle.find_class", "builtins.input", "webbrowser")  # fmt: skip
_events: list = []
_recording = [False]


def _audit(event: str, args) -> None:
    if _recording[0] and event.startswith(_WATCH):
        _events.append(f"{event} {str(args)[:100]}")


# ---- the samples ------------------------------------------------------------------------------------


def _state():
    w = pf.arange(6.0).reshape(2, 3)
    model = {"w": w, "row": w[1], "t": w.t(), "mask": pf.tensor([True, False]), "n": pf.tensor([1, 2], dtype=pf.int32)}
    model["h"] = pf.tensor([1.5, -2.0], dtype=pf.float16)
    model["p"] = pf.nn.Parameter(pf.ones(2))
    model["scale"] = pf.nn.Parameter(pf.tensor(0.5))
    opt = {"state": {0: {"step": pf.tensor(3.0), "exp_avg": pf.zeros(2)}}, "param_groups": [{"lr": 0.1, "params": [0]}]}
    return {"model": model, "opt": opt, "milestones": collections.Counter({2: 1}), "step": 3, "name": "x"}


def torch_sample() -> bytes:
    buf = io.BytesIO()
    pf.save(_state(), buf, format="torch")
    return buf.getvalue()


class _LegacyPickler(torch_writer._Pickler):
    def persistent_id(self, obj):
        pid = super().persistent_id(obj)
        return None if pid is None else (*pid, None)  # the legacy format's view metadata


def legacy_sample(obj=None) -> bytes:
    """torch.save(obj, f, _use_new_zipfile_serialization=False), laid out as torch writes it."""
    out = io.BytesIO()
    for head in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
        pickle.dump(head, out, protocol=2)
    p = _LegacyPickler(out)
    p.dump(_state() if obj is None else obj)
    refs = list(p.storages.values())
    pickle.dump([r.key for r in refs], out, protocol=2)
    for r in refs:
        data = torch_writer._storage_bytes(r.storage, r.dtype)
        out.write(struct.pack("<q", r.storage.nbytes // r.dtype.itemsize))
        out.write(data)
    return out.getvalue()


def safetensors_sample() -> bytes:
    return pst.save(
        {"w": pf.arange(6.0).reshape(2, 3), "mask": pf.tensor([True, False]), "n": pf.tensor([1, 2], dtype=pf.int32)},
        metadata={"k": "v"},
    )


def members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(i.filename, z.read(i)) for i in z.infolist()]


def zip_of(items, method=zipfile.ZIP_STORED) -> bytes:
    """A zip of (name, bytes[, compress_type]) items, with valid CRCs."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", method) as z:
        warnings.simplefilter("ignore")  # duplicate names are made on purpose
        for item in items:
            name, data = item[0], item[1]
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = item[2] if len(item) > 2 else method
            z.writestr(info, data)
    return buf.getvalue()


# ---- pickle pieces ----------------------------------------------------------------------------------


def _glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _uni(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _int(x: int) -> bytes:
    if 0 <= x < 256:
        return b"K" + bytes([x])
    if -(2**31) <= x < 2**31:
        return b"J" + struct.pack("<i", x)
    raw = x.to_bytes((x.bit_length() + 8) // 8 or 1, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _tup(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def rebuild(offset, size, stride, numel=6, storage="FloatStorage", key="0", requires_grad=False) -> bytes:
    """{'w': _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())}."""
    pid = _tup(_uni("storage"), _glob("torch", storage), _uni(key), _uni("cpu"), _int(numel)) + b"Q"
    args = pid + _int(offset) + _tup(*map(_int, size)) + _tup(*map(_int, stride))
    args += b"\x88" if requires_grad is True else b"\x89" if requires_grad is False else requires_grad
    args += _glob("collections", "OrderedDict") + b")R"
    body = _glob("torch._utils", "_rebuild_tensor_v2") + b"(" + args + b"tR"
    return b"\x80\x02}(" + _uni("w") + body + b"u."


EXPLOITS = [
    _glob("os", "system") + _uni("echo pwned") + b"\x85R.",
    _glob("posix", "system") + _uni("echo pwned") + b"\x85R.",
    _glob("nt", "system") + _uni("echo pwned") + b"\x85R.",
    _glob("builtins", "eval") + _uni("print(1)") + b"\x85R.",
    _glob("__builtin__", "eval") + _uni("print(1)") + b"\x85R.",
    _glob("builtins", "exec") + _uni("import os") + b"\x85R.",
    _glob("builtins", "getattr") + _glob("builtins", "__import__") + _uni("os") + b"\x85R" + _uni("system") + b"\x86R.",
    _glob("builtins", "__import__") + _uni("os") + b"\x85R.",
    _glob("builtins", "compile") + _uni("1") + _uni("f") + _uni("eval") + b"\x87R.",
    _glob("builtins", "open") + _uni("/etc/passwd") + b"\x85R.",
    _glob("builtins", "bytearray") + _int(2**40) + b"\x85R.",  # an allowed name asked to allocate a terabyte
    _glob("subprocess", "Popen") + b"(" + _uni("true") + b"l\x85R.",
    _glob("subprocess", "check_output") + b"(" + _uni("true") + b"l\x85R.",
    _glob("commands", "getoutput") + _uni("true") + b"\x85R.",
    _glob("importlib", "import_module") + _uni("os") + b"\x85R.",
    _glob("pickle", "loads") + _uni("x") + b"\x85R.",
    _glob("shutil", "rmtree") + _uni("/tmp/nothing-here") + b"\x85R.",
    _glob("webbrowser", "open") + _uni("http://x") + b"\x85R.",
    _glob("ctypes", "CDLL") + _uni("libc.so.6") + b"\x85R.",
    _glob("numpy", "load") + _uni("x.npy") + b"\x85R.",
    _glob("numpy.core.multiarray", "_reconstruct") + b"N)R.",
    _glob("torch", "load") + _uni("x") + b"\x85R.",
    _glob("torch.serialization", "load") + _uni("x") + b"\x85R.",
    _glob("torch._utils", "_rebuild_tensor_v2") + _glob("builtins", "eval") + b"\x85R.",
    _glob("torch._utils", "_rebuild_parameter") + _glob("os", "system") + b"\x85R.",
    _glob("collections", "OrderedDict") + _glob("os", "system") + b"\x85R.",
    _glob("collections", "Counter") + b")R}" + _uni("__class__") + _glob("os", "system") + b"sb.",
    _glob("collections", "OrderedDict") + b")R}" + _uni("__reduce__") + _uni("x") + b"sb.",
    b"\x80\x02}" + b")R.",  # calling a dict the file built
    b"\x80\x02" + _uni("os.system") + b")R.",  # calling a str
    b"\x80\x02" + _glob("torch", "FloatStorage") + b")R.",  # calling a name that is only an argument
    b"\x80\x02" + _glob("torch", "FloatStorage") + b")\x81.",  # NEWOBJ of it
    b"\x80\x02]" + b"(" + _uni("os") + _uni("system") + b"\x93.",  # STACK_GLOBAL (protocol 4): not read
    b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00" + _uni("os") + b".",  # FRAME
    b"(" + _uni("os") + b"i" + b"os\nsystem\n.",  # INST
    b"(" + _glob("os", "system") + _uni("x") + b"o.",  # OBJ
    b"\x82\x01.",  # EXT1
    b"\x80\x02" + b"Q.",  # BINPERSID on an empty stack
    b"\x80\x02" + _tup(_uni("module"), _uni("os")) + b"Q.",  # a persistent id that is not a storage
    b"\x80\x02" + _int(5) + b"Q.",
    b"\x80\x02" + b"h\x05.",  # memo read never written
    b"\x80\x02" + b"(((((((((((((.",  # marks, no stop object
    b"\x80\x02" + b"]" * 20000 + b".",  # a stack of 20000 lists
    b"\x80\x02" + b"]q\x00" + b"h\x00h\x00\x86q\x00" * 60 + b".",  # nested pairs through the memo: 2**60 leaves
    b"\x80\x02" + b"]q\x00" + (b"h\x00" * 200 + b"e") * 200 + b".",  # APPENDS of a list onto itself
    b"\x80\x02" + b"(" * 20000 + b"t" * 20000 + b".",  # tuples 20000 deep: far past Python's recursion limit
    b"\x80\x02" + b"c" + b"A" * 100000 + b".",  # a GLOBAL without its end of line
    b"\x80\x02" + b"X\xff\xff\xff\xff" + b"a" * 100 + b".",  # a str longer than the pickle
    b"\x80\x02" + b"\x8b\xff\xff\xff\x7f" + b".",  # LONG4 of 2 GiB
]


def _rebuild_crafts() -> list[bytes]:
    """Sizes, strides and offsets past the 6-element storage, wrong types, huge values."""
    big = [2**31, 2**62, 2**63 - 1, 2**63, 2**64 + 1]
    cases = [
        (6, (1,), (1,)), (0, (7,), (1,)), (0, (2, 3), (4, 1)), (0, (3, 3), (3, 1)), (5, (2,), (1,)), (7, (0,), (1,)),
        (-1, (2,), (1,)), (0, (-1,), (1,)), (0, (2,), (-1,)), (0, (2, 2), (1,)), (0, (1,) * 9, (1,) * 9),
        (0, (2**62,), (1,)), (0, (2**62,), (0,)), (0, (2**31, 2**31, 4), (0, 0, 0)), (0, (6,), (2**62,)),
    ]  # fmt: skip
    cases += [(b, (1,), (1,)) for b in big] + [(0, (b,), (1,)) for b in big] + [(0, (2,), (b,)) for b in big]
    out = [rebuild(*c) for c in cases]
    out += [rebuild(0, (2,), (1,), numel=n) for n in (-1, 0, 7, 2**40, 2**63)]
    out += [rebuild(0, (2,), (1,), storage=s) for s in ("ByteStorage", "ComplexFloatStorage", "Storage", "os")]
    out += [rebuild(0, (2,), (1,), requires_grad=r) for r in (b"K\x02", b"N", _uni("yes"))]
    out += [rebuild(0, (2,), (1,), storage="LongStorage", requires_grad=True)]
    out += [rebuild(0, (2,), (1,), key=k) for k in ("1", "../0", "0\x00", "")]
    return out


# ---- the files --------------------------------------------------------------------------------------


def _mutate(rng: random.Random, pkl: bytes) -> bytes:
    b = bytearray(pkl)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] = rng.randrange(256)
        elif op == 1:
            b[i:i] = bytes([rng.choice(b"cR)b(tuQhqK\x85\x86\x87\x81.N\x88\x89}]sea")])
        elif op == 2 and b:
            del b[i : i + rng.randint(1, 8)]
        elif op == 3 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 16)]
        elif op == 4:
            e = rng.choice(EXPLOITS)
            b[i:i] = e[:-1]
        else:
            b[i : i + 4] = struct.pack("<i", rng.choice([-1, 2**31 - 1, 0, 7, 1 << 30]))
    return bytes(b)


def _torch_crafted(sample: bytes, rng: random.Random, n_random: int) -> list[bytes]:
    items = members(sample)
    names = [n for n, _ in items]
    prefix = names[0].rpartition("/")[0]
    pkl = dict(items)[f"{prefix}/data.pkl"]
    store = [(n, d) for n, d in items if n != f"{prefix}/data.pkl"]

    def repack(p: bytes, extra=(), drop=(), replace=None) -> bytes:
        out = [(f"{prefix}/data.pkl", p)] + [(n, (replace or {}).get(n, d)) for n, d in store if n not in drop]
        return zip_of(out + list(extra))

    storages = [n for n in names if "/data/" in n]
    out = [repack(e) for e in EXPLOITS] + [repack(r, drop=storages) for r in _rebuild_crafts()]
    out += [repack(r, drop=storages, extra=[(f"{prefix}/data/0", bytes(24))]) for r in _rebuild_crafts()]
    data0 = dict(items)[f"{prefix}/data/0"]
    out += [
        repack(pkl, extra=[(f"{prefix}/data.pkl", pkl)]),  # data.pkl twice
        repack(pkl, extra=[(f"{prefix}/data/0", data0)]),  # a storage twice
        repack(pkl, drop=[f"{prefix}/data/0"]),  # a storage missing
        repack(pkl, drop=[f"{prefix}/version"]),
        repack(pkl, replace={f"{prefix}/version": b"999\n"}),
        repack(pkl, replace={f"{prefix}/version": b"three"}),
        repack(pkl, replace={f"{prefix}/byteorder": b"middle"}),
        repack(pkl, replace={f"{prefix}/data/0": data0[:-4]}),  # the storage shorter than declared
        repack(pkl, replace={f"{prefix}/data/0": data0 + bytes(4)}),  # longer
        repack(pkl, replace={f"{prefix}/data/0": data0 * 1000}),
        repack(pkl, extra=[(f"{prefix}/constants.pkl", b"")]),  # a TorchScript archive
        zip_of([(n, d) for n, d in items if not n.endswith("data.pkl")]),  # no data.pkl at all
        zip_of([(f"{prefix}/data.pkl", pkl, zipfile.ZIP_DEFLATED)] + store),  # deflated pickle: fine
        zip_of([(f"{prefix}/data.pkl", pkl)] + [(n, d, zipfile.ZIP_DEFLATED) for n, d in store]),  # deflated storages
        zip_of([(f"{prefix}/data.pkl", pkl, zipfile.ZIP_BZIP2)] + store),
        zip_of([(f"{prefix}/data.pkl", pkl, zipfile.ZIP_LZMA)] + store),
        zip_of([(f"{prefix}/data.pkl", b"\x80\x02" + b"N" * (4 << 20) + b".", zipfile.ZIP_DEFLATED)]),  # 4M Nones
        zip_of([]),
        b"PK\x03\x04" + bytes(26),
        b"PK\x05\x06" + bytes(18),
    ]
    out += [_bomb(prefix, pkl, declared=len(pkl), inflates_to=64 << 20), _bomb(prefix, pkl, declared=300 << 20)]
    out += [_overlapping(items)]
    out += [repack(_mutate(rng, pkl)) for _ in range(n_random)]
    return out


def _bomb(prefix: str, pkl: bytes, declared: int, inflates_to: int | None = None) -> bytes:
    """A deflated data.pkl whose directory entry lies: it says ``declared`` bytes, and the stream inflates to
    ``inflates_to`` bytes of pickle (or to ``pkl``)."""
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    if inflates_to is None:
        raw = z.compress(pkl) + z.flush()
    else:
        chunk = b"N" * (1 << 20)
        raw = z.compress(b"\x80\x02") + b"".join(z.compress(chunk) for _ in range(inflates_to >> 20)) + z.flush()
    name = f"{prefix}/data.pkl".encode()
    crc = zlib.crc32(pkl)
    local = struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 8, 0, 0x21, crc, len(raw), declared, len(name), 0)
    central = struct.pack(
        "<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 0, 20, 0, 0, 8, 0, 0x21, crc, len(raw), declared, len(name), 0, 0, 0,
        0, 0, 0,
    )  # fmt: skip
    body = local + name + raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(name), len(body), 0)
    return body + central + name + end


def _overlapping(items: list) -> bytes:
    """The directory entry of data/1 pointing at data/0's local header (the overlapping-files zip bomb)."""
    good = bytearray(zip_of(items))
    z = zipfile.ZipFile(io.BytesIO(bytes(good)))
    infos, pos = z.infolist(), z.start_dir
    target = next(i.header_offset for i in infos if i.filename.endswith("/data/0"))
    for info in infos:
        n, m, k = struct.unpack_from("<3H", good, pos + 28)
        if info.filename.endswith("/data/1"):
            struct.pack_into("<L", good, pos + 42, target)
        pos += 46 + n + m + k
    return bytes(good)


def _safetensors_crafted(sample: bytes) -> list[bytes]:
    (n,) = struct.unpack_from("<Q", sample)
    header = json.loads(sample[8 : 8 + n])
    data = sample[8 + n :]

    def craft(h, d=data, raw=None) -> bytes:
        hb = raw if raw is not None else json.dumps(h).encode()
        return struct.pack("<Q", len(hb)) + hb + d

    out = []
    for key in ("w", "mask", "n"):
        for field, value in (("dtype", "BF16"), ("dtype", "F8_E4M3"), ("dtype", "X"), ("dtype", 1),
                             ("shape", [10**6]), ("shape", [-1]), ("shape", [2**64]), ("shape", "x"),
                             ("data_offsets", [0, 10**9]), ("data_offsets", [-1, 4]), ("data_offsets", [8, 4]),
                             ("data_offsets", [0, 0]), ("data_offsets", [0]), ("data_offsets", None)):  # fmt: skip
            h = json.loads(json.dumps(header))
            h[key][field] = value
            out.append(craft(h))
    h = json.loads(json.dumps(header))
    h["n"]["data_offsets"] = h["w"]["data_offsets"]  # overlapping tensors
    out.append(craft(h))
    h = json.loads(json.dumps(header))
    h["mask"]["dtype"] = "BOOL"
    out.append(craft(h, d=bytes([7]) * len(data)))  # bool bytes that are not 0 or 1
    out += [
        craft(None, raw=b"[]"), craft(None, raw=b"{"), craft(None, raw=b"\xff\xfe"), craft(None, raw=b"[" * 100000),
        craft(None, raw=b'{"__metadata__": {"k": 1}}'), craft(None, raw=b'{"a": {"dtype": "F32"}}'),
        struct.pack("<Q", 2**63) + b"{}", struct.pack("<Q", 200_000_000) + b"{}", b"",
        craft(None, raw=json.dumps(header).encode() + b" " * 10), craft(header, d=data + bytes(3)),
    ]  # fmt: skip
    return out


def files(short: bool) -> list[tuple[str, str, bytes]]:
    """(kind, family, bytes): every hostile file of the walk (``short``: every 4th truncation and flip of the
    torch samples and 200 pickle mutations instead of 1,500)."""
    rng = random.Random(0)
    zipped, legacy, st = torch_sample(), legacy_sample(), safetensors_sample()
    step = 4 if short else 1
    out = [("torch", "truncation", zipped[:i]) for i in range(0, len(zipped), step)]
    out += [("torch", "flip", _flip(zipped, i)) for i in range(0, len(zipped), step)]
    out += [("torch", "crafted", f) for f in _torch_crafted(zipped, rng, 200 if short else 1500)]
    out += [("torch", "legacy truncation", legacy[:i]) for i in range(0, len(legacy), step)]
    out += [("torch", "legacy flip", _flip(legacy, i)) for i in range(0, len(legacy), step)]
    head = legacy[: legacy.index(b".", legacy.index(b"little_endian")) + 1]
    out += [("torch", "legacy crafted", head + e + pickle.dumps([], protocol=2)) for e in EXPLOITS]
    out += [("safetensors", "truncation", st[:i]) for i in range(len(st))]
    out += [("safetensors", "flip", _flip(st, i)) for i in range(len(st))]
    out += [("safetensors", "crafted", f) for f in _safetensors_crafted(st)]
    return out


def _flip(data: bytes, i: int) -> bytes:
    b = bytearray(data)
    b[i] ^= 0xFF
    return bytes(b)


# ---- the walk ---------------------------------------------------------------------------------------


def _valid(obj) -> str | None:
    """None, or what is wrong with a loaded object (a bool tensor holding a byte other than 0 and 1)."""
    stack, seen = [obj], set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, pf.Tensor):
            if x.dtype == pf.bool and x.numel() and not np.isin(x.numpy().view(np.uint8), (0, 1)).all():
                return "a bool tensor holds a byte other than 0 and 1"
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return None


def check(kind: str, data: bytes) -> str:
    try:
        obj = pst.load(data) if kind == "safetensors" else pf.load(io.BytesIO(data))
    except CheckpointError:
        return "refused"
    except Exception as e:  # noqa: BLE001 - anything but CheckpointError is a failure
        return f"failure: {type(e).__name__}: {str(e)[:200]}"
    problem = _valid(obj)
    return f"failure: {problem}" if problem else "loaded"


def run(short: bool = False) -> int:
    """Walk every file; print the summary; 1 when any file failed, code ran or memory grew too far."""
    sys.addaudithook(_audit)
    for kind, data in (("torch", torch_sample()), ("torch", legacy_sample()), ("safetensors", safetensors_sample())):
        if check(kind, data) != "loaded":  # also imports whatever loading imports, before recording starts
            print(f"hostile torch/safetensors: the {kind} sample itself does not load")
            return 1
    all_files = files(short)
    counts = collections.Counter()
    start_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.monotonic()
    for i, (kind, family, data) in enumerate(all_files):
        _events.clear()
        _recording[0] = True
        try:
            verdict = check(kind, data)
        finally:
            _recording[0] = False
        if _events:
            verdict = f"failure: code ran while loading: {_events[:3]}"
            counts["code ran"] += 1
        counts[verdict.split(":")[0]] += 1
        counts[kind] += 1
        if verdict.startswith("failure"):
            print(f"file {i} ({kind}, {family}, {len(data)} bytes): {verdict}")
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - start_rss
    if growth > MAX_GROWTH:
        counts["failure"] += 1
        print(f"hostile torch/safetensors: peak memory grew by {growth >> 20} MiB (limit {MAX_GROWTH >> 20})")
    print(
        f"hostile torch/safetensors files: {len(all_files)} files ({counts['torch']} torch, {counts['safetensors']} "
        f"safetensors), {counts['refused']} refused, {counts['loaded']} loaded, {counts['failure']} failures, "
        f"{counts['code ran']} ran code, peak memory +{max(growth, 0) >> 20} MiB, {time.monotonic() - t0:.1f} s"
    )
    return 1 if counts["failure"] else 0
