"""Variable-length sequences: PackedSequence, pack_padded_sequence, pad_packed_sequence,
pad_sequence, pack_sequence, unpad_sequence, unpack_sequence. Same as torch.nn.utils.rnn.

Packing is slicing and ``cat`` (differentiable); nn.RNN/LSTM/GRU accept a PackedSequence
and run each time step on the sequences still active, as torch does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pyframe import _dtype
from pyframe._backend import ShapeError
from pyframe.ops import index as ix
from pyframe.ops.join import cat, stack
from pyframe.tensor import Tensor

__all__ = [
    "PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence", "pad_sequence",
    "unpack_sequence", "unpad_sequence",
]  # fmt: skip


class PackedSequence(NamedTuple):
    """Same as torch.nn.utils.rnn.PackedSequence: ``data`` holds time step 0 of every sequence,
    then step 1 of those long enough, ...; ``batch_sizes`` (int64) how many at each step;
    ``sorted_indices`` / ``unsorted_indices`` the permutation to and from length order (None
    when the batch was given sorted)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        return self._replace(data=self.data.to(*args, **kwargs))

    def cpu(self) -> PackedSequence:
        return self

    @property
    def is_cuda(self) -> bool:
        return False


def _lengths_list(lengths, fn: str) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.ndim != 1:
            raise TypeError(f"{fn}(): lengths must be a 1-d integer tensor or a list of ints, got {lengths.dtype.name} "
                            f"of shape {list(lengths._shape)}")  # fmt: skip
        return [int(v) for v in lengths.tolist()]
    if isinstance(lengths, np.ndarray) and lengths.ndim == 1 and lengths.dtype.kind in "iu":
        lengths = lengths.tolist()  # torch takes a numpy array of lengths too, and numpy's integers in a list
    if isinstance(lengths, Sequence):
        lengths = [_dtype.as_number(v) for v in lengths]
    if not isinstance(lengths, Sequence) or not all(isinstance(v, int) and not isinstance(v, bool) for v in lengths):
        raise TypeError(f"{fn}(): lengths must be a 1-d integer tensor or a list of ints, got {lengths!r}")
    return list(lengths)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:  # fmt: skip
    """Same as torch.nn.utils.rnn.pack_padded_sequence: ``input`` (T, B, *) (or (B, T, *) with
    ``batch_first``) with each sequence's length."""
    fn = "pack_padded_sequence"
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ShapeError(f"{fn}(): input must be a tensor of at least 2 dims (T, B, *)")
    lens = _lengths_list(lengths, fn)
    x = input.transpose(0, 1) if batch_first else input
    steps, batch = x._shape[:2]
    if len(lens) != batch:
        raise ShapeError(f"{fn}(): expected {batch} lengths for a batch of {batch}, got {len(lens)}")
    if any(v <= 0 for v in lens):
        raise ValueError(f"{fn}(): every length must be positive, got {lens}")
    if max(lens) > steps:
        raise ValueError(f"{fn}(): a length of {max(lens)} exceeds the {steps} time steps of the input")
    sorted_indices = unsorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:], strict=False)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")  # fmt: skip
    else:
        from pyframe.ops.creation import tensor
        from pyframe.ops.sorting import argsort

        sorted_indices = argsort(tensor(lens, dtype=_dtype.int64), descending=True, stable=True)
        unsorted_indices = invert_permutation(sorted_indices)
        lens = [lens[i] for i in sorted_indices.tolist()]
        x = ix.index_select(x, 1, sorted_indices)
    sizes = [sum(1 for v in lens if v > t) for t in range(lens[0])]
    data = cat([x[t, :b] for t, b in enumerate(sizes)])
    from pyframe.ops.creation import tensor

    return PackedSequence(data, tensor(sizes, dtype=_dtype.int64), sorted_indices, unsorted_indices)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    if permutation is None:
        return None
    from pyframe.ops._common import zeros_of
    from pyframe.ops.creation import arange

    out = zeros_of(permutation._shape, _dtype.int64)
    ix.scatter_add_(out, 0, permutation, arange(permutation._numel, dtype=_dtype.int64))
    return out


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Same as torch.nn.utils.rnn.pad_packed_sequence: (padded (T, B, *) or (B, T, *), lengths)."""
    fn = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{fn}(): expected a PackedSequence, got {type(sequence).__name__}")
    data, sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    steps, batch = len(sizes), sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"{fn}(): Expected total_length to be at least the length of the longest sequence "
                             f"({steps}), but got total_length={total_length}")  # fmt: skip
        steps = total_length
    feat = data._shape[1:]
    from pyframe.ops.creation import full

    rows, off = [], 0
    for t in range(steps):
        b = sizes[t] if t < len(sizes) else 0
        part = data[off : off + b]
        off += b
        if b < batch:
            pad = full((batch - b, *feat), padding_value, dtype=data.dtype)
            part = cat([part, pad]) if b else pad
        rows.append(part)
    padded = stack(rows)  # [T, B, *] in sorted order
    lens = [sum(1 for s in sizes if s > i) for i in range(batch)]
    from pyframe.ops.creation import tensor

    lengths = tensor(lens, dtype=_dtype.int64)
    if sequence.unsorted_indices is not None:
        padded = ix.index_select(padded, 1, sequence.unsorted_indices)
        lengths = ix.index_select(lengths, 0, sequence.unsorted_indices)
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:  # fmt: skip
    """Same as torch.nn.utils.rnn.pad_sequence: a list of (L_i, *) tensors as (T, B, *) (or
    (B, T, *)), padded with ``padding_value`` on ``padding_side``."""
    fn = "pad_sequence"
    seqs = list(sequences) if not isinstance(sequences, Tensor) else list(sequences.unbind(0))
    if not seqs:
        raise ValueError(f"{fn}(): received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"{fn}(): padding_side must be 'left' or 'right', got {padding_side!r}")
    for s in seqs:
        if not isinstance(s, Tensor) or s.ndim < 1 or s._shape[1:] != seqs[0]._shape[1:]:
            raise ShapeError(f"{fn}(): every sequence must be a tensor (L, *) with the same trailing dims, got "
                             f"{[list(getattr(q, 'shape', ())) for q in seqs]}")  # fmt: skip
    longest = max(s._shape[0] for s in seqs)
    from pyframe.ops.creation import full

    padded = []
    for s in seqs:
        n = longest - s._shape[0]
        if n:
            pad = full((n, *s._shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Same as torch.nn.utils.rnn.pack_sequence."""
    lengths = [s._shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list[Tensor]:
    """Same as torch.nn.utils.rnn.unpad_sequence."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths_list(lengths, "unpad_sequence"))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Same as torch.nn.utils.rnn.unpack_sequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
