"""Recurrent cells: one time step of RNN (tanh, relu), LSTM and GRU, and the multi-layer,
optionally bidirectional loop over a sequence that nn.RNN/LSTM/GRU run.

The input half of every gate (``x W_ih^T + b_ih``) is one GEMM over the whole sequence;
each step then costs one GEMM for ``h W_hh^T`` and a few elementwise C-core ops. An LSTM layer over
a plain (unpacked) float32/float64 sequence runs its whole time loop in C instead (pf_lstm_forward /
pf_lstm_backward): one autograd node per layer and direction, and the hidden weight's gradient one
GEMM over all steps."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import check, ffi, lib
from pyframe.autograd.graph import SavedOutput, needs_grad, record
from pyframe.nn.functional._utils import _regrad
from pyframe.nn.functional.dropout import dropout
from pyframe.nn.functional.linear import linear
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.join import cat, stack
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

_NATIVE = (_dtype.float32, _dtype.float64)  # dtypes pf_lstm_forward takes


def _rnn_tanh_step(xw: Tensor, h: Tensor, w_hh: Tensor, b_hh) -> Tensor:
    return ew.tanh(ew.add(xw, linear(h, w_hh, b_hh)))


def _rnn_relu_step(xw: Tensor, h: Tensor, w_hh: Tensor, b_hh) -> Tensor:
    return ew.relu(ew.add(xw, linear(h, w_hh, b_hh)))


def _lstm_parts(gates: Tensor, c: Tensor) -> tuple:
    """The LSTM cell's pointwise part: activated gates i, f, g, o, the new c and tanh(c)."""
    i, f, g, o = gates.chunk(4, -1)
    i, f, g, o = ew.sigmoid(i), ew.sigmoid(f), ew.tanh(g), ew.sigmoid(o)
    c1 = ew.add(ew.mul(f, c), ew.mul(i, g))
    return i, f, g, o, c1, ew.tanh(c1)


def _lstm_pointwise(gates: Tensor, c: Tensor) -> tuple:
    """(h, c) from the gate pre-activations, recorded as one node with its backward written out:
    a step's graph is the GEMM, one add and this node instead of a dozen elementwise nodes."""
    with _grad_mode.no_grad():
        parts = _lstm_parts(gates, c)
        h1 = ew.mul(parts[3], parts[5])
    c1 = parts[4]
    if needs_grad(gates, c):
        kept = (*parts[:4], None, parts[5])  # not c1, an output: a cycle through the node

        def backward(dh, dc=None):
            # under create_graph the parts are recomputed with history, so the gradient is differentiable
            i, f, g, o, _, tc = _lstm_parts(gates, c) if _grad_mode.enabled else kept
            if dh is not None:
                dtc = ew.mul(dh, ew.mul(o, ew.sub(1.0, ew.mul(tc, tc))))
                dc = dtc if dc is None else ew.add(dc, dtc)
                d_o = ew.mul(ew.mul(dh, tc), ew.mul(o, ew.sub(1.0, o)))
            else:
                d_o = ew.mul(o, 0.0)
            d_i = ew.mul(ew.mul(dc, g), ew.mul(i, ew.sub(1.0, i)))
            d_f = ew.mul(ew.mul(dc, c), ew.mul(f, ew.sub(1.0, f)))
            d_g = ew.mul(ew.mul(dc, i), ew.sub(1.0, ew.mul(g, g)))
            return cat([d_i, d_f, d_g, d_o], -1), ew.mul(dc, f)

        record("LstmCellBackward0", backward, (gates, c), (h1, c1), (gates, c))
    return h1, c1


def _lstm_step(xw: Tensor, hc: tuple, w_hh: Tensor, b_hh) -> tuple:
    h, c = hc
    return _lstm_pointwise(ew.add(xw, linear(h, w_hh, b_hh)), c)


def _gru_step(xw: Tensor, h: Tensor, w_hh: Tensor, b_hh) -> Tensor:
    x_r, x_z, x_n = xw.chunk(3, -1)
    h_r, h_z, h_n = linear(h, w_hh, b_hh).chunk(3, -1)
    r = ew.sigmoid(ew.add(x_r, h_r))
    z = ew.sigmoid(ew.add(x_z, h_z))
    n = ew.tanh(ew.add(x_n, ew.mul(r, h_n)))
    return ew.add(n, ew.mul(z, ew.sub(h, n)))  # (1 - z) n + z h


STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One step of nn.RNNCell with tanh (torch's ``torch.rnn_tanh_cell``)."""
    return _rnn_tanh_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One step of nn.RNNCell with relu (torch's ``torch.rnn_relu_cell``)."""
    return _rnn_relu_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> tuple:
    """One step of nn.LSTMCell: gates (i, f, g, o) in that order, as torch; returns (h, c)."""
    return _lstm_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One step of nn.GRUCell: gates (r, z, n) in that order, as torch."""
    return _gru_step(linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def _row_blocks(x: Tensor, sizes: list) -> list:
    """Consecutive row blocks of a 2-d ``x`` as one node: its backward concatenates the blocks'
    gradients once, where separate slices would each scatter into a zero copy of all of ``x``."""
    with _grad_mode.no_grad():
        blocks, start = [], 0
        for n in sizes:
            blocks.append(x[start : start + n])
            start += n
    if needs_grad(x):
        kinds = [(b._shape, b.dtype) for b in blocks]  # not the blocks, outputs: a cycle through the node

        def backward(*grads):
            from pyframe.ops._common import zeros_of

            full = list(grads) + [None] * (len(kinds) - len(grads))
            parts = [g if g is not None else zeros_of(*k) for g, k in zip(full, kinds, strict=True)]
            return (cat(parts),)

        record("SplitBackward0", backward, (x,), tuple(blocks))
    return blocks


def _direction(mode: str, x: Tensor, state, weights: tuple, reverse: bool) -> tuple:
    """One layer in one direction over ``x`` [L, N, in]: (outputs [L, N, H], final state)."""
    w_ih, w_hh, b_ih, b_hh = weights
    dt = x.dtype
    if (
        mode == "LSTM" and dt in _NATIVE and state[0].dtype is dt and state[1].dtype is dt and w_hh.dtype is dt
        and w_ih.dtype is dt and (b_hh is None or b_hh.dtype is dt) and (b_ih is None or b_ih.dtype is dt)
    ):  # fmt: skip
        if b_ih is not None and b_hh is not None:
            # both biases in the input projection's: its backward sums the gates' gradient over the L*N rows
            # once for the two (the time loop would sum the same rows again for b_hh)
            xw, b_hh = linear(x, w_ih, ew.add(b_ih, b_hh)), None
        else:
            xw = linear(x, w_ih, b_ih)  # [L, N, G*H], one GEMM for the whole sequence
        if not reverse:
            return _lstm_layer(xw, state[0], state[1], w_hh, b_hh)
        out, state = _lstm_layer(xw.flip(0), state[0], state[1], w_hh, b_hh)
        return out.flip(0), state
    xw = linear(x, w_ih, b_ih)
    return _steps(mode, xw, state, w_hh, b_hh, reverse)


def _steps(mode: str, xw: Tensor, state, w_hh: Tensor, b_hh, reverse: bool) -> tuple:
    """The time loop op by op from the input half of the gates ``xw`` [L, N, G*H]."""
    step = STEPS[mode]
    steps, n = xw._shape[:2]
    xws = _row_blocks(xw.reshape(steps * n, xw._shape[-1]), [n] * steps)
    outs = []
    for t in reversed(range(steps)) if reverse else range(steps):
        state = step(xws[t], state, w_hh, b_hh)
        outs.append(state[0] if mode == "LSTM" else state)
    if reverse:
        outs.reverse()
    return stack(outs), state


def _lstm_layer(xw: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, b_hh) -> tuple:
    """An LSTM layer's time loop in C from ``xw`` [L, N, 4H]: (out [L, N, H], (h_n, c_n)), one node.
    The activated gates and every c are kept for backward (not when nothing needs a gradient);
    double backward differentiates the op-by-op loop instead."""
    L, N, G = xw._shape
    H = G // 4
    dt = xw.dtype
    with _grad_mode.no_grad():  # raw buffers for C: the node below records the real inputs
        xc, w, h0c, c0c = xw.contiguous(), w_hh.contiguous(), h0.contiguous(), c0.contiguous()
        b = b_hh.contiguous() if b_hh is not None else None
    out, cs = empty_tensor((L, N, H), dt), empty_tensor((L, N, H), dt)
    grad = needs_grad(xw, h0, c0, w_hh, b_hh)
    acts = empty_tensor((L, N, G), dt) if grad else None
    hw = empty_tensor((N, G), dt)
    null = ffi.NULL
    check(lib.pf_lstm_forward(dt.code, L, N, H, xc._ptr, w._ptr, b._ptr if b is not None else null, h0c._ptr,
                              c0c._ptr, out._ptr, cs._ptr, acts._ptr if grad else null, hw._ptr))  # fmt: skip
    with _grad_mode.no_grad():
        h_n, c_n = out[L - 1].clone(), cs[L - 1].clone()
    if grad:
        outs = SavedOutput(out)  # the outputs themselves would be a cycle through the node
        kinds = [(t._shape, t.dtype) for t in (out, h_n, c_n)]

        def backward(*grads):
            d_out, dh_n, dc_n = list(grads) + [None] * (3 - len(grads))
            if _grad_mode.enabled:  # create_graph: differentiate the op-by-op loop
                from pyframe.ops._common import zeros_of

                given = [g if g is not None else zeros_of(*k) for g, k in zip((d_out, dh_n, dc_n), kinds, strict=True)]

                def composite(a, h, c, wh, bh):
                    o, (hn, cn) = _steps("LSTM", a, (h, c), wh, bh, False)
                    return o, hn, cn

                return _regrad(composite, (xw, h0, c0, w_hh, b_hh), tuple(given))
            dg, dh0, dc0 = empty_tensor((L, N, G), dt), empty_tensor((N, H), dt), empty_tensor((N, H), dt)
            d = [g.contiguous() if g is not None else None for g in (d_out, dh_n, dc_n)]
            p = [g._ptr if g is not None else null for g in d]
            check(lib.pf_lstm_backward(dt.code, L, N, H, w._ptr, c0c._ptr, cs._ptr, acts._ptr, p[0], p[1], p[2],
                                       dg._ptr, dh0._ptr, dc0._ptr))  # fmt: skip
            flat = dg.reshape(L * N, G)
            d_w = d_b = None
            if w_hh.requires_grad:  # dW_hh = sum_t dG_t^T h_{t-1}: one GEMM over every step
                prev = cat([h0c.reshape(1, N, H), outs()[: L - 1]]).reshape(L * N, H)
                d_w = matmul(flat.mT, prev)
            if b_hh is not None and b_hh.requires_grad:
                d_b = rd.sum(flat, 0)
            return (dg if xw.requires_grad else None, dh0 if h0.requires_grad else None,
                    dc0 if c0.requires_grad else None, d_w, d_b)  # fmt: skip

        record("LstmBackward0", backward, (xw, h0, c0, w_hh, b_hh), (out, h_n, c_n), (w_hh, h0, c0, outs))
    return out, (h_n, c_n)


def _layers(mode: str, x: Tensor, hx, weights: list, num_layers: int, bidirectional: bool, dropout_p: float,
            training: bool, direction) -> tuple:  # fmt: skip
    """The stack both layouts share: each layer runs ``direction(layer_in, state, weights, reverse)``
    once per direction, the directions' outputs join on the last dim, dropout follows every layer
    but the last. Returns (output, h_n) with h_n a pair for LSTM."""
    from pyframe.ops.join import cat

    if x._shape[0] == 0:  # the empty-input rule: refused in the layer's name, as torch (not in stack())
        name = "RNN" if mode.startswith("RNN") else mode
        raise ValueError(f"{name}: expected sequence length to be larger than 0, got an input of shape "
                         f"{list(x._shape)} (sequence first)")  # fmt: skip
    dirs = 2 if bidirectional else 1
    lstm = mode == "LSTM"
    finals_h, finals_c = [], []
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            state = (hx[0][k], hx[1][k]) if lstm else hx[k]
            out, state = direction(layer_in, state, weights[k], d == 1)
            outs.append(out)
            finals_h.append(state[0] if lstm else state)
            if lstm:
                finals_c.append(state[1])
        layer_in = outs[0] if dirs == 1 else cat(outs, -1)
        if dropout_p > 0.0 and training and layer < num_layers - 1:
            layer_in = dropout(layer_in, dropout_p, True)
    h_n = stack(finals_h)
    return layer_in, ((h_n, stack(finals_c)) if lstm else h_n)


def run_rnn(mode: str, x: Tensor, hx, weights: list, num_layers: int, bidirectional: bool, dropout_p: float,
            training: bool) -> tuple:  # fmt: skip
    """Sequence-first ``x`` [L, N, in]; ``hx`` [layers*dirs, N, H] (a pair for LSTM);
    ``weights`` one (w_ih, w_hh, b_ih, b_hh) per layer and direction. Returns (output, h_n)
    with h_n a pair for LSTM."""

    def direction(layer_in, state, w, reverse):
        return _direction(mode, layer_in, state, w, reverse=reverse)

    return _layers(mode, x, hx, weights, num_layers, bidirectional, dropout_p, training, direction)


def _direction_packed(mode: str, data: Tensor, sizes: list, state, weights: tuple, reverse: bool) -> tuple:
    """One layer and direction over packed ``data``: step t updates only the first sizes[t]
    rows of the state (the sequences still running, longest first)."""
    from pyframe.ops.join import cat

    w_ih, w_hh, b_ih, b_hh = weights
    step = STEPS[mode]
    lstm = mode == "LSTM"
    xw = linear(data, w_ih, b_ih)  # every packed row at once
    outs = [None] * len(sizes)
    xws = _row_blocks(xw, sizes)
    for t in reversed(range(len(sizes))) if reverse else range(len(sizes)):
        b = sizes[t]
        rows = xws[t]
        if lstm:
            h, c = step(rows, (state[0][:b], state[1][:b]), w_hh, b_hh)
            outs[t] = h
            full = state[0]._shape[0]
            state = (h, c) if b == full else (cat([h, state[0][b:]]), cat([c, state[1][b:]]))
        else:
            h = step(rows, state[:b], w_hh, b_hh)
            outs[t] = h
            state = h if b == state._shape[0] else cat([h, state[b:]])
    return cat(outs), state


def run_rnn_packed(mode: str, data: Tensor, sizes: list, hx, weights: list, num_layers: int, bidirectional: bool,
                   dropout_p: float, training: bool) -> tuple:  # fmt: skip
    """run_rnn over packed ``data`` (rows in PackedSequence order); ``hx`` in sorted batch order.
    Returns (output data, h_n) with h_n a pair for LSTM."""

    def direction(layer_in, state, w, reverse):
        return _direction_packed(mode, layer_in, sizes, state, w, reverse=reverse)

    return _layers(mode, data, hx, weights, num_layers, bidirectional, dropout_p, training, direction)
