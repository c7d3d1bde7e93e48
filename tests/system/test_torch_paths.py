"""torch's module paths outside nn that programs import (``torch.optim.adamw``, ``torch.utils.data._utils.collate``,
``torch.types``, ``torch._dynamo``, ``torch.compiler``, ``torch.distributed.elastic...errors``): each resolves, to
pyframe's own objects, and does what torch's does."""

import importlib
import json

import pytest

import pyframe


@pytest.mark.parametrize(("path", "name", "target"), [
    ("pyframe.optim.adamw", "AdamW", "AdamW"), ("pyframe.optim.rmsprop", "RMSprop", "RMSprop"),
    ("pyframe.optim.adagrad", "Adagrad", "Adagrad"), ("pyframe.optim.adadelta", "Adadelta", "Adadelta"),
    ("pyframe.optim.adamax", "Adamax", "Adamax"), ("pyframe.optim.nadam", "NAdam", "NAdam"),
    ("pyframe.optim.radam", "RAdam", "RAdam"),
])  # fmt: skip
def test_optimizer_files_of_torch(path, name, target):
    assert getattr(importlib.import_module(path), name) is getattr(pyframe.optim, target)


def test_required_sentinel_and_old_scheduler_base():
    from pyframe.optim.lr_scheduler import LRScheduler, _LRScheduler
    from pyframe.optim.optimizer import required

    class Custom(pyframe.optim.Optimizer):  # the pattern torch's docs show for custom optimizers
        def __init__(self, params, lr=required):
            if lr is required:
                raise ValueError("lr is required")
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="required"):
        Custom([pyframe.nn.Parameter(pyframe.ones(1))])
    assert Custom([pyframe.nn.Parameter(pyframe.ones(1))], lr=0.1).defaults["lr"] == 0.1
    assert issubclass(_LRScheduler, LRScheduler)


def test_data_utils_collate_path():
    from pyframe.utils.data._utils.collate import default_collate

    assert default_collate is pyframe.utils.data.default_collate
    assert default_collate([pyframe.ones(2), pyframe.zeros(2)]).shape == (2, 2)
    assert importlib.import_module("pyframe.utils.data._utils.worker").get_worker_info() is None


def test_types_dynamo_and_compiler():
    from pyframe.types import Number, _size

    assert isinstance(3, Number.__args__) and _size is not None
    pyframe._dynamo.config.suppress_errors = True
    assert pyframe._dynamo.config.suppress_errors
    pyframe._dynamo.reset()

    @pyframe._dynamo.disable
    def f(x):
        return x + 1

    assert f(1) == 2 and pyframe.compiler.disable(recursive=False)(f) is f and not pyframe.compiler.is_compiling()


def test_elastic_record_writes_the_error_file(tmp_path, monkeypatch):
    from pyframe.distributed.elastic.multiprocessing.errors import record

    @record
    def main(fail):
        if fail:
            raise ValueError("rank 1 broke")
        return "ok"

    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / "error.json"))
    assert main(False) == "ok" and not (tmp_path / "error.json").exists()
    with pytest.raises(ValueError, match="rank 1 broke"):
        main(True)
    data = json.loads((tmp_path / "error.json").read_text())
    assert data["message"]["message"] == "ValueError: rank 1 broke"
    assert "raise ValueError" in data["message"]["extraInfo"]["py_callstack"]


def test_every_submodule_is_an_attribute_of_its_parent():
    # torch's subpackages are attributes after `import torch` (`torch.fx.symbolic_trace(f)`,
    # `torch.nn.attention.SDPBackend`) with no import of their own: every pyframe module must be reachable the same
    # way, checked in a fresh interpreter so that nothing imported it before
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(pyframe.__file__).parent
    paths = []
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(root).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts and not any(part.startswith("_") for part in parts) and parts[-1] != "__main__":
            paths.append(".".join(parts))
    code = (
        "import json, sys, pyframe\n"
        "bad = []\n"
        "for path in json.loads(sys.argv[1]):\n"
        "    obj = pyframe\n"
        "    for part in path.split('.'):\n"
        "        try:\n"
        "            obj = getattr(obj, part)\n"
        "        except AttributeError as e:\n"
        "            bad.append(f'{path}: {e}')\n"
        "            break\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(paths)], capture_output=True, text=True, check=True)
    assert len(paths) > 100 and json.loads(out.stdout) == []
    with pytest.raises(AttributeError, match="no attribute 'no_such_module'"):
        pyframe.fx.no_such_module  # noqa: B018
    assert not hasattr(pyframe.nn, "__wrapped__")


def test_torch_version_module():
    # programs print torch.version.cuda or branch on it to pick a device
    assert pyframe.version.__version__ == pyframe.__version__
    assert pyframe.version.cuda is None and pyframe.version.hip is None and pyframe.version.debug is False
