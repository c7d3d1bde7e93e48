"""uint8, int8, int16 and bfloat16 end to end: the dtype objects, promotion over all ten dtypes, casts between
every pair, bfloat16's rounding, NumPy interop, arithmetic, reductions, indexing, matmul, iinfo/finfo, repr and
item; torch (importable) is the oracle wherever it is asked."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import pyframe

NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
NEW = ("uint8", "int8", "int16", "bfloat16")
SMALL_INTS = ("uint8", "int8", "int16")


def dt(name: str) -> pyframe.dtype:
    return getattr(pyframe, "bool" if name == "bool" else name)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, rounded to nearest even (NaN as c10::BFloat16's 0x7fc0)."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), r)


def _nan_bits_equal(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """bfloat16 patterns with every NaN made 0x7fc0: torch's NaN bits depend on its loop (0xffff when vectorized,
    0x7fc0 in scalar tails), so only NaN-ness is compared."""
    got, want = got.view(np.uint16).copy(), want.view(np.uint16).copy()
    for a in (got, want):
        a[(a & 0x7FFF) > 0x7F80] = 0x7FC0
    return got, want


def test_dtype_objects():
    assert pyframe.uint8.itemsize == 1 and pyframe.int8.itemsize == 1
    assert pyframe.int16.itemsize == 2 and pyframe.bfloat16.itemsize == 2
    assert pyframe.short is pyframe.int16
    assert pyframe.bfloat16.is_floating_point and not pyframe.uint8.is_floating_point
    assert not pyframe.uint8.is_signed and pyframe.int8.is_signed and pyframe.bfloat16.is_signed
    assert not pyframe.bool.is_signed
    assert repr(pyframe.bfloat16) == "pyframe.bfloat16" and pyframe.uint8 == "uint8" and pyframe.int16 == "short"
    assert pyframe.ones(2).byte().dtype == pyframe.uint8
    assert pyframe.ones(2).char().dtype == pyframe.int8
    assert pyframe.ones(2).short().dtype == pyframe.int16
    assert pyframe.ones(2).bfloat16().dtype == pyframe.bfloat16
    assert pyframe.ones(2).byte().type() == "pyframe.ByteTensor"
    assert pyframe.ones(2).type("torch.ShortTensor").dtype == pyframe.int16
    assert pyframe.ByteTensor([1, 2]).dtype == pyframe.uint8
    assert isinstance(pyframe.zeros(2, dtype=pyframe.bfloat16), pyframe.BFloat16Tensor)
    assert pyframe.CharTensor(3).tolist() == [0, 0, 0]


def test_promotion_table_by_hand():
    p = pyframe.promote_types
    assert p(pyframe.uint8, pyframe.int8) == pyframe.int16
    assert p(pyframe.uint8, pyframe.int16) == pyframe.int16
    assert p(pyframe.uint8, pyframe.bool) == pyframe.uint8
    assert p(pyframe.int8, pyframe.int32) == pyframe.int32
    assert p(pyframe.bfloat16, pyframe.float16) == pyframe.float32
    assert p(pyframe.bfloat16, pyframe.int64) == pyframe.bfloat16
    assert p(pyframe.bfloat16, pyframe.float64) == pyframe.float64
    u8 = pyframe.tensor([1, 2], dtype=pyframe.uint8)
    assert (u8 + 1.5).dtype == pyframe.float32  # an int tensor and a float number: the default float
    assert (u8 + pyframe.tensor(1, dtype=pyframe.int8)).dtype == pyframe.uint8  # 0-d of one category: no lift


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_result_type_over_all_pairs_matches_torch(torch):
    """Every pair of the ten dtypes, as dimensioned tensors, a dimensioned with a 0-d tensor, and a tensor with
    Python numbers."""
    for a in NAMES:
        for b in NAMES:
            ta, tb = getattr(torch, a), getattr(torch, b)
            assert pyframe.promote_types(dt(a), dt(b)).name == str(torch.promote_types(ta, tb))[6:], (a, b)
            cases = [
                (torch.ones(2, dtype=ta), torch.ones(3, 1, dtype=tb), pyframe.ones(2, dtype=dt(a)),
                 pyframe.ones(3, 1, dtype=dt(b))),
                (torch.ones(2, dtype=ta), torch.tensor(1, dtype=tb), pyframe.ones(2, dtype=dt(a)),
                 pyframe.tensor(1, dtype=dt(b))),
            ]  # fmt: skip
            for x, y, px, py in cases:
                expected = str(torch.result_type(x, y))[6:]
                assert pyframe.result_type(px, py).name == expected, (a, b)
                assert (px * py).dtype.name == str((x * y).dtype)[6:], (a, b)
        for s in (True, 3, 2.5):
            expected = str(torch.result_type(torch.ones(2, dtype=getattr(torch, a)), s))[6:]
            assert pyframe.result_type(pyframe.ones(2, dtype=dt(a)), s).name == expected, (a, s)


def _probe_values(name: str) -> np.ndarray:
    """Values that exercise a cast from float64: fractions, negatives, out-of-range, inf and NaN."""
    return np.array([
        0.0, -0.0, 1.5, -1.5, 2.5, 127.9, 128.0, -129.0, 255.0, 256.0, 300.0, -1.0, 40000.0, -40000.0, 70000.5,
        1e10, 3.1e38, 3.4e38, np.inf, -np.inf, np.nan, 1.00390625, 1.01171875, 1e-40,
    ])  # fmt: skip


def test_casts_between_every_pair_match_torch(torch):
    src64 = _probe_values("float64")
    for a in NAMES:
        ta = torch.from_numpy(src64).to(getattr(torch, a))
        pa = pyframe.from_numpy(src64).to(dt(a))
        for b in NAMES:
            tb, pb = ta.to(getattr(torch, b)), pa.to(dt(b))
            assert pb.dtype == dt(b)
            got = pb.view(pyframe.int16) if b == "bfloat16" else pb
            want = tb.view(torch.int16) if b == "bfloat16" else tb
            if b == "bfloat16":
                g, w = _nan_bits_equal(got.numpy(), want.numpy())
                np.testing.assert_array_equal(g, w, err_msg=f"{a} -> {b}")
            elif a in ("float32", "float64", "float16", "bfloat16") and b in SMALL_INTS + ("int32", "int64"):
                # C leaves float -> int undefined past the range: compare the values torch defines
                keep = np.isfinite(src64) & (np.abs(src64) < 2**31)
                got, want = got.numpy()[keep], want.numpy()[keep]
                np.testing.assert_array_equal(got, want, err_msg=f"{a} -> {b}")
            else:
                np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{a} -> {b}")


def test_bfloat16_rounds_to_nearest_even_like_torch(torch):
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(4000).astype(np.float32),
        (rng.standard_normal(1000) * 1e30).astype(np.float32),
        # exact ties: the low 16 bits 0x8000, even and odd upper halves
        (np.arange(1000, dtype=np.uint32) << 16 | 0x8000).astype(np.uint32).view(np.float32) * 1,
        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38], dtype=np.float32),
    ])  # fmt: skip
    x = x[np.isfinite(x) | np.isnan(x) | np.isinf(x)]
    got = pyframe.from_numpy(x).to(pyframe.bfloat16).view(pyframe.int16).numpy().view(np.uint16)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(*_nan_bits_equal(got, want))
    np.testing.assert_array_equal(got, bf16_bits(x))
    back = pyframe.from_numpy(x).to(pyframe.bfloat16).float().numpy()
    np.testing.assert_array_equal(back, torch.from_numpy(x).to(torch.bfloat16).float().numpy())


def test_bfloat16_cast_of_every_upper_half_dense_and_strided():
    """Every float32 upper half with low halves around the tie, NaNs of any sign and payload included: the dense
    (vectorized) and the strided loop round alike, to nearest even, every NaN to 0x7fc0."""
    upper = np.arange(1 << 16, dtype=np.uint32) << 16
    bits = (upper[:, None] | np.array([0, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)).ravel()
    x = bits.view(np.float32)
    want = bf16_bits(x)
    dense = pyframe.from_numpy(x).to(pyframe.bfloat16).view(pyframe.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(dense, want)
    spread = np.zeros(2 * x.size, dtype=np.float32)
    spread[::2] = x
    strided = pyframe.from_numpy(spread)[::2].to(pyframe.bfloat16).view(pyframe.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(strided, want)


def test_numpy_interop():
    for name in SMALL_INTS:
        arr = np.array([[1, 2], [3, 4]], dtype=name)
        t = pyframe.from_numpy(arr)
        assert t.dtype == dt(name)
        t[0, 0] = 9  # shares memory
        assert arr[0, 0] == 9 and t.numpy().dtype == np.dtype(name)
        assert pyframe.tensor(arr).dtype == dt(name) and pyframe.as_tensor(arr).dtype == dt(name)
    image = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    x = pyframe.from_numpy(image).permute(2, 0, 1).float() / 255
    assert x.dtype == pyframe.float32 and x.shape == (3, 2, 2)
    assert x[1, 1, 0].item() == np.float32(image[1, 0, 1]) / np.float32(255)
    b = pyframe.tensor([1.0, 2.5, 3.3], dtype=pyframe.bfloat16)
    with pytest.raises(TypeError, match="BFloat16"):
        b.numpy()
    assert b.tolist() == [1.0, 2.5, 3.296875]
    assert b[2].item() == 3.296875 and isinstance(b[2].item(), float)
    assert pyframe.tensor(np.array([1, 2], dtype=np.uint16), dtype=pyframe.bfloat16).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        pyframe.from_numpy(np.zeros(2, dtype=np.uint16))  # NumPy's uint16 is not bfloat16
    assert pyframe.tensor([b[0], b[1]]).dtype == pyframe.bfloat16  # tensors inside data keep their dtype


def test_creation_range_rules_as_torch():
    assert pyframe.tensor([-1, 255], dtype=pyframe.uint8).tolist() == [255, 255]  # uint8 wraps -255..-1
    assert pyframe.full((1,), -128, dtype=pyframe.uint8).tolist() == [128]
    for bad, d in ((256, pyframe.uint8), (-256, pyframe.uint8), (128, pyframe.int8), (40000, pyframe.int16)):
        with pytest.raises(RuntimeError, match="out of range"):
            pyframe.tensor([bad], dtype=d)
        with pytest.raises(RuntimeError, match="out of range"):
            pyframe.full((1,), bad, dtype=d)
    assert pyframe.full((1,), 1e39, dtype=pyframe.bfloat16).tolist() == [float("inf")]
    assert pyframe.full((1,), 70000.0, dtype=pyframe.bfloat16).tolist() == [70144.0]
    assert pyframe.arange(5, dtype=pyframe.int8).tolist() == [0, 1, 2, 3, 4]
    assert pyframe.zeros(3, dtype=pyframe.bfloat16).sum().dtype == pyframe.bfloat16


def test_integer_arithmetic_wraps_as_torch():
    u = pyframe.tensor([250], dtype=pyframe.uint8)
    assert (u + 10).tolist() == [4] and (u + 300).tolist() == [38] and (u - 251).tolist() == [255]
    assert (u + (-1)).tolist() == [249] and (-u).tolist() == [6]
    assert (u * 2.5).dtype == pyframe.float32 and (u / 2).tolist() == [125.0]
    i8 = pyframe.tensor([-128, 127, 7], dtype=pyframe.int8)
    assert (i8 + 1).tolist() == [-127, -128, 8]
    assert (i8 // 2).tolist() == [-64, 63, 3] and (i8 % 3).tolist() == [1, 1, 1]
    assert i8.abs().tolist() == [-128, 127, 7]
    assert (i8 * i8).tolist() == [0, 1, 49]
    assert (pyframe.tensor([300, -5], dtype=pyframe.int16) * 200).tolist() == [-5536, -1000]
    with pytest.raises(RuntimeError, match="division by zero"):
        pyframe.tensor([1], dtype=pyframe.uint8) // pyframe.tensor([0], dtype=pyframe.uint8)


def test_bfloat16_arithmetic_computes_in_float32_and_rounds_once():
    x = pyframe.tensor([1.0, 3.0, 100.0], dtype=pyframe.bfloat16)
    y = pyframe.tensor([0.00390625, 0.1, 0.5], dtype=pyframe.bfloat16)
    xf, yf = x.float().numpy(), y.float().numpy()
    for got, want in (((x + y), xf + yf), ((x * y), xf * yf), ((x / y), xf / yf), (x.sqrt(), np.sqrt(xf)),
                      ((x * 1.001), xf * np.float32(1.001))):  # fmt: skip
        assert got.dtype == pyframe.bfloat16
        np.testing.assert_array_equal(got.view(pyframe.int16).numpy().view(np.uint16), bf16_bits(want))
    assert (x > 2.0).tolist() == [False, True, True]


def test_reductions():
    u = pyframe.tensor([[200, 100], [3, 4]], dtype=pyframe.uint8)
    assert u.sum().dtype == pyframe.int64 and u.sum().item() == 307
    assert u.sum(0).tolist() == [203, 104] and u.prod().dtype == pyframe.int64
    assert u.max().dtype == pyframe.uint8 and u.max().item() == 200 and u.argmin().item() == 2
    assert u.min(1).values.tolist() == [100, 3] and u.cumsum(0).dtype == pyframe.int64
    assert u.any() and not pyframe.zeros(2, dtype=pyframe.int8).any()
    with pytest.raises(TypeError, match="floating point"):
        u.mean()
    i16 = pyframe.tensor([-300, 5, 7], dtype=pyframe.int16)
    assert i16.max().item() == 7 and i16.min().item() == -300 and i16.sort().values.tolist() == [-300, 5, 7]
    b = pyframe.tensor([1.0, 2.0, 4.0, 8.5], dtype=pyframe.bfloat16)
    assert b.sum().dtype == pyframe.bfloat16 and b.sum().item() == 15.5
    assert b.mean().item() == 3.875 and b.max().item() == 8.5
    assert b.var().dtype == pyframe.bfloat16 and b.norm().dtype == pyframe.bfloat16
    assert b.softmax(0).dtype == pyframe.bfloat16
    assert abs(b.softmax(0).float().sum().item() - 1) < 1e-2
    wide = pyframe.arange(40000).to(pyframe.int16)  # past the parallel grain: wraps as torch
    assert wide.sum().item() == sum(((v + 32768) % 65536) - 32768 for v in range(40000))


def test_indexing_gather_where_cat():
    for name in NEW:
        x = pyframe.arange(12).reshape(3, 4).to(dt(name))
        assert x[1].tolist() == [4.0, 5.0, 6.0, 7.0] if name == "bfloat16" else x[1].tolist() == [4, 5, 6, 7]
        assert x[:, 1].dtype == dt(name) and x[x > 9].tolist() == [10, 11]
        assert x.gather(1, pyframe.tensor([[0], [3], [1]])).tolist() == [[0], [7], [9]]
        w = pyframe.where(x > 5, x, pyframe.zeros(1, dtype=dt(name)))
        assert w.dtype == dt(name) and w.sum().item() == sum(range(6, 12))
        c = pyframe.cat([x, x[:1]])
        assert c.dtype == dt(name) and c.shape == (4, 4)
        y = x.clone()
        y[0] = 5
        y.index_add_(0, pyframe.tensor([2]), x[:1])
        assert y[0].tolist() == [5, 5, 5, 5] and y[2].tolist() == [8, 10, 12, 14]
        assert x.t().contiguous().flip(0).shape == (4, 3)
        assert pyframe.nonzero(x).shape == (11, 2)
        assert x.masked_fill(x < 2, 9).tolist()[0] == [9, 9, 2, 3]


def test_matmul():
    a = pyframe.tensor([[1, 2], [3, 4]], dtype=pyframe.uint8)
    assert (a @ a).tolist() == [[7, 10], [15, 22]] and (a @ a).dtype == pyframe.uint8
    big = pyframe.full((2, 2), 100, dtype=pyframe.uint8)
    assert (big @ big).tolist() == [[32, 32], [32, 32]]  # 20000 wrapped to a byte
    b = pyframe.tensor([[1.0, 2.0], [3.0, 0.5]], dtype=pyframe.bfloat16, requires_grad=True)
    y = b @ b
    assert y.dtype == pyframe.bfloat16 and y.tolist() == [[7.0, 3.0], [4.5, 6.25]]
    y.sum().backward()
    assert b.grad.dtype == pyframe.bfloat16 and b.grad.tolist() == [[7.0, 7.5], [5.5, 6.0]]


def test_iinfo_finfo(torch):
    for name in SMALL_INTS:
        i, ti = pyframe.iinfo(dt(name)), torch.iinfo(getattr(torch, name))
        assert (i.min, i.max, i.bits) == (ti.min, ti.max, ti.bits)
    f, tf = pyframe.finfo(pyframe.bfloat16), torch.finfo(torch.bfloat16)
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(f, attr) == getattr(tf, attr), attr
    with pytest.raises(TypeError):
        pyframe.iinfo(pyframe.bfloat16)
    with pytest.raises(TypeError):
        pyframe.finfo(pyframe.uint8)


def test_repr_and_item_match_torch(torch):
    values = [[0.0, 1.5, -3.25], [100.0, 0.1, 7.0]]
    for name in NEW:
        t = torch.tensor(values).to(getattr(torch, name))
        p = pyframe.tensor(values).to(dt(name))
        assert repr(p) == repr(t).replace("torch.", "pyframe."), name
        assert p[1, 1].item() == t[1, 1].item() and type(p[1, 1].item()) is type(t[1, 1].item())
        assert p.tolist() == t.tolist()


def test_elementwise_ops_match_torch(torch):
    rng = np.random.default_rng(5)
    for name in NEW:
        if name == "bfloat16":
            a_np = (rng.standard_normal(64) * 4).astype(np.float32)
            b_np = (rng.standard_normal(64) * 4).astype(np.float32)
        else:
            info = np.iinfo(name)
            a_np = rng.integers(info.min, info.max, 64, endpoint=True).astype(name)
            b_np = rng.integers(1, 9, 64).astype(name)
        ta, tb = torch.from_numpy(a_np).to(getattr(torch, name)), torch.from_numpy(b_np).to(getattr(torch, name))
        pa, pb = pyframe.from_numpy(a_np).to(dt(name)), pyframe.from_numpy(b_np).to(dt(name))
        for op in ("add", "sub", "mul", "maximum", "minimum", "eq", "lt", "ge", "floor_divide", "remainder", "div"):
            got, want = getattr(pyframe, op)(pa, pb), getattr(torch, op)(ta, tb)
            assert str(want.dtype)[6:] == got.dtype.name, (op, name)
            np.testing.assert_array_equal(np.array(got.tolist()), np.array(want.tolist()), err_msg=f"{op} {name}")
        for op in ("neg", "abs", "sign", "square", "relu"):
            got, want = getattr(pyframe, op)(pa), getattr(torch, op)(ta)
            np.testing.assert_array_equal(np.array(got.tolist()), np.array(want.tolist()), err_msg=f"{op} {name}")
        for op in ("exp", "sqrt", "sin", "sigmoid", "tanh"):  # integers compute in float32, as torch
            got, want = getattr(pyframe, op)(pa), getattr(torch, op)(ta)
            assert str(want.dtype)[6:] == got.dtype.name, (op, name)
            np.testing.assert_allclose(np.array(got.tolist()), np.array(want.tolist()), rtol=1e-2, atol=1e-6,
                                       equal_nan=True, err_msg=f"{op} {name}")  # fmt: skip


def test_serialization_round_trips(tmp_path):
    d = {
        "u8": pyframe.tensor([0, 7, 255], dtype=pyframe.uint8),
        "i8": pyframe.tensor([-128, 5], dtype=pyframe.int8),
        "i16": pyframe.tensor([-300, 30000], dtype=pyframe.int16),
        "bf": pyframe.tensor([1.5, -2.25, 3.3], dtype=pyframe.bfloat16),
    }
    for fmt in ("pyframe", "torch"):
        buf = io.BytesIO()
        pyframe.save(d, buf, format=fmt) if fmt == "torch" else pyframe.save(d, buf)
        back = pyframe.load(io.BytesIO(buf.getvalue()))
        for k, v in d.items():
            assert back[k].dtype == v.dtype and back[k].tolist() == v.tolist(), (fmt, k)
    back = pickle.loads(pickle.dumps(d["bf"]))
    assert back.dtype == pyframe.bfloat16 and back.tolist() == d["bf"].tolist()


def test_torch_checkpoints_both_ways(torch, tmp_path):
    t = {
        "u8": torch.tensor([0, 7, 255], dtype=torch.uint8), "i8": torch.tensor([-128, 5], dtype=torch.int8),
        "i16": torch.tensor([-300, 30000], dtype=torch.int16), "bf": torch.randn(2, 3).bfloat16(),
    }  # fmt: skip
    torch.save(t, tmp_path / "t.pt")
    p = pyframe.load(tmp_path / "t.pt")
    for k, v in t.items():
        assert p[k].dtype.name == str(v.dtype)[6:] and p[k].tolist() == v.tolist(), k
    pyframe.save(p, tmp_path / "p.pt", format="torch")
    back = torch.load(tmp_path / "p.pt", weights_only=True)
    for k, v in t.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k


def test_uint8_masks_as_torch():
    x = pyframe.arange(4.0)
    m = pyframe.tensor([1, 0, 1, 0], dtype=pyframe.uint8)
    with pytest.warns(UserWarning, match="uint8"):
        assert x[m].tolist() == [0.0, 2.0]  # read as a mask, deprecated
    with pytest.warns(UserWarning, match="uint8"):
        assert pyframe.where(m, x, 0.0).tolist() == [0.0, 0.0, 2.0, 0.0]
    with pytest.raises(RuntimeError, match="bool masks"):
        x[m] = 5.0
    with pytest.raises(TypeError, match="bool"):
        x.masked_fill(m, 0.0)
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        x[pyframe.tensor([1, 2], dtype=pyframe.int16)]
    assert x[m.bool()].tolist() == [0.0, 2.0]


def test_module_bfloat16_and_short_names():
    lin = pyframe.nn.Linear(2, 2).bfloat16()
    assert lin.weight.dtype == pyframe.bfloat16 and lin(pyframe.ones(1, 2, dtype=pyframe.bfloat16)).dtype == (
        pyframe.bfloat16
    )
    assert pyframe.ones(2).to("short").dtype == pyframe.int16


def test_half_linear_and_addmm_round_once_as_torch(torch):
    rng = np.random.default_rng(0)
    w, b, x = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (3,), (5, 2, 4)))
    for name in ("bfloat16", "float16"):
        tdt, pdt = getattr(torch, name), dt(name)
        tx, tw, tb = (torch.from_numpy(v).to(tdt) for v in (x, w, b))
        px, pw, pb = (pyframe.from_numpy(v).to(pdt) for v in (x, w, b))
        want = torch.nn.functional.linear(tx, tw, tb).float().numpy()
        assert np.array_equal(pyframe.nn.functional.linear(px, pw, pb).float().numpy(), want), name
        want = torch.addmm(tb, tx[0], tw.T, beta=0.5, alpha=1.5).float().numpy()
        assert np.array_equal(pyframe.addmm(pb, px[0], pw.T, beta=0.5, alpha=1.5).float().numpy(), want), name


def test_scatter_reduce_identities_of_narrow_ints(torch):
    for name in SMALL_INTS:
        src_np = np.array([-5, -7, 3, -1], dtype=name) if name != "uint8" else np.array([5, 7, 3, 1], dtype=name)
        idx = [0, 0, 1, 1]
        for reduce in ("amax", "amin"):
            want = torch.zeros(2, dtype=getattr(torch, name)).scatter_reduce(
                0, torch.tensor(idx), torch.from_numpy(src_np), reduce, include_self=False
            )
            got = pyframe.zeros(2, dtype=dt(name)).scatter_reduce(
                0, pyframe.tensor(idx), pyframe.from_numpy(src_np), reduce, include_self=False
            )
            assert got.tolist() == want.tolist(), (name, reduce)
