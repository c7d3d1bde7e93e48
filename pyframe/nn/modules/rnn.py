"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells. Same as torch.nn's."""

from __future__ import annotations

import math
import numbers
import warnings

from pyframe import _grad_mode
from pyframe._backend import ShapeError
from pyframe.nn import init
from pyframe.nn.functional import rnn as R
from pyframe.nn.modules._utils import _changed
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase",
]  # fmt: skip


_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _positive_int(v, what: str, cls: str) -> int:
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v <= 0:
        raise ValueError(f"{cls}: {what} must be a positive integer, got {v!r}")
    return int(v)


def _uniform_params(shapes: list, hidden_size: int, dtype) -> list:
    """torch's reset_parameters: every parameter uniform(-1/sqrt(H), 1/sqrt(H)), in order."""
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    with _grad_mode.no_grad():
        return [init.uniform_(creation.empty(*s, dtype=dtype), -stdv, stdv) for s in shapes]


def _check_input(module: Module, input, ndims: tuple[int, int], kinds: str) -> None:  # noqa: A002
    """A recurrent layer's (``ndims`` (2, 3)) or a cell's ((1, 2)) input: a floating tensor of
    ``ndims`` dims whose last is ``input_size``."""
    cls = type(module).__name__
    if not isinstance(input, Tensor):
        raise TypeError(f"{cls}: input must be {kinds}, got {type(input).__name__}")
    if input.ndim not in ndims:
        raise ShapeError(f"{cls}: Expected input to be {ndims[0]}D or {ndims[1]}D, got {input.ndim}D tensor")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{cls}: input must be floating point, got {input.dtype.name}")
    if input._shape[-1] != module.input_size:
        raise ShapeError(f"{cls}: input has inconsistent input_size: input.size(-1) must be equal to input_size. "
                         f"Expected {module.input_size}, got {input._shape[-1]}")  # fmt: skip


def _each(state, fn):
    """``fn`` applied to a hidden state, or to both of LSTM's (h, c)."""
    return tuple(fn(t) for t in state) if isinstance(state, tuple) else fn(state)


class RNNBase(Module):
    """Same as torch.nn.RNNBase: parameters ``weight_ih_l{k}``, ``weight_hh_l{k}``,
    ``bias_ih_l{k}``, ``bias_hh_l{k}`` (suffix ``_reverse`` for the backward direction),
    registered in torch's order and initialised uniform(-1/sqrt(hidden_size), +). Differences:
    no ``proj_size`` (NotImplementedError). PackedSequence inputs are supported."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        cls = type(self).__name__
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):  # fmt: skip
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             f"element being zeroed, got {dropout!r}")  # fmt: skip
        input_size = _positive_int(input_size, "input_size", cls)
        hidden_size = _positive_int(hidden_size, "hidden_size", cls)
        num_layers = _positive_int(num_layers, "num_layers", cls)
        if proj_size:
            raise NotImplementedError(f"{cls}: proj_size is not supported")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers=1",
                          stacklevel=2)  # fmt: skip
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.bidirectional = bias, batch_first, bidirectional
        self.dropout = float(dropout)
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        g = _GATES[mode] * hidden_size
        names, shapes = [], []
        for layer in range(num_layers):
            layer_in = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                names += [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                shapes += [(g, layer_in), (g, hidden_size)]
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    shapes += [(g,), (g,)]
        for name, t in zip(names, _uniform_params(shapes, hidden_size, dtype), strict=True):
            setattr(self, name, Parameter(t))
        self._flat_weights_names = names
        per = 4 if bias else 2
        self._all_weights = [names[i : i + per] for i in range(0, len(names), per)]

    def reset_parameters(self) -> None:
        """Same as torch.nn.RNNBase.reset_parameters: every weight and bias drawn from U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size)).
        """
        stdv = 1.0 / math.sqrt(self.hidden_size)
        with _grad_mode.no_grad():
            for w in self.parameters():
                init.uniform_(w, -stdv, stdv)

    @property
    def all_weights(self) -> list:
        """Same as torch.nn.RNNBase.all_weights: the parameters per layer and direction, as lists in torch's order
        (``weight_ih``, ``weight_hh``, then the biases).
        """
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (torch's is for cuDNN)."""

    def _layer_weights(self) -> list:
        out = []
        for names in self._all_weights:
            ws = [getattr(self, n) for n in names]
            out.append(tuple(ws) if self.bias else (ws[0], ws[1], None, None))
        return out

    def _check_hidden(self, h, expected: tuple, what: str) -> None:
        if not isinstance(h, Tensor):
            raise TypeError(f"{type(self).__name__}: {what} must be a Tensor, got {type(h).__name__}")
        if h._shape != expected:
            raise ShapeError(f"{type(self).__name__}: expected {what} size {list(expected)}, got {list(h._shape)}")

    def forward(self, input: Tensor, hx=None):  # noqa: A002 - torch's name
        """(output, h_n) for RNN and GRU, (output, (h_n, c_n)) for LSTM, as torch."""
        from pyframe.nn.utils.rnn import PackedSequence

        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        _check_input(self, input, (2, 3), "a Tensor or a PackedSequence")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        layers = self.num_layers * (2 if self.bidirectional else 1)
        hshape = (layers, x._shape[1], self.hidden_size) if batched else (layers, self.hidden_size)
        hx = self._initial_state(hx, hshape, x.dtype)
        if not batched:
            hx = _each(hx, lambda t: t.unsqueeze(1))
        out, h = R.run_rnn(self.mode, x, hx, self._layer_weights(), self.num_layers, self.bidirectional,
                           self.dropout, self.training)  # fmt: skip
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
            h = _each(h, lambda t: t.squeeze(1))
        return out, h

    def _initial_state(self, hx, hshape: tuple, dtype):
        """``hx`` checked against ``hshape`` (a pair of such for LSTM), or zeros when None."""
        cls = type(self).__name__
        lstm = self.mode == "LSTM"
        if hx is None:
            z = creation.zeros(*hshape, dtype=dtype)
            return (z, z) if lstm else z
        if not lstm:
            self._check_hidden(hx, hshape, "hidden")
            return hx
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"{cls}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        self._check_hidden(hx[0], hshape, "hidden[0]")
        self._check_hidden(hx[1], hshape, "hidden[1]")
        return tuple(hx)

    def _forward_packed(self, packed, hx):
        from pyframe.ops import index as ix

        cls = type(self).__name__
        data, sizes = packed.data, [int(v) for v in packed.batch_sizes.tolist()]
        if data.ndim != 2 or data._shape[-1] != self.input_size:
            raise ShapeError(f"{cls}: packed input rows must be [*, {self.input_size}], got {list(data._shape)}")
        dirs = 2 if self.bidirectional else 1
        perm = packed.sorted_indices
        given = hx is not None
        hx = self._initial_state(hx, (self.num_layers * dirs, sizes[0], self.hidden_size), data.dtype)
        if given and perm is not None:  # the caller's states are in the original batch order
            hx = _each(hx, lambda t: ix.index_select(t, 1, perm))
        out, h = R.run_rnn_packed(self.mode, data, sizes, hx, self._layer_weights(), self.num_layers,
                                  self.bidirectional, self.dropout, self.training)  # fmt: skip
        back = packed.unsorted_indices
        if back is not None:
            h = _each(h, lambda t: ix.index_select(t, 1, back))
        return packed._replace(data=out), h

    def extra_repr(self) -> str:
        return _changed(self, f"{self.input_size}, {self.hidden_size}", num_layers=1, bias=True, batch_first=False,
                        dropout=0, bidirectional=False)  # fmt: skip


class RNN(RNNBase):
    """Same as torch.nn.RNN (Elman RNN, ``nonlinearity`` "tanh" or "relu")."""

    def __init__(self, *args, nonlinearity: str = "tanh", **kwargs) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Same as torch.nn.LSTM: gates (i, f, g, o); returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Same as torch.nn.GRU: gates (r, z, n); returns (output, h_n)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """Same as torch.nn.RNNCellBase: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        cls = type(self).__name__
        self.input_size = _positive_int(input_size, "input_size", cls)
        self.hidden_size = _positive_int(hidden_size, "hidden_size", cls)
        self.bias = bias
        g = num_chunks * hidden_size
        shapes = [(g, input_size), (g, hidden_size)] + ([(g,), (g,)] if bias else [])
        params = _uniform_params(shapes, hidden_size, dtype)
        self.weight_ih = Parameter(params[0])
        self.weight_hh = Parameter(params[1])
        if bias:
            self.bias_ih = Parameter(params[2])
            self.bias_hh = Parameter(params[3])
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def reset_parameters(self) -> None:
        """Same as torch.nn.RNNCellBase.reset_parameters: every weight and bias drawn from U(-1/sqrt(hidden_size),
        1/sqrt(hidden_size)).
        """
        stdv = 1.0 / math.sqrt(self.hidden_size)
        with _grad_mode.no_grad():
            for w in self.parameters():
                init.uniform_(w, -stdv, stdv)

    def _prepare_input(self, input: Tensor, hx, pair: bool):  # noqa: A002
        cls = type(self).__name__
        _check_input(self, input, (1, 2), "a Tensor")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        shape = (x._shape[0], self.hidden_size)
        if hx is None:
            z = creation.zeros(*shape, dtype=x.dtype)
            return x, ((z, z) if pair else z), batched
        hs = hx if pair else (hx,)
        if pair and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"{cls}: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
        out = []
        for h in hs:
            if not isinstance(h, Tensor):
                raise TypeError(f"{cls}: hidden state must be a Tensor, got {type(h).__name__}")
            h = h if batched else h.unsqueeze(0)
            if h._shape != shape:
                raise ShapeError(f"{cls}: expected hidden size {list(shape if batched else shape[1:])}, got "
                                 f"{list(h._shape if batched else h._shape[1:])}")  # fmt: skip
            out.append(h)
        return x, (tuple(out) if pair else out[0]), batched

    def extra_repr(self) -> str:
        return _changed(self, f"{self.input_size}, {self.hidden_size}", bias=True)


class RNNCell(RNNCellBase):
    """Same as torch.nn.RNNCell."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:  # fmt: skip
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, h, batched = self._prepare_input(input, hx, False)
        cell = R.rnn_tanh_cell if self.nonlinearity == "tanh" else R.rnn_relu_cell
        h = cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """Same as torch.nn.LSTMCell: returns (h_1, c_1)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:  # noqa: A002
        x, hc, batched = self._prepare_input(input, hx, True)
        h, c = R.lstm_cell(x, hc, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """Same as torch.nn.GRUCell."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:  # noqa: A002
        x, h, batched = self._prepare_input(input, hx, False)
        h = R.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h if batched else h.squeeze(0)
