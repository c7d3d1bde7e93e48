"""Views, copies, joins, splits, indexing and assignment: what shares memory and what doesn't,
and results against NumPy for the same key."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pyframe
from tests._helpers import ALL, DTYPES, npy, pf, random_array


def _base():
    return np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)


# name: (pyframe view, the same view in NumPy)
VIEWS = {
    "view": (lambda t: t.view(6, 20), lambda a: a.reshape(6, 20)),
    "view_infer": (lambda t: t.view(-1, 5), lambda a: a.reshape(-1, 5)),
    "reshape": (lambda t: t.reshape(2, 12, 5), lambda a: a.reshape(2, 12, 5)),
    "flatten": (lambda t: t.flatten(1, 2), lambda a: a.reshape(2, 12, 5)),
    "transpose": (lambda t: t.transpose(1, 3), lambda a: a.swapaxes(1, 3)),
    "swapaxes": (lambda t: pyframe.swapaxes(t, 0, -1), lambda a: a.swapaxes(0, -1)),
    "T": (lambda t: t.T, lambda a: a.T),
    "mT": (lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    "permute": (lambda t: t.permute(3, 1, 0, 2), lambda a: a.transpose(3, 1, 0, 2)),
    "permute_neg": (lambda t: pyframe.permute(t, (-1, 0, 2, 1)), lambda a: a.transpose(3, 0, 2, 1)),
    "unsqueeze": (lambda t: t.unsqueeze(2), lambda a: a[:, :, None]),
    "unsqueeze_neg": (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    "squeeze": (lambda t: t[:, :1].squeeze(), lambda a: a[:, :1].squeeze()),
    "squeeze_dim": (lambda t: t[:, :1].squeeze(1), lambda a: a[:, :1].squeeze(1)),
    "squeeze_noop": (lambda t: t.squeeze(2), lambda a: a),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    "narrow_neg_start": (lambda t: t.narrow(-1, -3, 2), lambda a: a[..., 2:4]),
    "select": (lambda t: t.select(1, -1), lambda a: a[:, -1]),
    "int": (lambda t: t[1], lambda a: a[1]),
    "slice": (lambda t: t[:, 1:], lambda a: a[:, 1:]),
    "slice_step": (lambda t: t[:, ::2, 1::3], lambda a: a[:, ::2, 1::3]),
    "slice_neg": (lambda t: t[-1:, -2:, :-1], lambda a: a[-1:, -2:, :-1]),
    "slice_clamped": (lambda t: t[:, 1:100], lambda a: a[:, 1:100]),
    "ellipsis": (lambda t: t[..., 2], lambda a: a[..., 2]),
    "none": (lambda t: t[None, :, None, 1], lambda a: a[None, :, None, 1]),
    "mixed": (lambda t: t[1, ..., None, 1:4:2], lambda a: a[1, ..., None, 1:4:2]),
    "strided_then_T": (lambda t: t[:, ::2].T, lambda a: a[:, ::2].T),
    "detach": (lambda t: t.detach(), lambda a: a),
    "view_of_transpose": (lambda t: t.transpose(0, 1).view(3, 2, 20), lambda a: a.swapaxes(0, 1).reshape(3, 2, 20)),
    "unbind": (lambda t: t.unbind(1)[2], lambda a: a[:, 2]),
    "split": (lambda t: t.split(2, dim=2)[1], lambda a: a[:, :, 2:4]),
    "chunk": (lambda t: t.chunk(2, -1)[1], lambda a: a[..., 3:]),
    "expand_of_select": (lambda t: t[:, :, :1].expand(2, 3, 4, 5), lambda a: np.broadcast_to(a[:, :, :1], a.shape)),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_shares_memory_and_matches_numpy(name):
    pf_view, np_view = VIEWS[name]
    a = _base()
    t = pf(a)
    v = pf_view(t)
    expected = np_view(a)
    assert tuple(v.shape) == expected.shape
    np.testing.assert_array_equal(npy(v), expected)
    # a write to the base shows in the view, without any copy
    t.mul_(-1)
    np.testing.assert_array_equal(npy(v), -expected)
    # a write through the view lands in the base, at the NumPy view's positions
    if name != "expand_of_select":  # writing to overlapping (expanded) memory is refused, as torch
        a = -a
        np_view(a)[...] += 1000  # numpy view of the same base
        v.add_(1000)
        np.testing.assert_array_equal(npy(t), a)


def test_writing_through_an_expanded_view_is_refused_or_consistent():
    x = pyframe.zeros(1, 3)
    e = x.expand(4, 3)
    e[0, 1] = 5.0  # one element: fine, and visible in every row
    assert e.tolist() == [[0.0, 5.0, 0.0]] * 4


def test_reshape_copies_only_when_needed():
    t = pf(_base())
    shares = [t.reshape(-1), t.reshape(6, 4, 5), t[1].reshape(12, 5), t.transpose(2, 3).reshape(2, 3, 5, 4),
              t[:, :, 1].reshape(6, 5), t.permute(1, 0, 2, 3).reshape(3, 2, 20)]  # fmt: skip
    copies = [t.transpose(2, 3).reshape(-1), t[:, :, ::2].reshape(-1), t.permute(3, 2, 1, 0).reshape(5, -1)]
    for r in shares:
        assert r._storage is t._storage
    for r in copies:
        assert r._storage is not t._storage and r.is_contiguous()
    before = npy(t)
    copies[0].fill_(-1)
    np.testing.assert_array_equal(npy(t), before)
    shares[0].fill_(-1)
    assert (npy(t) == -1).all()


def test_view_errors_but_reshape_copies_for_incompatible_strides():
    t = pyframe.zeros(4, 6).T
    with pytest.raises((ValueError, RuntimeError), match=r"view size.*not compatible.*\[6, 4\].*stride.*reshape"):
        t.view(-1)
    assert t.reshape(-1).shape == (24,)


def test_contiguous_clone_and_detach():
    t = pf(_base())
    assert t.contiguous() is t
    tt = t.transpose(0, 3)
    assert not tt.is_contiguous()
    c = tt.contiguous()
    assert c.is_contiguous() and c._storage is not t._storage
    np.testing.assert_array_equal(npy(c), _base().swapaxes(0, 3))
    assert c.stride() == (24, 8, 2, 1) and tt.stride() == (1, 20, 5, 60)
    k = t.clone()
    k.fill_(0)
    assert npy(t).sum() == _base().sum()
    kt = tt.clone()  # clone of a non-contiguous tensor: contiguous copy
    assert kt.is_contiguous()
    np.testing.assert_array_equal(npy(kt), npy(tt))


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_to_dtype(src, dst, rng):
    a = random_array(rng, (3, 4), src)
    if src in ("float32", "float64", "float16"):
        a = (a * 3).astype(DTYPES[src].np)
    t = pf(a)
    out = t.to(DTYPES[dst])
    assert out.dtype == DTYPES[dst]
    expected = a.astype(DTYPES[dst].np)  # C casts: floats truncate toward zero, nonzero -> True
    np.testing.assert_array_equal(npy(out), expected)
    if src == dst:
        assert out is t
        assert t.to(DTYPES[dst], copy=True) is not t
    else:
        assert out._storage is not t._storage
    assert t.to(dst).dtype == DTYPES[dst]  # by name
    assert t.to(dtype=DTYPES[dst]).dtype == DTYPES[dst]
    assert t.T.to(DTYPES[dst]).tolist() == expected.T.tolist()


def test_dtype_shorthands_and_type_as():
    t = pyframe.tensor([1.7, -1.7])
    assert t.int().tolist() == [1, -1] and t.int().dtype == pyframe.int32
    assert t.long().dtype == pyframe.int64 and t.double().dtype == pyframe.float64
    assert t.half().dtype == pyframe.float16 and t.bool().tolist() == [True, True]
    assert t.double().float().dtype == pyframe.float32
    assert t.type_as(pyframe.tensor([1])).dtype == pyframe.int64
    assert t.to("cpu") is t and t.to("cpu", pyframe.float64).dtype == pyframe.float64


def test_item_and_tolist():
    assert pyframe.tensor(2.5).item() == 2.5 and isinstance(pyframe.tensor(2.5).item(), float)
    assert isinstance(pyframe.tensor([3]).item(), int) and pyframe.tensor([[3]]).item() == 3
    assert pyframe.tensor(True).item() is True
    assert isinstance(pyframe.tensor(1.5, dtype=pyframe.float16).item(), float)
    with pytest.raises(RuntimeError, match="2 elements"):
        pyframe.tensor([1, 2]).item()
    t = pyframe.tensor([[1, 2], [3, 4]])
    assert t.tolist() == [[1, 2], [3, 4]] and type(t.tolist()[0][0]) is int
    assert t.T.tolist() == [[1, 3], [2, 4]]
    assert pyframe.tensor(5).tolist() == 5
    assert pyframe.zeros(0, 2).tolist() == []
    assert pyframe.tensor([True, False]).tolist() == [True, False]
    assert float(pyframe.tensor([2.5])) == 2.5 and int(pyframe.tensor(7)) == 7
    assert [1, 2, 3][pyframe.tensor(1)] == 2  # __index__


def test_metadata():
    t = pyframe.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4) and t.size(-1) == 4
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24 and len(t) == 2
    assert repr(t.shape) == "pyframe.Size([2, 3, 4])"
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.element_size() == 4 and pyframe.zeros(1, dtype=pyframe.float16).element_size() == 2
    assert t.is_floating_point() and not pyframe.zeros(1, dtype=pyframe.int32).is_floating_point()
    assert [tuple(r.shape) for r in t] == [(3, 4), (3, 4)]


# ---- from_numpy / numpy --------------------------------------------------------------------------------


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


def test_tensor_factory_copies():
    a = np.arange(4.0)
    t = pyframe.tensor(a)
    a[0] = 100
    assert t[0].item() == 0.0
    assert t.dtype == pyframe.float64  # an ndarray keeps its dtype
    assert pyframe.tensor([1.0, 2.0]).dtype == pyframe.float32  # Python floats: float32
    assert pyframe.as_tensor(a)._storage.owner is a  # as_tensor shares


# ---- cat / stack / split / chunk / unbind ----------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cat_and_stack(dim, rng):
    arrays = [random_array(rng, s, "float32") for s in ((2, 3, 4), (2, 3, 4), (2, 3, 4))]
    ts = [pf(a) for a in arrays]
    np.testing.assert_array_equal(npy(pyframe.cat(ts, dim)), np.concatenate(arrays, dim))
    np.testing.assert_array_equal(npy(pyframe.stack(ts, dim)), np.stack(arrays, dim))
    np.testing.assert_array_equal(npy(pyframe.stack(ts, dim=-1)), np.stack(arrays, -1))
    # views as inputs, sizes differing along dim
    parts = [ts[0].T, ts[1].T[..., :1], ts[2].T[..., 1::2]]
    np.testing.assert_array_equal(
        npy(pyframe.cat(parts, -1)), np.concatenate([arrays[0].T, arrays[1].T[..., :1], arrays[2].T[..., 1::2]], -1)
    )


def test_cat_promotes_and_skips_legacy_empty():
    out = pyframe.cat([pyframe.tensor([1, 2], dtype=pyframe.int32), pyframe.tensor([0.5])])
    assert out.dtype == pyframe.float32 and out.tolist() == [1.0, 2.0, 0.5]
    out = pyframe.cat([pyframe.zeros(0), pyframe.ones(2, 2)])
    assert out.shape == (2, 2)
    assert pyframe.cat([pyframe.ones(0, 3), pyframe.ones(2, 3)]).shape == (2, 3)
    assert pyframe.concat((pyframe.ones(1), pyframe.zeros(1))).tolist() == [1.0, 0.0]


def test_split_chunk_unbind():
    t = pyframe.arange(10).reshape(5, 2)
    parts = t.split(2)
    assert [p.shape[0] for p in parts] == [2, 2, 1]
    assert [p.tolist() for p in pyframe.split(t, [1, 4])] == [[[0, 1]], [[2, 3], [4, 5], [6, 7], [8, 9]]]
    assert [p.shape for p in t.split(1, dim=1)] == [(5, 1), (5, 1)]
    assert [p.shape[0] for p in t.chunk(2)] == [3, 2]
    assert [p.shape[0] for p in t.chunk(4)] == [2, 2, 1]  # torch: chunks of ceil(5 / 4), so only 3
    assert [p.shape[0] for p in pyframe.arange(6).chunk(4)] == [2, 2, 2]
    assert [p.shape[0] for p in pyframe.arange(3).chunk(5)] == [1, 1, 1]
    rows = t.unbind()
    assert len(rows) == 5 and rows[3].tolist() == [6, 7]
    cols = pyframe.unbind(t, 1)
    assert cols[1].tolist() == [1, 3, 5, 7, 9]
    for p in parts + rows:  # all views
        assert p._storage is t._storage
    assert pyframe.zeros(0, 2).split(2)[0].shape == (0, 2)


# ---- indexing ----------------------------------------------------------------------------------------------

_A = np.arange(120).reshape(2, 3, 4, 5)

# keys whose result NumPy and PyTorch agree on
KEYS = {
    "list": ([0, 1],),
    "list_repeat": ([1, 1, 0],),
    "list_neg": (slice(None), [2, 0, -1]),
    "two_adjacent": (slice(None), [0, 2], [1, 3]),
    "two_adjacent_broadcast": (slice(None), slice(None), [[1], [2]], [0, 3]),
    "non_adjacent": ([1, 0], slice(None), [3, -1]),
    "non_adjacent_2d": (slice(None), [[0, 1], [2, 2]], slice(None), [1, 0]),
    "all_four": ([0, 1], [0, 2], [1, 3], [0, 4]),
    "leading": ([1, 0], [2, 1]),
    "ellipsis_last": (Ellipsis, [4, 0]),
    "none_then_list": (None, [1], Ellipsis),
    "slice_then_list": ([-1, -2], slice(1, None, 2)),
    "2d_index": (np.array([[1, 0], [0, 1]]),),
    "int_between_lists": ([0, 1], 1, [2, 3]),
    "int_before_list": (0, [1, 2], slice(None), 3),
    "empty_list": ([],),
    "empty_in_dim": (slice(None), []),
    "ndarray_int32": (slice(None), np.array([2, 0], dtype=np.int32)),
    "scalar_array": (np.array(1),),
    "mask_full": (_A % 3 == 0,),
    "mask_leading": (np.array([True, False]),),
    "mask_middle": (slice(None), np.array([True, False, True])),
    "mask_2d": (np.array([[True, False, True], [False, False, True]]),),
    "mask_and_list": (np.array([False, True]), slice(None), [0, 3]),
    "mask_none": (np.zeros((2, 3), dtype=bool),),
    "mask_0d_true": (slice(None), np.array(True)),
    "python_true": (slice(None), True, 1),
    "python_false": (False, Ellipsis),
}


def _as_pyframe_key(key):
    out = []
    for k in key:
        if isinstance(k, np.ndarray):
            out.append(pyframe.tensor(k))
        else:
            out.append(k)
    return tuple(out)


@pytest.mark.parametrize("name", list(KEYS))
@pytest.mark.parametrize("as_tensor", [False, True], ids=["lists", "tensors"])
def test_getitem_matches_numpy(name, as_tensor):
    key = KEYS[name]
    t = pf(_A)
    got = t[_as_pyframe_key(key) if as_tensor else key]
    expected = _A[key]
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(npy(got), expected)
    # on a transposed (non-contiguous) tensor too
    got_t = pf(_A.T.copy()).permute(3, 2, 1, 0)[key]
    np.testing.assert_array_equal(npy(got_t), expected)


def test_advanced_index_result_is_a_copy():
    t = pf(_A)
    g = t[[0, 1]]
    g.fill_(-1)
    np.testing.assert_array_equal(npy(t), _A)


def test_integer_with_advanced_indices_follows_torch_not_numpy():
    # torch applies a plain int as a select first, so the remaining advanced indices can be
    # adjacent; NumPy treats the int as one more advanced index
    t = pf(_A)
    assert t[1, :, [0, 1], [[2], [3]]].shape == (3, 2, 2)  # NumPy: (2, 2, 3)
    assert t[:, 1, :, [0, 2]].shape == (2, 4, 2)  # NumPy: (2, 2, 4)
    np.testing.assert_array_equal(npy(t[:, 1, :, [0, 2]]), _A[:, 1][..., [0, 2]])
    torch = pytest.importorskip("torch")
    tt = torch.tensor(_A)
    for key in ((1, slice(None), [0, 1], [[2], [3]]), (slice(None), 1, slice(None), [0, 2]), (1, Ellipsis, [0, 1])):
        np.testing.assert_array_equal(npy(t[key]), tt[key].numpy())


@pytest.mark.parametrize("key", [(2,), (0, 3), (slice(None), [0, 3]), ([0, -3],), (slice(None), slice(None), [4])],
                         ids=["int", "int2", "list", "list_neg", "list_dim2"])  # fmt: skip
def test_getitem_out_of_range(key):
    t = pyframe.zeros(2, 3, 4)
    with pytest.raises(IndexError, match="out of bounds|out of range"):
        t[key]


def test_getitem_bad_keys():
    t = pyframe.zeros(2, 3)
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(IndexError, match="mask"):
        t[pyframe.tensor([True, False, True])]
    with pytest.raises(IndexError, match="(?i)float32|valid indices"):
        t[pyframe.tensor([0.0])]
    with pytest.raises(IndexError, match="valid indices"):
        t["a"]
    with pytest.raises(ValueError, match="step"):
        t[::-1]


# ---- __setitem__ ------------------------------------------------------------------------------------------

SET_KEYS = {
    "int": (1,),
    "slice": (slice(None), slice(1, 3)),
    "step": (slice(None), slice(None), slice(None, None, 2)),
    "ellipsis": (Ellipsis, 1),
    "none": (None, 0),
    "list": ([1, 0],),
    "list_dim1": (slice(None), [2, 0]),
    "two_lists": (slice(None), [0, 2], [1, 3]),
    "two_lists_broadcast": (slice(None), slice(None), [[1], [2]], [0, 3]),
    "non_adjacent": ([1, 0], slice(None), [3, -1]),
    "ellipsis_list": (Ellipsis, [4, 0]),
    "int_between_lists": ([0, 1], 1, [2, 3]),
    "mask_full": (_A % 3 == 0,),
    "mask_leading": (np.array([True, False]),),
    "mask_middle": (slice(None), np.array([True, False, True])),
    "mask_2d": (np.array([[True, False, True], [False, False, True]]),),
}


@pytest.mark.parametrize("name", list(SET_KEYS))
@pytest.mark.parametrize("value", ["scalar", "full", "broadcast_last", "broadcast_1", "other_dtype"])
def test_setitem_matches_numpy(name, value):
    key = SET_KEYS[name]
    expected = _A.copy()
    t = pf(_A)
    target_shape = _A[key].shape
    if value == "scalar":
        v_np, v = -7, -7
    elif value == "full":
        v_np = -np.arange(int(np.prod(target_shape))).reshape(target_shape) - 1
        v = pf(v_np)
    elif value == "broadcast_last":
        if not target_shape:
            return
        v_np = -np.arange(target_shape[-1]) - 1
        v = pf(v_np)
    elif value == "broadcast_1":
        v_np = np.array([[-3]])[: len(target_shape)].reshape((1,) * min(len(target_shape), 2))
        v = pf(v_np)
    else:
        v_np, v = np.array(-2.75), pyframe.tensor(-2.75, dtype=pyframe.float64)  # cast to int64: truncated
        v_np = np.trunc(v_np).astype(np.int64)
    expected[key] = v_np
    t[key] = v
    np.testing.assert_array_equal(npy(t), expected)
    assert t.dtype == pyframe.int64


def test_setitem_through_a_view_and_on_a_view():
    t = pyframe.zeros(4, 6)
    v = t[:, ::2]
    v[[0, 2]] = pyframe.tensor([1.0, 2.0, 3.0])
    v[v > 2] = -1.0
    expected = np.zeros((4, 6), np.float32)
    expected[[0, 2], ::2] = [1.0, 2.0, -1.0]
    np.testing.assert_array_equal(npy(t), expected)
    tt = pyframe.zeros(3, 4).T  # non-contiguous target with advanced indexing
    tt[[1, 3], 1] = 5.0
    assert tt.T.tolist()[1] == [0.0, 5.0, 0.0, 5.0]


def test_setitem_with_repeated_index_last_write_wins():
    t = pyframe.zeros(3)
    t[[0, 0, 2]] = pyframe.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [2.0, 0.0, 3.0]


def test_setitem_value_shape_mismatch():
    t = pyframe.zeros(3, 4)
    with pytest.raises((ValueError, RuntimeError), match=r"\[3\]|\[2, 4\]|3"):
        t[[0, 1]] = pyframe.ones(3)
    with pytest.raises((ValueError, RuntimeError), match=r"\[4\]|\[3\]"):
        t[:, 0] = pyframe.ones(4)


def test_setitem_bumps_version_and_mask_selects():
    t = pyframe.tensor([1.0, -2.0, 3.0, -4.0])
    v0 = t._version
    t[t < 0] = 0.0
    assert t.tolist() == [1.0, 0.0, 3.0, 0.0]
    assert t._version > v0
    assert t[t > 0].tolist() == [1.0, 3.0]
    assert t[pyframe.tensor(True)].shape == (1, 4)  # a 0-d mask adds a dim, as NumPy and torch
    assert t[pyframe.tensor(False)].shape == (0, 4)
    assert t[True].shape == (1, 4) and t[False, 1:].shape == (0, 3) and t[None, True].shape == (1, 1, 4)
    t[pyframe.tensor(False)] = 5.0
    assert t.tolist() == [1.0, 0.0, 3.0, 0.0]
    t[True] = 2.0
    assert t.tolist() == [2.0] * 4


def test_index_select_gather_nonzero():
    t = pf(np.arange(12).reshape(3, 4))
    assert t.index_select(1, pyframe.tensor([3, 0])).tolist() == [[3, 0], [7, 4], [11, 8]]
    assert pyframe.gather(t, 1, pyframe.tensor([[0, 0], [1, 0], [3, 2]])).tolist() == [[0, 0], [5, 4], [11, 10]]
    nz = pyframe.nonzero(pyframe.tensor([[0, 1], [2, 0]]))
    assert nz.tolist() == [[0, 1], [1, 0]]
    rows, cols = pyframe.tensor([[0, 1], [2, 0]]).nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


def test_is_contiguous_ignores_strides_of_size_one_dims():
    # PyTorch's definition: a dim of size 1 can have any stride
    assert pyframe.zeros(1, 3).T.is_contiguous()
    assert pyframe.zeros(3, 1, 4).transpose(0, 1).is_contiguous()
    assert pyframe.zeros(5, 3)[2:3].is_contiguous()
    assert not pyframe.zeros(3, 1).expand(3, 4).is_contiguous()
    assert not pyframe.zeros(2, 3).T.is_contiguous()
    x = pyframe.arange(3.0).reshape(1, 3).T
    assert x.contiguous() is x  # nothing to copy
    assert (x + 1).tolist() == [[1.0], [2.0], [3.0]]
    torch = pytest.importorskip("torch")
    for shape, perm in (((1, 3), (1, 0)), ((3, 1, 4), (1, 0, 2)), ((2, 1, 1), (2, 1, 0)), ((2, 3), (1, 0))):
        assert (
            pyframe.zeros(*shape).permute(*perm).is_contiguous() == torch.zeros(*shape).permute(*perm).is_contiguous()
        )
