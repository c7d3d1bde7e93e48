"""Batching samples: ``default_collate`` (stack a list of samples into batched tensors, keeping
the sample's structure) and ``default_convert`` (NumPy to tensors, no batching). Same as
torch.utils.data's."""

from __future__ import annotations

import collections.abc as abc
import reprlib
from typing import Any

import numpy as np

from pyframe import _dtype
from pyframe.ops.join import stack
from pyframe.tensor import Tensor, from_numpy

__all__ = ["default_collate", "default_convert"]

_STRING = (str, bytes)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _numpy_to_tensor(arr: np.ndarray) -> Tensor:
    if arr.dtype.kind in "OSUV":
        raise TypeError(f"default_collate: NumPy arrays of dtype {arr.dtype} cannot become tensors")
    return from_numpy(np.asarray(arr, order="C"))  # ascontiguousarray would make a 0-d array 1-d


def default_convert(data: Any) -> Any:
    """Same as torch.utils.data.default_convert: NumPy arrays (not of strings or objects) become
    tensors, inside lists, tuples, namedtuples and dicts; everything else is kept."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUV":
        return _numpy_to_tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "OSUV":
        return _numpy_to_tensor(np.asarray(data))
    if isinstance(data, abc.Mapping):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, _STRING):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: list) -> Any:
    """Same as torch.utils.data.default_collate: tensors, NumPy arrays and NumPy scalars are
    stacked along a new first dim; Python floats become a float64 tensor, ints int64 and bools
    bool (a batch mixing them has torch.tensor's dtype); NumPy arrays and tensors after one stack
    together; strings stay a list; dicts, namedtuples and sequences are collated field by field
    (a tuple sample gives a list, as torch's)."""
    if not isinstance(batch, abc.Sequence) or isinstance(batch, _STRING):
        raise TypeError(f"default_collate expects a list of samples, got {type(batch).__name__}")
    if not batch:
        raise ValueError("default_collate: the batch is empty")
    elem = batch[0]
    if isinstance(elem, Tensor):
        if not all(isinstance(b, Tensor) for b in batch):
            raise TypeError("default_collate: a batch mixes tensors with other types")
        return stack(batch, 0)
    if isinstance(elem, (np.ndarray, np.generic)) and not isinstance(elem, (np.str_, np.bytes_)):
        if np.asarray(elem).dtype.kind in "OSUV":
            raise TypeError(
                "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                f"found numpy array of dtype {np.asarray(elem).dtype}"
            )
        if isinstance(elem, np.ndarray):  # torch's: each sample as a tensor (a Tensor among them too), stacked
            return default_collate([b if isinstance(b, Tensor) else _as_tensor(b) for b in batch])
        return _tensor(batch, None)  # NumPy scalars: torch.as_tensor(batch), promoting their dtypes
    # Python numbers, as torch's: a float first gives float64; an int or bool first gives tensor(batch), whose
    # dtype comes from all of them ([True, 2] int64, [1, 2.5] the default dtype, bools alone bool)
    if isinstance(elem, float):
        return _tensor(batch, _dtype.float64)
    if isinstance(elem, int):
        return _tensor(batch, None)
    if isinstance(elem, _STRING):
        return batch
    if isinstance(elem, abc.Mapping):
        if not all(isinstance(b, abc.Mapping) for b in batch):
            raise TypeError("default_collate: a batch mixes dicts with other types")
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, abc.Sequence):
        size = len(elem)
        if any(len(b) != size for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(s)) for s in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return transposed
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {type(elem).__name__}"
    )


def _as_tensor(x) -> Tensor:
    if isinstance(x, np.ndarray):
        return _numpy_to_tensor(x)
    return _tensor([x], None)[0] if isinstance(x, (int, float, np.generic)) else _tensor(x, None)


def _tensor(values: list, dt) -> Tensor:
    from pyframe.ops.creation import tensor

    try:
        return tensor(values, dtype=dt)
    except (TypeError, ValueError) as e:
        shown = reprlib.repr(values)  # any value: a dict among arrays reaches here too
        raise TypeError(f"default_collate: cannot make a tensor of {type(values).__name__} {shown}: {e}") from None
