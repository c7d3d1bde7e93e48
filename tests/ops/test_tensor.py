"""The Tensor object: repr in PyTorch's format (hard-coded strings, and torch's own repr when torch is
importable), NumPy interop (from_numpy and numpy() sharing memory both ways, __array__, lifetimes), pickling, copy."""

from __future__ import annotations

import copy
import gc
import pickle
import re
import weakref

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    ALL,
    DTYPES,
    npy,
    random_array,
)

nan, inf = float("nan"), float("inf")

CASES = [
    (lambda: pyframe.tensor([1.0, 2.0, 3.0]), "tensor([1., 2., 3.])"),
    (lambda: pyframe.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
    (lambda: pyframe.tensor([1.5, 2.25]), "tensor([1.5000, 2.2500])"),
    (lambda: pyframe.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: pyframe.tensor([1.0, 2.0], dtype=pyframe.float64), "tensor([1., 2.], dtype=pyframe.float64)"),
    (lambda: pyframe.tensor([], dtype=pyframe.int64), "tensor([], dtype=pyframe.int64)"),
    (lambda: pyframe.zeros(2, 0, dtype=pyframe.bool), "tensor([], size=(2, 0), dtype=pyframe.bool)"),
    (lambda: pyframe.tensor(3.5), "tensor(3.5000)"),
    (lambda: pyframe.tensor(7), "tensor(7)"),
    (lambda: pyframe.tensor(2.0, dtype=pyframe.float64), "tensor(2., dtype=pyframe.float64)"),
    (lambda: pyframe.tensor([True, False]), "tensor([ True, False])"),
    (lambda: pyframe.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: pyframe.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: pyframe.tensor([1e8, 1.0]), "tensor([1.0000e+08, 1.0000e+00])"),
    (lambda: pyframe.tensor([nan, 1.0, inf]), "tensor([nan, 1., inf])"),
    (lambda: pyframe.tensor([0.0, -0.0]), "tensor([0., -0.])"),
    (lambda: pyframe.tensor([-1.5, 2.0], dtype=pyframe.float16), "tensor([-1.5000,  2.0000], dtype=pyframe.float16)"),
    (lambda: pyframe.tensor([1, 2], dtype=pyframe.int32), "tensor([1, 2], dtype=pyframe.int32)"),
    (lambda: pyframe.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: pyframe.arange(8.0).reshape(2, 2, 2),
     "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])"),
    (lambda: pyframe.arange(1001.0), "tensor([   0.,    1.,    2.,  ...,  998.,  999., 1000.])"),
    (lambda: pyframe.arange(2000).reshape(40, 50),
     "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
     "        [  50,   51,   52,  ...,   97,   98,   99],\n"
     "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
     "        ...,\n"
     "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
     "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
     "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])"),
    (lambda: pyframe.arange(30.0),
     "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
     "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
     "        28., 29.])"),
    (lambda: pyframe.tensor([[1.0, 2.0], [3.0, 4.0]]).T, "tensor([[1., 3.],\n        [2., 4.]])"),
    (lambda: pyframe.arange(12.0, dtype=pyframe.float64).reshape(1, 12) * 1000.5,
     "tensor([[    0.0000,  1000.5000,  2001.0000,  3001.5000,  4002.0000,  5002.5000,\n"
     "          6003.0000,  7003.5000,  8004.0000,  9004.5000, 10005.0000, 11005.5000]],\n"
     "       dtype=pyframe.float64)"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "expected"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_repr_hard_coded(make, expected):
    assert repr(make()) == expected


def test_str_and_format():
    t = pyframe.tensor([1.5, 2.25])
    assert str(t) == repr(t)
    assert f"{pyframe.tensor(2.5):.2f}" == "2.50"
    assert f"{t}" == repr(t)


@pytest.mark.parametrize("spec", ["", ".2f", ">10", "e"])
@pytest.mark.parametrize("value", [[2.5], [[1.0]], True, 3, -0.125, [1.0, 2.0], []])
def test_format_matches_torch(value, spec):
    """A 0-d tensor formats as its number, any other as its repr, and refuses a spec (torch's Tensor.__format__)."""
    torch = pytest.importorskip("torch")

    def formatted(lib):
        try:
            return format(lib.tensor(value), spec)
        except (TypeError, ValueError) as e:
            return type(e).__name__, str(e)

    assert formatted(pyframe) == formatted(torch)


def test_size_repr():
    assert repr(pyframe.zeros(2, 3).shape) == "pyframe.Size([2, 3])"
    assert repr(pyframe.tensor(1.0).shape) == "pyframe.Size([])"


# ---- against torch --------------------------------------------------------------------------------------


def _random_arrays():
    rng = np.random.default_rng(7)
    out = []
    for i in range(60):
        nd = int(rng.integers(0, 5))
        shape = tuple(int(rng.integers(1, 7)) for _ in range(nd))
        dtype = (np.float32, np.float64, np.float16, np.int64, np.int32, np.bool_)[i % 6]
        a = rng.standard_normal(shape) * 10.0 ** int(rng.integers(-5, 9))
        if i % 5 == 0:
            a = np.round(a)
        if i % 7 == 0 and a.size:
            a.reshape(-1)[0] = (nan, inf, -inf, 0.0)[i % 4]
        if dtype in (np.int64, np.int32):
            a = np.clip(np.nan_to_num(a, nan=0, posinf=0, neginf=0), -(2**31), 2**31 - 1)
        with np.errstate(all="ignore"):
            out.append(a.astype(dtype) if nd else np.array(a, dtype=dtype))
    # summarized (> 1000 elements), in several ranks and value ranges
    out += [
        rng.standard_normal(1100).astype(np.float32),
        rng.standard_normal((40, 40)).astype(np.float32) * 1e-6,
        rng.integers(-1000, 1000, (30, 40)),
        rng.random((4, 5, 60)).astype(np.float32),
        rng.standard_normal((2, 3, 4, 200)),
        rng.random((1001,)) < 0.5,
        (rng.standard_normal((3, 700)) * 1e4).astype(np.float16),
        np.arange(5000, dtype=np.int32).reshape(50, 100),
    ]
    return out


def _normalize(text: str) -> str:
    # "torch." is two characters shorter than "pyframe.", so a suffix can wrap in one and not the other
    return re.sub(r",\n\s+(dtype|size|requires_grad)=", r", \1=", text)


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    for a in _random_arrays():
        expected = repr(torch.tensor(a)).replace("torch.", "pyframe.")
        got = repr(pyframe.tensor(a))
        assert _normalize(got) == _normalize(expected), f"{a.dtype} {a.shape}"


def test_repr_of_views_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((6, 8)).astype(np.float32)
    t, tt = pyframe.tensor(a), torch.tensor(a)
    for key in (np.s_[:, ::3], np.s_[1], np.s_[::2, 1:4]):
        assert repr(t[key]) == repr(tt[key])
    assert repr(t.T) == repr(tt.T)
    assert repr(t.expand(2, 6, 8)) == repr(tt.expand(2, 6, 8))


# ---- NumPy interop, pickling, copying ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "bool"])
def test_pickle_and_deepcopy_round_trip(dtype):
    t = pyframe.arange(6).reshape(2, 3).to(dtype).T
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert u.dtype == t.dtype and u.shape == t.shape and u.tolist() == t.tolist()
        assert u._storage is not t._storage
    g = pyframe.ones(2, requires_grad=True)
    assert pickle.loads(pickle.dumps(g)).requires_grad
    assert copy.deepcopy(g).requires_grad


def test_dtype_pickles_to_the_same_object():
    assert pickle.loads(pickle.dumps(pyframe.float16)) is pyframe.float16


def test_numpy_functions_accept_tensors():
    t = pyframe.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert np.sum(np.asarray(t)) == 10.0
    np.testing.assert_array_equal(np.array(t), [[1.0, 2.0], [3.0, 4.0]])
    assert np.array(t).dtype == np.float32


@pytest.mark.parametrize("dtype", ALL)
def test_from_numpy_shares_memory_both_ways(dtype, rng):
    a = random_array(rng, (3, 4), dtype)
    t = pyframe.from_numpy(a)
    assert t.dtype == DTYPES[dtype]
    one = np.ones((), DTYPES[dtype].np)
    a[1, 2] = one
    assert t[1, 2].item() == one.item()
    t[0, 0] = pyframe.zeros((), dtype=dtype)
    assert a[0, 0] == 0
    assert t.data_ptr() == a.__array_interface__["data"][0]


def test_from_numpy_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float64)
    ref = weakref.ref(a)  # ndarrays that own their memory can be weakly referenced
    t = pyframe.from_numpy(a)
    del a
    gc.collect()
    assert ref() is not None  # the tensor holds it
    assert t.sum().item() == sum(range(1000))
    v = t[10:20]
    del t
    gc.collect()
    assert v.tolist() == list(map(float, range(10, 20)))  # a view keeps it too
    del v
    gc.collect()
    assert ref() is None  # and then it is released


def test_from_numpy_strided_arrays():
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    t = pyframe.from_numpy(a[:, ::2])
    assert t.stride() == (6, 2)
    np.testing.assert_array_equal(npy(t), a[:, ::2])
    t.fill_(-1)
    assert (a[:, ::2] == -1).all() and (a[:, 1::2] >= 0).all()
    tt = pyframe.from_numpy(a.T)
    assert not tt.is_contiguous()
    np.testing.assert_array_equal(npy(tt), a.T)
    s = pyframe.from_numpy(np.array(3.5, dtype=np.float32))
    assert s.shape == () and s.item() == 3.5


def test_from_numpy_readonly_warns():
    a = np.arange(3.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        pyframe.from_numpy(a)


def test_numpy_shares_memory():
    t = pyframe.zeros(3, 4)
    a = t.numpy()
    a[1, 1] = 7
    assert t[1, 1].item() == 7
    t.add_(1)
    assert a[0, 0] == 1
    v = t[:, 1::2].numpy()  # a strided view is also shared
    v[...] = -5
    assert t[:, 1].tolist() == [-5.0] * 3 and t[:, 0].tolist() == [1.0] * 3
    tt = t.T.numpy()
    assert tt.shape == (4, 3) and np.shares_memory(tt, a)
    assert np.asarray(t).shape == (3, 4)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(RuntimeError, match="requires grad"):
        pyframe.ones(2, requires_grad=True).numpy()


def test_numpy_view_of_a_from_numpy_tensor_keeps_the_array_alive():
    a = np.arange(100_000, dtype=np.float32)
    view = pyframe.from_numpy(a).numpy()
    del a
    gc.collect()
    np.ones(100_000, dtype=np.float32)  # would land in the freed block
    assert view[-1] == 99_999 and (view == np.arange(100_000, dtype=np.float32)).all()


def test_asarray_of_a_temporary_tensor_keeps_its_memory():
    arr = np.asarray(pyframe.from_numpy(np.full(50_000, 7, dtype=np.int64)))
    gc.collect()
    np.zeros(50_000, dtype=np.int64)
    assert (arr == 7).all()
    views = [pyframe.arange(10.0)[::3].numpy() for _ in range(3)]
    gc.collect()
    assert views[0].tolist() == [0.0, 3.0, 6.0, 9.0]


def test_read_only_memmap_is_copied_so_writes_cannot_crash(tmp_path):
    path = tmp_path / "w.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    mm = np.memmap(path, dtype=np.float32, mode="r")
    with pytest.warns(UserWarning, match="not writable; pyframe copies it"):
        t = pyframe.from_numpy(mm)
    t.add_(1)  # used to segfault
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and mm[0] == 0
    with pytest.warns(UserWarning, match="not writable"):  # a broadcast array is read-only too
        p = pyframe.nn.Parameter(pyframe.from_numpy(np.broadcast_to(np.float32(1), (3,))))
    opt = pyframe.optim.SGD([p], lr=0.5)
    p.grad = pyframe.ones(3)
    opt.step()
    assert p.tolist() == [0.5, 0.5, 0.5]


def test_tensor_of_a_read_only_array_copies_without_warning():
    a = np.arange(3.0)
    a.flags.writeable = False
    assert pyframe.tensor(a).tolist() == [0.0, 1.0, 2.0]


def test_two_from_numpy_views_of_one_array_are_seen_as_overlapping():
    a = np.arange(4.0)
    x = pyframe.from_numpy(a)
    x[pyframe.tensor([1, 2, 3, 0])] = pyframe.from_numpy(a)
    assert x.tolist() == [3.0, 0.0, 1.0, 2.0]


def test_tensor_type_names_and_casts():
    x = pyframe.tensor([1, 2])
    assert x.type() == "pyframe.LongTensor"
    assert x.type(pyframe.float).dtype == pyframe.float32
    assert x.type("torch.DoubleTensor").dtype == pyframe.float64
    assert x.type(pyframe.FloatTensor).dtype == pyframe.float32  # the legacy types, as torch
    assert x.type(pyframe.DoubleTensor).type(pyframe.LongTensor).tolist() == [1, 2]
    assert x.type(pyframe.Tensor).dtype == pyframe.get_default_dtype()
    with pytest.raises((TypeError, ValueError)):
        x.type("foo")
    with pytest.raises(TypeError):
        x.type(dict)


def test_size_stays_a_size_and_h_transposes_matrices():
    s = pyframe.zeros(2, 3, 4).shape
    for got in (s[1:], s + (5,), (1,) + s, s * 2, 2 * s, s + s):
        assert isinstance(got, pyframe.Size)
    assert s[1:] == (3, 4) and (1,) + s == (1, 2, 3, 4) and isinstance(s[0], int)
    with pytest.raises(TypeError):
        s + [5]
    m = pyframe.arange(6.0).reshape(2, 3)
    assert m.H.shape == (3, 2) and m.H.tolist() == m.t().tolist()
    assert pyframe.tensor(2.0).H.item() == 2.0
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        _ = pyframe.ones(3).H


def test_attributes_set_by_a_program_as_torch():
    """Programs tag tensors and parameters (``p.no_decay = True``); pickling keeps the tags, deepcopy keeps a
    tensor's and (torch's quirk) drops a parameter's, and new tensors start without any."""
    import copy
    import pickle

    t = pyframe.ones(2)
    t.flag = 4
    assert copy.deepcopy(t).flag == pickle.loads(pickle.dumps(t)).flag == copy.copy(t).flag == 4
    assert t.detach().__dict__ == t.clone().__dict__ == {}
    p = pyframe.nn.Parameter(pyframe.ones(2))
    p.no_decay = True
    assert pickle.loads(pickle.dumps(p)).no_decay is True
    assert not hasattr(copy.deepcopy(p), "no_decay")
    m = pyframe.nn.Linear(2, 2)
    m.weight.no_decay = True
    assert [n for n, q in m.named_parameters() if getattr(q, "no_decay", False)] == ["weight"]


def test_torch_method_spellings():
    """Methods torch programs call under other names or as queries, with torch's results."""
    x = pyframe.arange(12.0).reshape(3, 4)
    assert x.greater(3).sum().item() == 8 and x.less_equal(3).sum().item() == 4
    assert x.multiply(2).tolist() == (x * 2).tolist() and x.subtract(1).tolist() == (x - 1).tolist()
    assert x.clone().clip_(0, 2).max().item() == 2 and x.swapdims(0, 1).shape == (4, 3)
    assert (x.itemsize, x.nbytes, x.real is x, x.is_complex(), x.is_signed()) == (4, 48, True, False, True)
    assert not pyframe.ones(1, dtype=pyframe.uint8).is_signed()
    assert x.t().dim_order() == (1, 0) and x.is_same_size(pyframe.ones(3, 4))
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = x.imag
    with pytest.raises(TypeError, match="complex"):
        x.cfloat()
    assert pyframe.eye(2).mul(2).matrix_power(3).tolist() == [[8.0, 0.0], [0.0, 8.0]]
    assert not any(getattr(x, n) for n in ("is_xpu", "is_mps", "is_quantized", "is_nested", "is_mkldnn"))


def test_fill_diagonal_as_torch_and_numpy():
    a = pyframe.zeros(7, 3)
    a.fill_diagonal_(5, wrap=True)  # the diagonal restarts every N + 1 rows
    expected = np.zeros((7, 3))
    np.fill_diagonal(expected, 5, wrap=True)
    assert a.tolist() == expected.tolist()
    assert pyframe.zeros(7, 3).fill_diagonal_(5).sum().item() == 15
    t = pyframe.zeros(4, 3).t()  # a transposed view: the strides, not the layout, say where the diagonal is
    assert t.fill_diagonal_(2).tolist() == [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]]
    assert pyframe.zeros(2, 2, 2).fill_diagonal_(1).sum().item() == 2
    with pytest.raises(RuntimeError, match="equal length"):
        pyframe.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="larger than 1"):
        pyframe.zeros(3).fill_diagonal_(1)


def test_detach_random_map_apply():
    y = pyframe.ones(2, requires_grad=True) * 2
    assert y.detach_() is y and (y.requires_grad, y.grad_fn, y.is_leaf) == (False, None, True)
    with pytest.raises(RuntimeError, match="views in-place"):
        (pyframe.ones(2, 2, requires_grad=True) * 2)[0].detach_()
    g = pyframe.Generator().manual_seed(0)
    assert set(pyframe.empty(1000, dtype=pyframe.int64).random_(3, 5, generator=g).tolist()) == {3, 4}
    r = pyframe.empty(1000).random_(10, generator=g)
    assert r.min().item() >= 0 and r.max().item() <= 9 and r.eq(r.round()).all()
    assert pyframe.empty(100).random_(generator=g).max().item() <= 2**24
    with pytest.raises(RuntimeError, match="less than"):
        pyframe.empty(3).random_(5, 2)
    assert pyframe.ones(2, 2).map_(pyframe.tensor([1.0, 2.0]), lambda a, b: a + b).tolist() == [[2, 3], [2, 3]]
    m = pyframe.ones(2).map2_(pyframe.tensor([1.0, 2.0]), pyframe.tensor(3.0), lambda a, b, c: a * b + c)
    assert m.tolist() == [4.0, 5.0]
    assert pyframe.arange(4).apply_(lambda v: v * v).tolist() == [0, 1, 4, 9]
    with pytest.raises(RuntimeError, match="leaf"):
        pyframe.ones(2, requires_grad=True).apply_(abs)
    w = pyframe.ones(3, requires_grad=True) * 2
    assert w.numpy(force=True).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        w.numpy()
