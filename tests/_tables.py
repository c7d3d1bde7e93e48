"""Table tests for the families' test modules: each factory returns a test function over a table of cases,
which the module binds to a ``test_*`` name (``test_layer_matches_torch = module_table_test(LAYERS)``)."""

from __future__ import annotations

import pytest

import pyframe as pf
from tests._oracle import assert_reprs_match, case_matches_torch, compare_module, run_module


def module_table_test(table: dict):
    """A test over ``table`` (name -> (build, inputs[, compare_module keywords])): each module against torch's
    (``compare_module``)."""

    @pytest.mark.parametrize("name", list(table))
    def test(name):
        build, inputs, *kwargs = table[name]
        compare_module(build, *inputs, **(kwargs[0] if kwargs else {}))

    return test


def module_float64_table_test(table: dict):
    """A test over ``table`` (name -> (build, input shapes)): each module against torch's in float64
    (``run_module``)."""

    @pytest.mark.parametrize("name", list(table))
    def test(name):
        build, shapes = table[name]
        run_module(build, *shapes)

    return test


def reprs_test(*builds):
    """A test that each ``build(nn)`` prints as torch's."""

    def test():
        assert_reprs_match(*builds)

    return test


def constructor_errors_test(*builds):
    """A test that each ``build()`` refuses its arguments (ValueError, or AssertionError as torch)."""

    @pytest.mark.parametrize("build", builds)
    def test(build):
        with pytest.raises((ValueError, AssertionError)):
            build()

    return test


def torch_case_table_test(table: dict, **tolerances):
    """A test over ``table`` (name -> (fn(lib, *inputs), input arrays)): values and gradients against torch."""

    @pytest.mark.parametrize("name", sorted(table))
    def test(name):
        pytest.importorskip("torch")
        case_matches_torch(*table[name], **tolerances)

    return test


def gradcheck_table_test(table: dict):
    """A test over ``table`` (name -> (fn(lib, *inputs), input arrays)): float64 gradients against finite
    differences."""

    @pytest.mark.parametrize("name", sorted(table))
    def test(name):
        fn, arrays = table[name]
        inputs = tuple(pf.tensor(a, dtype=pf.float64, requires_grad=True) for a in arrays)
        assert pf.autograd.gradcheck(lambda *xs: fn(pf, *xs), inputs)

    return test
