"""Issue 10: no crash and no silent wrong answer. One test (or a few) per class of the red-team report;
each failed before its fix. Checkpoint, allocator, hook and plugin classes are in serialization/test_safety.py."""

import gc
import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F

# ---- 1. every exported view owns its memory ---------------------------------------------------


def test_numpy_view_of_a_from_numpy_tensor_keeps_the_array_alive():
    a = np.arange(100_000, dtype=np.float32)
    view = pf.from_numpy(a).numpy()
    del a
    gc.collect()
    np.ones(100_000, dtype=np.float32)  # would land in the freed block
    assert view[-1] == 99_999 and (view == np.arange(100_000, dtype=np.float32)).all()


def test_asarray_of_a_temporary_tensor_keeps_its_memory():
    arr = np.asarray(pf.from_numpy(np.full(50_000, 7, dtype=np.int64)))
    gc.collect()
    np.zeros(50_000, dtype=np.int64)
    assert (arr == 7).all()
    views = [pf.arange(10.0)[::3].numpy() for _ in range(3)]
    gc.collect()
    assert views[0].tolist() == [0.0, 3.0, 6.0, 9.0]


# ---- 2. read-only memory is never written --------------------------------------------------------


def test_read_only_memmap_is_copied_so_writes_cannot_crash(tmp_path):
    path = tmp_path / "w.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    mm = np.memmap(path, dtype=np.float32, mode="r")
    with pytest.warns(UserWarning, match="not writable; pyframe copies it"):
        t = pf.from_numpy(mm)
    t.add_(1)  # used to segfault
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and mm[0] == 0
    with pytest.warns(UserWarning, match="not writable"):  # a broadcast array is read-only too
        p = pf.nn.Parameter(pf.from_numpy(np.broadcast_to(np.float32(1), (3,))))
    opt = pf.optim.SGD([p], lr=0.5)
    p.grad = pf.ones(3)
    opt.step()
    assert p.tolist() == [0.5, 0.5, 0.5]


def test_tensor_of_a_read_only_array_copies_without_warning():
    a = np.arange(3.0)
    a.flags.writeable = False
    assert pf.tensor(a).tolist() == [0.0, 1.0, 2.0]


# ---- 3. writes whose source overlaps the destination ----------------------------------------------


def test_scatters_read_their_source_before_writing():
    idx = pf.tensor([1, 2, 3, 0])
    x = pf.arange(4.0)
    x[idx] = x
    assert x.tolist() == [3.0, 0.0, 1.0, 2.0]
    x = pf.arange(4.0)
    x.index_add_(0, idx, x)
    assert x.tolist() == [3.0, 1.0, 3.0, 5.0]
    x = pf.arange(4.0)
    x.scatter_add_(0, idx, x)
    assert x.tolist() == [3.0, 1.0, 3.0, 5.0]
    i = pf.tensor([1, 0])  # the index itself aliases the destination
    i.index_add_(0, i, pf.tensor([10, 20]))
    assert i.tolist() == [21, 10]


def test_two_from_numpy_views_of_one_array_are_seen_as_overlapping():
    a = np.arange(4.0)
    x = pf.from_numpy(a)
    x[pf.tensor([1, 2, 3, 0])] = pf.from_numpy(a)
    assert x.tolist() == [3.0, 0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.add_(pf.tensor([1.0, 2.0, 3.0])),
        lambda e: e.mul_(2),
        lambda e: e.copy_(pf.tensor([1.0, 2.0, 3.0])),
        lambda e: e.index_add_(0, pf.tensor([0]), pf.ones(1)),
        lambda e: e.clamp_(0, 1),
    ],
)
def test_in_place_writes_to_an_expanded_view_are_refused(write):
    base = pf.zeros(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(base.expand(3))
    assert base.tolist() == [0.0]


def test_fill_of_an_expanded_view_and_single_element_writes_stay_legal():
    e = pf.zeros(1).expand(3)
    e.fill_(2)
    assert e.tolist() == [2.0, 2.0, 2.0]
    e[1] = 5.0
    assert e.tolist() == [5.0, 5.0, 5.0]


# ---- 4, 5, 12. Python numbers are range-checked where they enter, floats are not int()ed --------


@pytest.mark.parametrize(
    "call",
    [
        lambda: pf.zeros(2, dtype=pf.int32).clamp(min=2**40),
        lambda: pf.full((2,), 2**40, dtype=pf.int32),
        lambda: pf.zeros(2, dtype=pf.int32).fill_(2**40),
        lambda: pf.zeros(2, dtype=pf.int32).masked_fill(pf.tensor([True, False]), 2**40),
        lambda: pf.tensor([2**40], dtype=pf.int32),
        lambda: pf.tensor([1e10], dtype=pf.int32),
        lambda: pf.zeros(2, dtype=pf.int32) + 2**40,
        lambda: pf.zeros(2, dtype=pf.int64) + 2**70,
        lambda: pf.full((2,), 2**63),
        lambda: pf.tensor(2**64),
        lambda: pf.tensor([2**63]),
    ],
)
def test_integers_out_of_the_dtype_range_are_refused_with_value_and_range(call):
    with pytest.raises(OverflowError, match=r"out of range for int(32|64) \(allowed: -\d+ to \d+\)"):
        call()


def test_setitem_range_check():
    x = pf.zeros(2, dtype=pf.int32)
    with pytest.raises(RuntimeError, match="1099511627776 is out of range for int32"):
        x[0] = 2**40
    assert x.tolist() == [0, 0]


def test_non_finite_and_large_float_fills_work():
    assert all(math.isnan(v) for v in pf.full((2,), math.nan).tolist())
    assert pf.zeros(2).fill_(-math.inf).tolist() == [-math.inf] * 2
    assert pf.full_like(pf.zeros(2), math.inf).tolist() == [math.inf] * 2
    assert F.pad(pf.zeros(2), (1, 1), value=-math.inf).tolist() == [-math.inf, 0.0, 0.0, -math.inf]
    assert pf.zeros(2).fill_(1e20).tolist() == [pytest.approx(1e20)] * 2
    assert (pf.zeros(1) + 2**70).item() == pytest.approx(2.0**70)
    assert pf.full((1,), 1e6, dtype=pf.float16).item() == math.inf  # float16 overflows to inf, as torch
    with pytest.raises(ValueError, match="nan cannot be converted to int64"):
        pf.zeros(1, dtype=pf.int64).fill_(math.nan)
    with pytest.raises(OverflowError, match=r"1e\+300 is out of range for float32 \(largest magnitude: 3.40282e\+38\)"):
        pf.full((1,), 1e300)


def test_huge_shapes_and_zero_d_splits_say_what_was_wrong():
    with pytest.raises(ValueError, match=r"shape \[0, 1099511627776, 1099511627776\] is too large"):
        pf.zeros(0, 2**40, 2**40)
    for fn in (lambda t: t.split(1), lambda t: t.chunk(1), lambda t: t.narrow(0, 0, 1), lambda t: t.unbind()):
        with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
            fn(pf.tensor(1.0))
    with pytest.raises(ValueError, match=r"conv2d\(\): stride must be at most 2147483647"):
        F.conv2d(pf.zeros(1, 1, 3, 3), pf.zeros(1, 1, 1, 1), stride=2**40)
    with pytest.raises(ValueError, match=r"max_pool2d\(\): stride must be at most"):
        F.max_pool2d(pf.zeros(1, 1, 3, 3), 2, stride=2**40)
    with pytest.raises(ValueError, match=r"bilinear\(\): inputs must have the same number of dims, from 1 to 7"):
        F.bilinear(pf.zeros(*[1] * 7, 2), pf.zeros(*[1] * 7, 2), pf.zeros(3, 2, 2))
    with pytest.raises(TypeError, match=r"narrow\(\): length must be an int, got bool"):
        pf.zeros(3).narrow(0, 0, True)


# ---- 7. float16 reductions accumulate in float32 -----------------------------------------------------


def test_float16_std_var_norm_round_once():
    torch = pytest.importorskip("torch")
    for values in ([60000.0, 0.0], [1.0, 2.0, 4.0], [30000.0, -30000.0, 100.0]):
        x, tx = pf.tensor(values, dtype=pf.float16), torch.tensor(values, dtype=torch.float16)
        assert x.std().item() == tx.std().item()
        assert x.var().item() == tx.var().item()
    assert pf.tensor([60000.0, 0.0], dtype=pf.float16).std().item() == 42432.0
    big = [3e38, 0.0, 0.0, 0.0, 0.0]  # found by the fuzzer: the float32 variance overflows, the std does not
    assert pf.tensor(big).std().item() == torch.tensor(big).std().item()
    assert pf.tensor([300.0, 400.0], dtype=pf.float16).norm().item() == 500.0


# ---- 8. several bool scalars as indices -------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, key",
    [
        ((3,), (True, False)),
        ((3,), (True, True)),
        ((3, 4), (0, True, False)),
        ((3, 4), (Ellipsis, True, True)),
        ((2, 0, 3), (0, [], Ellipsis, True)),
        ((3, 3, 1), ([], False)),
        ((3, 4), (True, slice(None), [1])),
    ],
)
def test_bool_scalar_indices_match_torch(shape, key):
    torch = pytest.importorskip("torch")
    tkey = tuple(torch.tensor(k, dtype=torch.long) if isinstance(k, list) else k for k in key)
    n = math.prod(shape)
    want = torch.arange(float(n)).reshape(shape)[tkey]
    got = pf.arange(float(n)).reshape(*shape)[key]
    assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()


# ---- 9, 10. strings are not bools; only floating tensors require grad -------------------------------


def test_strings_are_refused():
    with pytest.raises(TypeError, match="strings are refused"):
        pf.tensor(["False", "0"], dtype=pf.bool)


def test_only_floating_tensors_require_grad():
    x = pf.arange(3)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        x.requires_grad = True
    assert not x.requires_grad
    y = pf.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="gradients must be floating point tensors, got int64"):
        (y * 2).backward(pf.ones(3, dtype=pf.int64))


# ---- the fuzzer's own findings ---------------------------------------------------------------------


def test_float16_arithmetic_with_a_large_scalar_rounds_once():
    x = pf.tensor([1.0, math.inf], dtype=pf.float16)
    assert (x - 2**31).tolist() == [-math.inf, math.inf]  # not inf - inf = nan
    x.div_(-(2**63) - 1)  # the in-place form too (found by the ASan walk, seed 1004, call 117)
    assert x.tolist() == [-0.0, -math.inf]


def test_split_refuses_non_int_sizes():
    with pytest.raises(TypeError, match="must be an int or a list of ints, got nan"):
        pf.zeros(3).split(math.nan)
