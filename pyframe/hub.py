"""torch.hub: checkpoints downloaded once into a cache and loaded (``load_state_dict_from_url``, what model files
call for pretrained weights), and models from a local repository's ``hubconf.py``.

The cache is ``$TORCH_HOME/hub`` (``~/.cache/torch/hub`` when unset, as torch's), so weights torch already downloaded
are found; pyframe's ``load`` reads torch's checkpoint files. Repositories on GitHub are not fetched: their
``hubconf.py`` imports torch and its models are torch code, so ``load`` takes a local directory
(``source="local"``), whose code may be written for pyframe."""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url", "load", "list", "help"]

_hub_dir: list[str | None] = [None]
_HASH = re.compile(r"-([a-f0-9]*)\.")  # torch's file names carry a prefix of their SHA-256: resnet18-f37072fd.pth


def get_dir() -> str:
    """Same as torch.hub.get_dir: where downloads are cached (``set_dir``'s, else ``$TORCH_HOME/hub``)."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    home = os.environ.get("TORCH_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Same as torch.hub.set_dir."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Same as torch.hub.download_url_to_file: ``url`` saved to ``dst`` through a temporary file in the same
    directory (a failed or interrupted download never leaves a partial ``dst``); with ``hash_prefix``, the file's
    SHA-256 must start with it, else RuntimeError and nothing is written."""
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    sha = hashlib.sha256()
    with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "pyframe.hub"})) as resp:
        total = int(resp.headers.get("Content-Length") or 0) or None
        bar = _progress(total, progress)
        fd, tmp_name = tempfile.mkstemp(dir=folder, suffix=".partial")
        try:
            with os.fdopen(fd, "wb") as tmp:
                while chunk := resp.read(1 << 16):
                    tmp.write(chunk)
                    sha.update(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha.hexdigest()}")')
            shutil.move(tmp_name, dst)
        finally:
            if bar is not None:
                bar.close()
            if os.path.exists(tmp_name):
                os.remove(tmp_name)


def _progress(total: int | None, wanted: bool):
    if not wanted:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm is the demo extra's; without it downloads are silent
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = True) -> dict:  # fmt: skip
    """Same as torch.hub.load_state_dict_from_url: the checkpoint at ``url``, downloaded into ``model_dir``
    (``get_dir()/checkpoints``) unless it is there already, then ``pyframe.load``-ed. ``check_hash`` compares
    the file's SHA-256 with the hex digits after the last ``-`` of its name, as torch's."""
    from pyframe.serialization.files import load as _load

    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    if not filename:
        raise ValueError(f"load_state_dict_from_url: no file name in {url!r}; pass file_name=")
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        match = _HASH.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)


def _hubconf(repo_dir: str, source: str):
    if source != "local":
        raise ValueError(
            f"hub: source={source!r} is not supported: a GitHub repository's hubconf.py builds torch models; clone it "
            "and pass its directory with source='local' if its code runs on pyframe (\"import pyframe as torch\")"
        )
    path = os.path.join(os.path.expanduser(repo_dir), "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"hub: no hubconf.py in {repo_dir!r}")
    spec = importlib.util.spec_from_file_location(f"hubconf_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def _entrypoints(module) -> builtins.list[str]:
    return [
        n for n, f in vars(module).items() if callable(f) and not n.startswith("_") and f.__module__ == module.__name__
    ]


def list(repo_or_dir: str, force_reload: bool = False, skip_validation: bool = False, trust_repo=None,  # noqa: A001
         verbose: bool = True, *, source: str = "local") -> builtins.list[str]:  # fmt: skip
    """Same as torch.hub.list for a local repository: the entry points its ``hubconf.py`` defines."""
    return _entrypoints(_hubconf(repo_or_dir, source))


def help(repo_or_dir: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo=None, *, source: str = "local") -> str:  # fmt: skip
    """Same as torch.hub.help for a local repository: the entry point's docstring."""
    return getattr(_hubconf(repo_or_dir, source), model).__doc__ or ""


def load(repo_or_dir: str, model: str, *args: Any, source: str = "local", trust_repo=None, force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:  # fmt: skip
    """Same as torch.hub.load with ``source="local"``: ``hubconf.<model>(*args, **kwargs)`` of the repository in
    the directory ``repo_or_dir``."""
    module = _hubconf(repo_or_dir, source)
    if model not in _entrypoints(module):
        raise RuntimeError(f"Cannot find callable {model} in hubconf; it has {', '.join(_entrypoints(module))}")
    return getattr(module, model)(*args, **kwargs)
