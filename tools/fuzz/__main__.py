"""``python -m tools.fuzz``: run the fuzz walk over many seeds, each in a child process.

    python -m tools.fuzz --seeds 8 --calls 300          # the short run in `make test`
    python -m tools.fuzz --budget 600 --asan            # under an AddressSanitizer build of the core
    python -m tools.fuzz --seed 17 --replay 342         # replay one call, in this process

Prints every finding with the command that replays it, then
``fuzz: N calls, C crashes, W wrong, H hangs (U unclear errors)``; exits 1 when C, W or H is not 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _child(seed: int, calls: int, timeout: float, env: dict) -> dict:
    """Run one seed; what it found, with a crash or hang attributed to the call that was running."""
    cmd = [sys.executable, "-m", "tools.fuzz.walk", "--seed", str(seed), "--calls", str(calls)]
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        out, err, rc, hung = p.stdout, p.stderr, p.returncode, False
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        rc, hung = None, True
    started, findings, done = None, [], None
    for line in out.splitlines():
        if line.startswith("@ "):
            started = line[2:]
        elif line.startswith("! "):
            kind, rest = line[2:].split(" ", 1)
            findings.append((kind, rest))
        elif line.startswith("= "):
            done = int(line[2:])
    ran = int(started.split(" ", 1)[0]) + 1 if started else 0
    if hung:
        findings.append(("hang", f"{started} :: no answer within {timeout:.0f} s"))
    elif done is None:
        why = next((ln.strip() for ln in err.splitlines() if "ERROR: AddressSanitizer" in ln), None)
        why = why or (f"killed by signal {-rc}" if rc and rc < 0 else f"exit status {rc}: {err.strip()[-300:]}")
        findings.append(("crash", f"{started} :: {why}"))
    return {"calls": done if done is not None else ran, "findings": findings}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, help="run (or replay from) this seed only")
    p.add_argument("--replay", type=int, metavar="CALL", help="replay call CALL of --seed in this process")
    p.add_argument("--seeds", type=int, default=8, help="number of seeds, from --first (default 8)")
    p.add_argument("--first", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--calls", type=int, default=300, help="calls per seed (default 300)")
    p.add_argument("--budget", type=float, help="stop starting seeds after this many seconds")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a seed counts as hung")
    p.add_argument("--asan", action="store_true", help="run under an AddressSanitizer build of the core")
    args = p.parse_args(argv)
    if args.replay is not None:
        if args.seed is None:
            p.error("--replay needs --seed")
        from tools.fuzz.walk import replay

        return replay(args.seed, args.replay)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    if args.asan:
        from tools.fuzz.asan import asan_env

        env.update(asan_env())
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    if args.budget and args.seed is None:
        seeds = range(args.first, args.first + 10**6)
    t0, total, counts = time.monotonic(), 0, {"crash": 0, "wrong": 0, "hang": 0, "unclear": 0}
    for seed in seeds:
        if args.budget and time.monotonic() - t0 > args.budget:
            break
        res = _child(seed, args.calls, args.timeout, env)
        total += res["calls"]
        for kind, rest in res["findings"]:
            counts[kind] += 1
            if rest.startswith("None"):  # the child died before its first call: pyframe did not import
                print(f"[{kind}] seed {seed} at start-up, before call 0{rest[4:]}")
                continue
            i = rest.split(" ", 1)[0]
            print(f"[{kind}] seed {seed} call {rest}")
            print(f"    replay: python -m tools.fuzz --seed {seed} --replay {i}")
    build = " (ASan core)" if args.asan else ""
    print(
        f"fuzz: {total} calls, {counts['crash']} crashes, {counts['wrong']} wrong, {counts['hang']} hangs "
        f"({counts['unclear']} unclear errors){build} in {time.monotonic() - t0:.0f} s"
    )
    return 1 if counts["crash"] or counts["wrong"] or counts["hang"] else 0


if __name__ == "__main__":
    sys.exit(main())
