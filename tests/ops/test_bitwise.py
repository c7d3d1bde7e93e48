"""Bitwise ops, shifts, gcd and lcm: hand-checked values, NumPy references over every integer dtype and layout,
the operators and their reflected and in-place forms, error inputs, and torch as an oracle when importable."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

INTS = ("uint8", "int8", "int16", "int32", "int64")
BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _rand(dtype: str, shape, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def _shl(a: int, b: int, dtype: str) -> int:
    """torch's left shift: 0 past the width or for a negative count, else the low bits of a << b."""
    bits = BITS[dtype]
    if b < 0 or b >= bits:
        return 0
    return _wrap(a << b, dtype)


def _shr(a: int, b: int, dtype: str) -> int:
    bits = BITS[dtype]
    if b < 0 or b >= bits:
        return -1 if a < 0 else 0
    return a >> b


def _wrap(v: int, dtype: str) -> int:
    return int(np.array(v & ((1 << BITS[dtype]) - 1), dtype=np.uint64).astype(dtype))


def _gcd(a: int, b: int, dtype: str) -> int:
    """torch's calc_gcd in the element type: |x| of the type's minimum stays negative."""
    a, b = _wrap(abs(a), dtype), _wrap(abs(b), dtype)
    while a != 0:
        a, b = _crem(b, a), a
    return b


def _crem(b: int, a: int) -> int:
    """C's remainder: the dividend's sign."""
    r = abs(b) % abs(a)
    return -r if b < 0 else r


def _cdiv(b: int, a: int) -> int:
    """C's division: truncated toward zero."""
    q = abs(b) // abs(a)
    return -q if (b < 0) != (a < 0) else q


def _lcm(a: int, b: int, dtype: str) -> int:
    g = _gcd(a, b, dtype)
    if g == 0:
        return 0
    m = _cdiv(a, g) * b
    if BITS[dtype] >= 32:
        m = _wrap(m, dtype)
    return _wrap(abs(m), dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_and_or_xor_not_match_numpy_on_every_layout(dtype):
    a_np, b_np = _rand(dtype, (4, 6), 1), _rand(dtype, (4, 6), 2)
    a, b = pyframe.tensor(a_np), pyframe.tensor(b_np)
    assert a.dtype == getattr(pyframe, dtype)
    np.testing.assert_array_equal(pyframe.bitwise_and(a, b).numpy(), a_np & b_np)
    np.testing.assert_array_equal((a | b).numpy(), a_np | b_np)
    np.testing.assert_array_equal((a ^ b).numpy(), a_np ^ b_np)
    np.testing.assert_array_equal((~a).numpy(), ~a_np)
    # strided (a transpose) and broadcast operands take the general walk
    np.testing.assert_array_equal((a.t() & b.t()).numpy(), (a_np & b_np).T)
    np.testing.assert_array_equal((a ^ b[0]).numpy(), a_np ^ b_np[0])
    np.testing.assert_array_equal(pyframe.bitwise_not(a.t()).numpy(), ~a_np.T)


def test_bool_operands_are_logical():
    x = pyframe.tensor([True, True, False, False])
    y = pyframe.tensor([True, False, True, False])
    assert (x & y).tolist() == [True, False, False, False]
    assert (x | y).tolist() == [True, True, True, False]
    assert (x ^ y).tolist() == [False, True, True, False]
    assert (~x).tolist() == [False, False, True, True]
    assert (x & y).dtype == pyframe.bool
    assert (x | True).dtype == pyframe.bool
    assert (x & 3).dtype == pyframe.int64  # a Python int lifts bool to the integer category


@pytest.mark.parametrize("dtype", INTS)
def test_shifts_match_torchs_rule_for_every_count(dtype):
    bits = BITS[dtype]
    info = np.iinfo(dtype)
    values = [v for v in (0, 1, 5, -1, -7, 100, info.min, info.max) if info.min <= v <= info.max]
    counts = [c for c in (-1, 0, 1, 3, bits - 1, bits, bits + 3) if info.min <= c <= info.max]
    pairs = [(v, c) for v in values for c in counts]
    a = pyframe.tensor([v for v, _ in pairs], dtype=getattr(pyframe, dtype))
    b = pyframe.tensor([c for _, c in pairs], dtype=getattr(pyframe, dtype))
    assert (a << b).tolist() == [_shl(v, c, dtype) for v, c in pairs]
    assert (a >> b).tolist() == [_shr(v, c, dtype) for v, c in pairs]
    assert pyframe.bitwise_left_shift(a, 1).tolist() == [_shl(v, 1, dtype) for v, _ in pairs]
    assert pyframe.bitwise_right_shift(a, 2).tolist() == [_shr(v, 2, dtype) for v, _ in pairs]


def test_shift_examples_and_reflected_forms():
    assert (pyframe.tensor([1, 2, 3]) << 2).tolist() == [4, 8, 12]
    assert (1 << pyframe.tensor([0, 1, 4])).tolist() == [1, 2, 16]
    assert (256 >> pyframe.tensor([0, 4, 8])).tolist() == [256, 16, 1]
    u = pyframe.tensor([255, 1, 128], dtype=pyframe.uint8)
    assert (u >> 8).tolist() == [0, 0, 0] and (u << 1).tolist() == [254, 2, 0]
    i8 = pyframe.tensor([-128, 64, -1], dtype=pyframe.int8)
    assert (i8 >> 100).tolist() == [-1, 0, -1] and (i8 << 1).tolist() == [0, -128, -2]
    assert (pyframe.tensor([2**62]) << 3).tolist() == [0]
    assert (pyframe.tensor([-5]) >> 64).tolist() == [-1]


@pytest.mark.parametrize("dtype", INTS)
def test_gcd_lcm_in_the_element_type(dtype):
    info = np.iinfo(dtype)
    values = [v for v in (0, 1, -1, 6, -4, 9, 12, 100, 127, info.min, info.max) if info.min <= v <= info.max]
    pairs = [(x, y) for x in values for y in values]
    dt = getattr(pyframe, dtype)
    a = pyframe.tensor([x for x, _ in pairs], dtype=dt)
    b = pyframe.tensor([y for _, y in pairs], dtype=dt)
    assert pyframe.gcd(a, b).tolist() == [_gcd(x, y, dtype) for x, y in pairs]
    assert pyframe.lcm(a, b).tolist() == [_lcm(x, y, dtype) for x, y in pairs]


def test_gcd_lcm_examples():
    assert pyframe.gcd(pyframe.tensor([12, -18, 0, 7]), pyframe.tensor([18, 12, 0, 0])).tolist() == [6, 6, 0, 7]
    assert pyframe.lcm(pyframe.tensor([4, -6, 0]), pyframe.tensor([6, 4, 5])).tolist() == [12, 12, 0]
    i8 = pyframe.int8
    assert pyframe.gcd(pyframe.tensor([-128], dtype=i8), pyframe.tensor([6], dtype=i8)).tolist() == [-2]
    assert pyframe.lcm(pyframe.tensor([100], dtype=i8), pyframe.tensor([3], dtype=i8)).tolist() == [44]


def test_promotion_between_integer_dtypes():
    u8 = pyframe.tensor([5], dtype=pyframe.uint8)
    i8 = pyframe.tensor([3], dtype=pyframe.int8)
    assert (u8 & i8).dtype == pyframe.int16 and (u8 & i8).tolist() == [1]
    assert (u8 & 3).dtype == pyframe.uint8
    assert (3 & i8).dtype == pyframe.int8
    assert (pyframe.tensor([1, 2]) << u8).dtype == pyframe.int64


def test_inplace_and_out_forms():
    x = pyframe.tensor([12, 10], dtype=pyframe.uint8)
    y = x
    x &= 6
    assert x is y and x.tolist() == [4, 2] and x.dtype == pyframe.uint8
    x |= pyframe.tensor([1, 1])  # an int64 result cast back to uint8, as torch
    assert x.tolist() == [5, 3] and x.dtype == pyframe.uint8
    x ^= 1
    x <<= 2
    x >>= 1
    assert x.tolist() == [8, 4]
    x.bitwise_not_()
    assert x.tolist() == [247, 251]
    z = pyframe.tensor([9, 6])
    assert z.gcd_(pyframe.tensor([6, 4])).tolist() == [3, 2]
    assert z.lcm_(pyframe.tensor([4, 4])).tolist() == [12, 4]
    out = pyframe.empty(2, dtype=pyframe.int64)
    r = pyframe.bitwise_xor(pyframe.tensor([1, 2]), pyframe.tensor([3, 3]), out=out)
    assert r is out and out.tolist() == [2, 1]
    empty = pyframe.empty(0, dtype=pyframe.int64)
    assert pyframe.bitwise_or(pyframe.tensor([1, 2]), 4, out=empty).tolist() == [5, 6]
    # an out= that overlaps an operand reads every element before writing
    w = pyframe.tensor([1, 2, 4, 8])
    pyframe.bitwise_or(w, w.flip(0), out=w)
    assert w.tolist() == [9, 6, 6, 9]


def test_float_operands_raise():
    f = pyframe.tensor([1.5, 2.0])
    i = pyframe.tensor([1, 2])
    for fn in (pyframe.bitwise_and, pyframe.bitwise_or, pyframe.bitwise_xor, pyframe.bitwise_left_shift,
               pyframe.bitwise_right_shift, pyframe.gcd, pyframe.lcm):  # fmt: skip
        with pytest.raises(TypeError, match="not implemented for float32"):
            fn(f, i)
        with pytest.raises(TypeError, match="float32|two tensors"):
            fn(i, 1.5)  # a Python float makes the result floating (gcd and lcm take no number at all)
    with pytest.raises(TypeError, match="bitwise_not"):
        _ = ~f
    with pytest.raises(TypeError):
        _ = f << 1
    with pytest.raises(TypeError, match="integer dtypes"):
        pyframe.gcd(pyframe.tensor([True]), pyframe.tensor([False]))
    with pytest.raises(TypeError, match="integer dtypes"):
        pyframe.bitwise_left_shift(pyframe.tensor([True]), True)
    with pytest.raises(TypeError, match="can't be cast"):
        b = pyframe.tensor([True])
        b &= pyframe.tensor([3])  # an int64 result cannot go into a bool tensor
    with pytest.raises(TypeError, match="at least one Tensor"):
        pyframe.bitwise_and(1, 2)
    with pytest.raises(TypeError, match="two tensors"):
        pyframe.gcd(pyframe.tensor([4]), 2)  # torch has no number overload for gcd/lcm
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        pyframe.tensor([1]).bitwise_and_(pyframe.tensor([1, 2]))  # in place never grows the target
    with pytest.raises(RuntimeError, match="broadcast"):
        pyframe.empty(0, dtype=pyframe.int64).bitwise_or_(pyframe.tensor([1, 2]))


def test_bitwise_is_a_c_entry_that_checks_its_input():
    from pyframe._backend import check, lib

    a = pyframe.tensor([1.0])
    with pytest.raises(TypeError, match="not implemented for float32"):
        check(lib.pf_bitwise(lib.PF_GCD, a._d(), a._d(), a._d()))
    i, j = pyframe.tensor([1]), pyframe.tensor([1], dtype=pyframe.int32)
    with pytest.raises(TypeError, match="one dtype"):
        check(lib.pf_bitwise(lib.PF_BITWISE_AND, i._d(), j._d(), i._d()))
    with pytest.raises(TypeError, match="not implemented for float32"):
        check(lib.pf_bitwise_not(a._d(), a._d()))


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                                "bitwise_right_shift", "gcd", "lcm"])  # fmt: skip
def test_match_torch_over_every_dtype_pair(torch, op):
    dtypes = ("bool",) + INTS
    for da in dtypes:
        for db in dtypes:
            a_np = np.array([True, False, True, True]) if da == "bool" else _rand(da, (4,), 3)
            # small counts, so that the shifts are not all past the width
            b_np = np.array([True, True, False, True]) if db == "bool" else (_rand(db, (4,), 4) % BITS[db]).astype(db)
            ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
            pa, pb = pyframe.from_numpy(a_np), pyframe.from_numpy(b_np)
            try:
                expected = getattr(torch, op)(ta, tb)
            except (RuntimeError, TypeError):
                with pytest.raises(TypeError):
                    getattr(pyframe, op)(pa, pb)
                continue
            got = getattr(pyframe, op)(pa, pb)
            assert str(expected.dtype) == f"torch.{got.dtype.name}", (op, da, db)
            assert got.tolist() == expected.tolist(), (op, da, db)


def test_operators_match_torch_with_numbers(torch):
    for dtype in ("bool",) + INTS:
        a_np = np.array([True, False]) if dtype == "bool" else _rand(dtype, (5,), 7)
        ta, pa = torch.from_numpy(a_np), pyframe.from_numpy(a_np)
        for s in (True, 1, 3, 6):
            for name, fn in [
                ("&", lambda x, s: x & s), ("|", lambda x, s: x | s), ("^", lambda x, s: x ^ s),
                ("r&", lambda x, s: s & x), ("r|", lambda x, s: s | x), ("r^", lambda x, s: s ^ x),
            ]:  # fmt: skip
                expected, got = fn(ta, s), fn(pa, s)
                assert str(expected.dtype) == f"torch.{got.dtype.name}", (name, dtype, s)
                assert got.tolist() == expected.tolist(), (name, dtype, s)
            if dtype != "bool" and not isinstance(s, bool):
                for name, fn in [("<<", lambda x, s: x << s), (">>", lambda x, s: x >> s)]:
                    assert fn(pa, s).tolist() == fn(ta, s).tolist(), (name, dtype, s)
        assert (~pa).tolist() == (~ta).tolist()
