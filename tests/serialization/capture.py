"""Run a program from tests/compat/programs under torch or pyframe and capture its training state.

    python -m tests.serialization.capture torch|pyframe PROGRAM OUTDIR

When the program's optimizers have stepped twice (the third ``zero_grad``), or at exit for a program without
one, every live top-level ``nn.Module``, optimizer and LR scheduler is found and their ``state_dict()``s are
written with the program's top-level tensors, then the process ends:

- ``OUTDIR/ckpt.pt``: the state dicts saved by the library itself (``torch.save``, or
  ``pyframe.save(..., format="torch")``), for the other library to load;
- ``OUTDIR/ckpt.npz``: every tensor in them as NumPy, keyed by its path, the ground truth for the comparison;
- ``OUTDIR/model_<i>.safetensors``: each model through its library's ``save_model`` (torch's
  ``safetensors.torch``, or ``pyframe.safetensors``), and ``model_<i>.npz`` its state dict.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import warnings
from pathlib import Path

import numpy as np


def flatten(obj, path: str, out: dict, is_tensor) -> None:
    """Every tensor in obj, by path; containers walked (no cycles in state dicts)."""
    if is_tensor(obj):
        if obj.device.type != "meta":  # a shape without data (a functional_call base) has nothing to round-trip
            out[path] = obj.detach().numpy().copy(order="C")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{path}[{k!r}]", out, is_tensor)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flatten(v, f"{path}[{i}]", out, is_tensor)


def capture(lib, outdir: Path, which: str, program_globals: dict) -> None:
    nn, optim = lib.nn, lib.optim
    sched_base = getattr(optim.lr_scheduler, "LRScheduler", None) or optim.lr_scheduler._LRScheduler
    with warnings.catch_warnings():  # isinstance on every object wakes torch's deprecated lazy attributes
        warnings.simplefilter("ignore")
        objs = [o for o in gc.get_objects() if isinstance(o, (nn.Module, optim.Optimizer, sched_base))]
    modules = [o for o in objs if isinstance(o, nn.Module)]
    children = {id(c) for m in modules for c in m.modules() if c is not m}
    models = [m for m in modules if id(m) not in children and len(m.state_dict())]
    # a model on the meta device (a functional_call base) is shapes without data: nothing to round-trip
    models = [m for m in models if all(t.device.type != "meta" for t in m.state_dict().values())]
    ckpt = {}
    for i, m in enumerate(models):
        ckpt[f"model_{i}_{type(m).__name__}"] = m.state_dict()
    for i, o in enumerate(o for o in objs if isinstance(o, optim.Optimizer)):
        ckpt[f"optim_{i}_{type(o).__name__}"] = o.state_dict()
    for i, s in enumerate(o for o in objs if isinstance(o, sched_base)):
        ckpt[f"sched_{i}_{type(s).__name__}"] = s.state_dict()
    # the program's own top-level tensors (the weights of the programs written without nn.Module)
    ckpt["globals"] = {k: v.detach() for k, v in program_globals.items() if isinstance(v, lib.Tensor)}
    if which == "torch":
        lib.save(ckpt, outdir / "ckpt.pt")
        from safetensors.torch import save_model
    else:
        lib.save(ckpt, outdir / "ckpt.pt", format="torch")
        from pyframe.safetensors import save_model
    flat: dict = {}
    flatten(ckpt, "obj", flat, lambda x: isinstance(x, lib.Tensor))
    np.savez(outdir / "ckpt.npz", **flat)
    for i, m in enumerate(models):
        save_model(m, str(outdir / f"model_{i}.safetensors"))
        np.savez(outdir / f"model_{i}.npz", **{k: v.detach().numpy() for k, v in m.state_dict().items()})
    (outdir / "done").write_text(str(len(models)))


def main() -> None:
    which, program, outdir = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()
    source = program.read_text()
    if which == "pyframe":
        from tests.compat.test_compat import as_pyframe

        source = as_pyframe(source)
        import pyframe as lib
    else:
        import torch as lib

        lib.set_num_threads(1)
    state = {"calls": 0, "done": False}

    def finish() -> None:
        if not state["done"]:
            state["done"] = True
            capture(lib, outdir, which, program_globals)

    original = lib.optim.Optimizer.zero_grad

    def zero_grad(self, *args, **kwargs):
        state["calls"] += 1
        if state["calls"] == 3:
            finish()
            sys.stdout.flush()
            os._exit(0)
        return original(self, *args, **kwargs)

    lib.optim.Optimizer.zero_grad = zero_grad
    program_globals = {"__name__": "__main__", "__file__": str(program)}
    atexit.register(finish)
    os.chdir(outdir)
    sys.argv = [str(program)]
    sys.path.insert(0, str(program.parent))
    exec(compile(source, str(program), "exec"), program_globals)


if __name__ == "__main__":
    main()
