"""pyframe.hub: checkpoints downloaded once into the cache, checked against the hash in their name, loaded; a local
repository's hubconf.py entry points. Downloads use file:// URLs, so no network is needed."""

import pytest

import pyframe


def _checkpoint(tmp_path, name):
    src = tmp_path / "remote" / name
    src.parent.mkdir()
    pyframe.save({"w": pyframe.arange(3.0)}, src)
    return src


def test_load_state_dict_from_url_downloads_once(tmp_path):
    src = _checkpoint(tmp_path, "weights.pth")
    cache = tmp_path / "cache"
    sd = pyframe.hub.load_state_dict_from_url(src.as_uri(), model_dir=str(cache), progress=False)
    assert sd["w"].tolist() == [0.0, 1.0, 2.0] and (cache / "weights.pth").exists()
    src.unlink()  # the second call is served from the cache
    from pyframe.utils.model_zoo import load_url

    assert load_url(src.as_uri(), model_dir=str(cache), progress=False)["w"].shape == (3,)


def test_check_hash_refuses_a_file_whose_digest_does_not_match(tmp_path):
    import hashlib

    good = _checkpoint(tmp_path, "w.pth")
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    named = good.with_name(f"model-{digest[:8]}.pth")
    good.rename(named)
    cache = tmp_path / "cache"
    assert pyframe.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(cache), check_hash=True,
                                                progress=False)["w"].shape == (3,)  # fmt: skip
    wrong = named.with_name("model-00000000.pth")
    named.rename(wrong)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        pyframe.hub.load_state_dict_from_url(wrong.as_uri(), model_dir=str(cache), check_hash=True, progress=False)
    assert not (cache / "model-00000000.pth").exists()
    assert not list(cache.glob("*.partial"))


def test_local_hubconf_entry_points(tmp_path):
    (tmp_path / "hubconf.py").write_text(
        "import pyframe as torch\n\n"
        "def tiny(width=2):\n    'A one-layer model.'\n    return torch.nn.Linear(width, 1)\n"
    )
    assert pyframe.hub.list(str(tmp_path)) == ["tiny"]
    assert pyframe.hub.help(str(tmp_path), "tiny") == "A one-layer model."
    assert pyframe.hub.load(str(tmp_path), "tiny", width=3).in_features == 3
    with pytest.raises(RuntimeError, match="Cannot find callable"):
        pyframe.hub.load(str(tmp_path), "huge")
    with pytest.raises(ValueError, match="source='local'"):
        pyframe.hub.load("pytorch/vision", "resnet18", source="github")


def test_get_and_set_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    assert pyframe.hub.get_dir() == str(tmp_path / "th" / "hub")
    pyframe.hub.set_dir(tmp_path / "mine")
    try:
        assert pyframe.hub.get_dir() == str(tmp_path / "mine")
    finally:
        pyframe.hub._hub_dir[0] = None
