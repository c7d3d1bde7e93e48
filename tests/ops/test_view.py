"""Views and copies: what shares memory and what doesn't (view, reshape, transpose, expand, contiguous, clone,
detach, to), dtype conversions, item/tolist, metadata, movedim/atleast_*d/broadcast_* against torch."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    ALL,
    DTYPES,
    npy,
    pf,
    random_array,
)
from tests._tables import torch_case_table_test


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


# ---- cat / stack / split / chunk / unbind ----------------------------------------------------------------


# ---- indexing ----------------------------------------------------------------------------------------------


# ---- __setitem__ ------------------------------------------------------------------------------------------


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


def test_reshape_cache_refuses_what_torch_refuses():
    x = pyframe.randn(40, 50)
    assert tuple(x.reshape(40, 50).shape) == (40, 50)  # (40, 50) is a known shape now
    with pytest.raises(TypeError):
        x.reshape(40.0, 50)
    with pytest.raises(TypeError):
        x.reshape(True, 2000)
    assert tuple(x.reshape(-1, 50).shape) == (40, 50)
    assert tuple(x.reshape((2000,)).shape) == (2000,)
    with pytest.raises(RuntimeError, match="invalid for input"):
        x.reshape(41, 50)


# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG = np.random.default_rng(15)


def arr(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


TORCH_CASES = {
    "movedim": (lambda L, a: L.movedim(a, (0, 1), (2, 0)), (arr(2, 3, 4),)),
    "moveaxis": (lambda L, a: a.moveaxis(-1, 0), (arr(2, 3, 4),)),
    "atleast_3d": (lambda L, a: L.atleast_3d(a), (arr(3),)),
    "broadcast_tensors": (
        lambda L, a, b: L.broadcast_tensors(a, b)[0] * 2 + L.broadcast_tensors(a, b)[1],
        (arr(3, 1), arr(4)),
    ),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES)


def test_movedim_bad_input_and_shape_helpers():
    with pytest.raises(RuntimeError, match="source .* and destination"):
        pyframe.movedim(pyframe.zeros(2, 3), (0, 1), 0)
    torch = pytest.importorskip("torch")
    assert pyframe.broadcast_shapes((3, 1), (4,)) == torch.broadcast_shapes((3, 1), (4,))
    assert pyframe.is_tensor(pyframe.zeros(1)) and not pyframe.is_tensor([1])
    assert pyframe.is_floating_point(pyframe.zeros(1)) and pyframe.numel(pyframe.zeros(2, 3)) == 6


# every tensor and view gets its element count from one place (tensor.layout): a count past int64 is refused
# by whichever op would make it, instead of a tensor that fails later (repr, numpy, reductions)
HUGE_VIEWS = {
    "expand": lambda: pyframe.ones(1, 1).expand(2**62, 2**62),
    "expand_new_dim": lambda: pyframe.ones(1).expand(2**62, 4),
    "broadcast_to": lambda: pyframe.broadcast_to(pyframe.ones(1, 1), (2**40, 2**40)),
    "expand_three": lambda: pyframe.ones(1, 1, 1).expand(2**30, 2**30, 2**30),
    "unsqueeze_expand": lambda: pyframe.ones(1).expand(2**62).unsqueeze(0).expand(4, 2**62),
    "add_of_expands": lambda: pyframe.ones(1, 1).expand(2**40, 1) + pyframe.ones(1, 1).expand(1, 2**40),
    "zeros": lambda: pyframe.zeros(2**40, 2**40),
}


@pytest.mark.parametrize("name", sorted(HUGE_VIEWS))
def test_element_counts_past_int64_are_refused_where_the_shape_is_made(name):
    with pytest.raises((ValueError, MemoryError), match="int64|too large|would need"):
        HUGE_VIEWS[name]()


def test_large_views_within_int64_stay_legal():
    x = pyframe.ones(1).expand(2**62).view(2**31, 2**31)
    assert x.shape == (2**31, 2**31) and x[5, 7].item() == 1.0


def test_to_refuses_two_dtypes():
    with pytest.raises(TypeError, match="two target dtypes"):
        pyframe.ones(1).to(pyframe.float64, pyframe.float32)
    with pytest.raises(TypeError, match="two target dtypes"):
        pyframe.ones(1).to(pyframe.float64, dtype=pyframe.float32)
    assert pyframe.ones(1).to("cpu", pyframe.float64).dtype == pyframe.float64


def test_channels_last_strides_and_checks_match_torch():
    torch = pytest.importorskip("torch")
    import pyframe as pf

    x = pf.randn(2, 3, 4, 5, requires_grad=True)
    tx = torch.from_numpy(x.detach().numpy().copy())
    cl = x.to(memory_format=pf.channels_last)
    tcl = tx.to(memory_format=torch.channels_last)
    assert cl.stride() == tcl.stride() and cl.shape == tuple(tcl.shape)
    assert np.array_equal(cl.detach().numpy(), x.detach().numpy())
    assert cl.is_contiguous(memory_format=pf.channels_last) and not cl.is_contiguous()
    assert cl.contiguous(memory_format=pf.channels_last) is cl
    assert cl.contiguous().stride() == tcl.contiguous().stride()
    assert cl.to(memory_format=pf.contiguous_format).stride() == (60, 20, 5, 1)
    assert cl.clone(memory_format=pf.preserve_format).stride() == tcl.clone().stride()
    assert pf.empty(2, 3, 4, 5, memory_format=pf.channels_last).stride() == tcl.stride()
    ambiguous, tamb = pf.empty(4, 1, 4, 4), torch.empty(4, 1, 4, 4)
    for fmt, tfmt in ((pf.channels_last, torch.channels_last), (pf.contiguous_format, torch.contiguous_format)):
        assert ambiguous.is_contiguous(memory_format=fmt) == tamb.is_contiguous(memory_format=tfmt)
    assert ambiguous.to(memory_format=pf.channels_last).stride() == tamb.to(memory_format=torch.channels_last).stride()
    v = pf.randn(2, 3, 2, 2, 2)
    assert v.contiguous(memory_format=pf.channels_last_3d).stride() == (
        torch.zeros(2, 3, 2, 2, 2).contiguous(memory_format=torch.channels_last_3d).stride()
    )
    (cl * pf.arange(60.0).reshape(2, 3, 2, 5)[:, :, :1].expand(2, 3, 4, 5)).sum().backward()  # gradient flows through
    assert x.grad is not None and x.grad.shape == x.shape
    with pytest.raises(RuntimeError, match="rank 4"):
        pf.randn(2, 3, 4).contiguous(memory_format=pf.channels_last)
    with pytest.raises(ValueError, match="memory_format"):
        x.clone(memory_format="sideways")
