"""nn layers side by side with torch: scaled_dot_product_attention (forward, and forward +
backward) at GPT-like sizes, and one LSTM step (a 1-step sequence, and 32 steps) in float32.
Lower is better; the ratio is torch's time over pyframe's (above 1: pyframe is faster).
"""

import numpy as np
from _harness import best_time, table, torch

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F


def sdpa_rows() -> list:
    rows = []
    for b, h, length, e in ((8, 4, 64, 32), (4, 8, 256, 64)):
        rng = np.random.default_rng(0)
        arrs = [rng.standard_normal((b, h, length, e)).astype(np.float32) for _ in range(3)]
        q, k, v = (pf.tensor(a) for a in arrs)
        qg, kg, vg = (pf.tensor(a, requires_grad=True) for a in arrs)
        r_f = {"pyframe": best_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)) * 1e3}
        r_b = {"pyframe": best_time(
            lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=True).sum().backward()) * 1e3}  # fmt: skip
        if torch is not None:
            tq, tk, tv = (torch.from_numpy(a) for a in arrs)
            tqg, tkg, tvg = (torch.from_numpy(a.copy()).requires_grad_() for a in arrs)
            sdpa = torch.nn.functional.scaled_dot_product_attention
            r_f["torch"] = best_time(lambda: sdpa(tq, tk, tv, is_causal=True)) * 1e3
            r_b["torch"] = best_time(lambda: sdpa(tqg, tkg, tvg, is_causal=True).sum().backward()) * 1e3
        rows += [(f"sdpa fwd {b}x{h}x{length}x{e}", r_f), (f"sdpa fwd+bwd {b}x{h}x{length}x{e}", r_b)]
    return rows


def lstm_rows() -> list:
    rows = []
    batch, inp, hid = 32, 128, 256
    pf.manual_seed(0)
    m = nn.LSTM(inp, hid)
    t = torch.nn.LSTM(inp, hid) if torch is not None else None
    if t is not None:
        with torch.no_grad():
            for a, b in zip(t.parameters(), m.parameters(), strict=True):
                a.copy_(torch.from_numpy(b.detach().numpy()))
    for steps in (1, 32):
        x = np.random.default_rng(1).standard_normal((steps, batch, inp)).astype(np.float32)
        px = pf.tensor(x)
        with pf.no_grad():
            r = {"pyframe": best_time(lambda: m(px)) * 1e3}
        r_b = {"pyframe": best_time(lambda: m(px)[0].sum().backward()) * 1e3}
        if t is not None:
            tx = torch.from_numpy(x)
            with torch.no_grad():
                r["torch"] = best_time(lambda: t(tx)) * 1e3
            r_b["torch"] = best_time(lambda: t(tx)[0].sum().backward()) * 1e3
        rows += [(f"lstm {steps} step fwd", r), (f"lstm {steps} step fwd+bwd", r_b)]
    return rows


def main() -> None:
    table("scaled_dot_product_attention, causal, float32 (lower is better)", "ms", sdpa_rows(),
          higher_is_better=False)  # fmt: skip
    table("LSTM(128, 256), batch 32, float32 (lower is better)", "ms", lstm_rows(), higher_is_better=False)


if __name__ == "__main__":
    main()
