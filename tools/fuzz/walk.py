"""One seed's walk, run in a child process by ``python -m tools.fuzz`` (so a crash kills only the child).

Call ``i`` of seed ``s`` is generated from its own generator, ``default_rng([s, i])``, so any call can be
replayed alone. Before each call the child prints ``@ i <description>``; a finding is printed as
``! <kind> i <description> :: <detail>``; the last line is ``= <calls>``. A child that dies (a signal,
an AddressSanitizer report) or stops printing is attributed to the last ``@`` line by the parent.
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings

import numpy as np

import pyframe as pf
from tools.fuzz import edges  # noqa: F401 - registers the edge generators (torch as their oracle)
from tools.fuzz.ops import GENERATORS, Call

# exceptions that say pyframe itself went wrong, not that the caller did
_INTERNAL = (AttributeError, KeyError, NameError, UnboundLocalError, AssertionError, SystemError, RecursionError)
# messages that leak an implementation detail instead of naming what the caller passed
_UNCLEAR = (
    "does not fit '", "int too big to convert", "tuple index out of range", "list index out of range",
    "'NoneType' object", "not supported between instances of", "unsupported operand type",
    "object is not subscriptable", "object is not iterable", "object cannot be interpreted",
)  # fmt: skip
_RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-9}


def make_call(seed: int, i: int) -> Call:
    rng = np.random.default_rng([seed, i])
    gen = GENERATORS[int(rng.integers(len(GENERATORS)))]
    return gen(rng)


def _arrays(x):
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _arrays(v)]
    return [x.detach().numpy() if isinstance(x, pf.Tensor) else np.asarray(x)]


def _scale(call: Call, want: np.ndarray) -> float:
    """Absolute tolerance grows with the magnitudes involved (a sum's rounding error does)."""
    scale = 1.0
    for a in [want, *(c.a for c in call.inputs), *([call.written.a] if call.written else [])]:
        a = np.asarray(a)
        if a.size and a.dtype.kind == "f":
            finite = np.abs(a[np.isfinite(a)].astype(np.float64))
            if finite.size:
                scale = max(scale, float(finite.max()))
    return scale


def compare(call: Call, got, want) -> str | None:
    """None when ``got`` (pyframe's answer) matches ``want`` (NumPy's), else what differs."""
    gots, wants = _arrays(got), _arrays(want)
    if len(gots) != len(wants):
        return f"{len(gots)} results, NumPy gives {len(wants)}"
    for g, w in zip(gots, wants, strict=True):
        if g.shape != w.shape:
            return f"shape {list(g.shape)}, NumPy gives {list(w.shape)}"
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if g.dtype.kind != "f" and w.dtype.kind == "f" and not np.all(np.isfinite(w)):
                continue  # NaN/inf cast to an integer dtype: undefined in NumPy
            w = w.astype(g.dtype)
        if g.dtype.kind == "f":
            rtol = _RTOL[g.dtype.name]
            ok = np.isclose(g, w, rtol=rtol, atol=rtol * _scale(call, w), equal_nan=True)
        else:
            ok = g == w
        if not np.all(ok):
            bad = np.argwhere(~np.asarray(ok))[0]
            idx = tuple(int(v) for v in bad)
            return f"at {list(idx)}: {g[idx]!r}, NumPy gives {w[idx]!r} (dtype {g.dtype})"
    return None


def classify(exc: BaseException) -> str | None:
    """None for a clean refusal; else why the exception is a finding."""
    if isinstance(exc, _INTERNAL) or not isinstance(exc, Exception):
        return f"internal error {type(exc).__name__}: {exc}"
    msg = str(exc)
    if any(s in msg for s in _UNCLEAR):
        return f"unclear error {type(exc).__name__}: {msg}"
    return None


def run_one(call: Call) -> tuple[str, str] | None:
    """(kind, detail) of a finding, or None. kind is "wrong" or "unclear"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call.run()
            error = None
        except Exception as e:  # noqa: BLE001 - every exception is classified below
            result, error = None, e
        want, ref_error = None, None
        if call.ref is not None:
            try:
                with np.errstate(all="ignore"):
                    want = call.ref()
            except Exception as e:  # noqa: BLE001
                ref_error = e
    for c in call.inputs:  # an out-of-place call must leave its inputs as they were
        if c is not call.written and not np.array_equal(c.t.detach().numpy(), c.a, equal_nan=True):
            return "wrong", f"input {c} was modified"
    if error is not None:
        why = classify(error)
        if why is None:
            return None
        return ("wrong" if why.startswith("internal") else "unclear"), why
    if call.ref is None:
        return None
    if ref_error is not None:
        if call.strict:
            return "wrong", f"NumPy refuses ({type(ref_error).__name__}: {ref_error}) but pyframe answered"
        return None
    if call.written is not None:
        result = call.written.t
    try:
        why = compare(call, result, want)
    except Exception as e:  # noqa: BLE001 - a result NumPy cannot read is a finding
        why = f"the result cannot be read: {type(e).__name__}: {e}"
    return None if why is None else ("wrong", why)


def walk(seed: int, calls: int) -> None:
    out = sys.stdout
    for i in range(calls):
        try:
            call = make_call(seed, i)
        except Exception as e:  # noqa: BLE001 - a generator that fails is a finding too
            out.write(f"! wrong {i} <generating the call> :: {type(e).__name__}: {e}\n")
            continue
        out.write(f"@ {i} {call.desc}\n")
        out.flush()
        found = run_one(call)
        if found is not None:
            kind, detail = found
            out.write(f"! {kind} {i} {call.desc} :: {detail}\n")
    out.write(f"= {calls}\n")
    out.flush()


def replay(seed: int, i: int) -> int:
    call = make_call(seed, i)
    print(f"seed {seed} call {i}: {call.desc}")
    try:
        print("pyframe:", call.run())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    if call.ref is not None:
        try:
            with np.errstate(all="ignore"):
                print("NumPy:  ", call.ref())
        except Exception as e:  # noqa: BLE001
            print(f"NumPy:   refuses ({type(e).__name__}: {e})")
    found = run_one(make_call(seed, i))
    print("verdict:", "ok" if found is None else f"{found[0]}: {found[1]}")
    return 0 if found is None else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz.walk")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--replay", type=int)
    args = p.parse_args(argv)
    pf.set_num_threads(1 + args.seed % 2)  # half the seeds run the kernels' parallel paths
    if args.replay is not None:
        return replay(args.seed, args.replay)
    walk(args.seed, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
