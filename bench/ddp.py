"""`python -m bench ddp`: measure data-parallel scaling with torchrun + DistributedDataParallel; write a ddp result."""

# The launcher checks its input and the rendezvous port, runs `python -m torch.distributed.run ... -m
# bench.ddp_worker` under a wall-clock timeout and, only when every worker finished, writes one complete result
# file (never a partial one) from the report global rank 0 left in a private run folder. Method: bench/ddp_worker.py.

from __future__ import annotations

import argparse
import datetime as dt
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cli_run import parse_model_options
from bench.runinfo import command_line
from bench.testing import FAULTS
from planner.inputs.errors import InputError
from planner.inputs.shipped import bench_out_dir
from planner.vocab import OPTIMIZERS, PRECISIONS

BACKENDS = ("auto", "nccl", "gloo")
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = bench_out_dir()  # the checkout's results/, or $TRAINPLAN_HOME/results when installed
DDP_BUCKET_MB = 25  # torch DistributedDataParallel's default bucket_cap_mb
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
TERM_GRACE_S = 20.0  # after SIGTERM, torchrun gets this long to stop its workers before they are killed by id
UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20, "MIB": 2**20,
         "G": 2**30, "GB": 2**30, "GIB": 2**30}


# ------------------------------------------------------------------ arguments

def add_arguments(p) -> None:
    p.add_argument("--model", required=True, help="zoo id (python -m bench list), e.g. resnet50")
    p.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                   help="zoo build option, e.g. seq_len=512 (repeatable)")
    p.add_argument("--nproc", type=int, default=None,
                   help="processes (GPUs) per node; default: every visible GPU with nccl, 2 with gloo")
    p.add_argument("--backend", default="auto", choices=BACKENDS,
                   help="nccl (CUDA GPUs, what a plan uses) or gloo (CPU: checks the pipeline, never used for a "
                        "GPU plan); auto = nccl when CUDA is available")
    p.add_argument("--precision", default="bf16", choices=PRECISIONS)
    p.add_argument("--batch", type=int, default=64, help="batch size PER PROCESS (the same per-GPU work at 1 and N)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per measurement")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps before each timed window (>= 1)")
    p.add_argument("--optimizer", default="adamw", choices=OPTIMIZERS)
    p.add_argument("--optimizer-impl", default="foreach", choices=("foreach", "fused"))
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--bucket-cap-mb", type=float, default=DDP_BUCKET_MB, help="DDP bucket size (torch default 25)")
    p.add_argument("--busbw-sizes", default="auto",
                   help="all-reduce message sizes, e.g. 64K,1M,25M,256M (binary units); the gradient size and "
                        "the DDP bucket size are always added; auto = 4 KiB x 4^k up to the larger of the two")
    p.add_argument("--busbw-budget-s", type=float, default=0.3, help="timed seconds per all-reduce size (about)")
    p.add_argument("--nnodes", type=int, default=1, help="nodes; run the same command on each (README)")
    p.add_argument("--node-rank", type=int, default=0, help="this node's rank (0 hosts the rendezvous)")
    p.add_argument("--rdzv-endpoint", default=None, metavar="HOST:PORT",
                   help="torchrun c10d rendezvous; required with --nnodes > 1; one node: a free local port")
    p.add_argument("--rdzv-id", default="trainplan-ddp", help="rendezvous id, the same on every node")
    p.add_argument("--out", default=None, help="results root; the file goes to OUT/<gpu-id|cpu>/ (default: a GPU's "
                   f"to {DEFAULT_OUT}, a CPU run's to $TRAINPLAN_HOME/results)")
    p.add_argument("--timeout-s", type=float, default=600.0,
                   help="wall-clock limit of the whole torchrun run (rendezvous included); then it is stopped")
    p.add_argument("--pg-timeout-s", type=float, default=None,
                   help="process-group timeout for collectives (default: half of --timeout-s, at most 300)")
    p.add_argument("--profiles", action="append", metavar="DIR", help="GPU profile folder(s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fault-inject", default=None, choices=FAULTS, help=argparse.SUPPRESS)


def parse_sizes(text: str) -> list[int]:
    """'64K,1M,25M' -> byte counts (binary units); 'auto' -> []."""
    if text.strip().lower() == "auto":
        return []
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", part)
        unit = m.group(2).upper() if m else None
        if not m or unit not in UNITS or float(m.group(1)) * UNITS[unit] < 1:
            raise InputError("--busbw-sizes", None, part, "sizes such as 4K, 1M, 25M, 1G (or auto)")
        out.append(int(float(m.group(1)) * UNITS[unit]))
    return out


def message_sizes(explicit: list[int], grad_bytes: int, bucket_bytes: int) -> list[int]:
    """All-reduce sizes in bytes, multiples of 4 (fp32 elements), always including the gradient and bucket sizes.

    auto: 4 KiB × 4^k up to the larger of the two, which spans the latency-bound and bandwidth-bound regimes.
    """
    sizes = {grad_bytes, bucket_bytes, *explicit}
    if not explicit:
        s = 4096
        while s <= max(grad_bytes, bucket_bytes):
            sizes.add(s)
            s *= 4
    return sorted({max(4, -(-int(b) // 4) * 4) for b in sizes if b > 0})


def bus_bandwidth_gb_s(nbytes: int, seconds: float, world: int) -> tuple[float, float | None]:
    """(algbw, busbw) GB/s for an all-reduce: algbw = S / t, busbw = algbw × 2(n−1)/n (nccl-tests PERFORMANCE.md);
    busbw None for one rank (nothing crosses a link)."""
    algbw = nbytes / seconds / 1e9
    return algbw, (algbw * 2 * (world - 1) / world if world > 1 else None)


def parse_endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError("--rdzv-endpoint", None, text, "HOST:PORT with a port in 1..65535, e.g. node001:29500")
    return host, int(port)


def validate(args) -> dict:
    """Checks that need no torch; InputError (exit 2) names the flag."""
    for flag, value, low in (("--steps", args.steps, 1), ("--warmup", args.warmup, 1), ("--batch", args.batch, 1),
                             ("--nnodes", args.nnodes, 1), ("--node-rank", args.node_rank, 0)):
        if value < low:
            raise InputError(flag, None, value, f"an integer >= {low}")
    if args.nproc is not None and args.nproc < 1:
        raise InputError("--nproc", None, args.nproc, "an integer >= 1")
    if args.node_rank >= args.nnodes:
        raise InputError("--node-rank", None, args.node_rank, f"0..{args.nnodes - 1} (--nnodes {args.nnodes})")
    if args.nnodes > 1 and not args.rdzv_endpoint:
        raise InputError("--rdzv-endpoint", None, None, "HOST:PORT of node 0 (required with --nnodes > 1)")
    for flag, value in (("--timeout-s", args.timeout_s), ("--bucket-cap-mb", args.bucket_cap_mb),
                        ("--busbw-budget-s", args.busbw_budget_s)):
        if not value > 0:
            raise InputError(flag, None, value, "a positive number")
    pg_timeout = args.pg_timeout_s if args.pg_timeout_s is not None else min(300.0, max(10.0, args.timeout_s / 2))
    if not pg_timeout > 0:
        raise InputError("--pg-timeout-s", None, pg_timeout, "a positive number of seconds")
    # No --out: chosen once the device is known (default_root), so a CPU (gloo) run never writes into results/.
    root = writable_root(args.out) if args.out is not None else None
    return {"options": parse_model_options(args.model_option), "sizes": parse_sizes(args.busbw_sizes),
            "pg_timeout_s": pg_timeout, "root": root,
            "endpoint": parse_endpoint(args.rdzv_endpoint) if args.rdzv_endpoint else None}


def writable_root(out: str) -> Path:
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        raise InputError("--out", None, out, f"a writable folder ({exc.strerror or exc})") from None
    return root


def default_root(device_dir: str) -> Path:
    """The results root without --out: a GPU's the checkout's results/, a CPU's $TRAINPLAN_HOME/results."""
    return writable_root(str(bench_out_dir(cpu=device_dir == "cpu")))


# ------------------------------------------------------------------ the rendezvous port

def _is_local_address(host: str) -> bool:
    """True when `host` names this machine (binding to one of its addresses works)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError("--rdzv-endpoint", None, host, f"a resolvable host name ({exc.strerror})") from None
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as s:
            try:
                s.bind((addr[0], 0))
                return True
            except OSError:
                continue
    return False


def port_in_use(port: int) -> bool:
    """Binding every IPv4 interface fails with EADDRINUSE when a listener (IPv4 or dual-stack) holds the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed socket in TIME_WAIT is not "in use"
        try:
            s.bind(("0.0.0.0", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rendezvous(args, endpoint: tuple[str, int] | None) -> tuple[str, list[str]]:
    """The endpoint to use and notes; a port already taken on the host that must serve it is exit 2."""
    if endpoint is None:
        return f"127.0.0.1:{free_port()}", []
    host, port = endpoint
    notes = []
    local = _is_local_address(host)
    if local and args.node_rank == 0:
        if port_in_use(port):
            raise InputError("--rdzv-endpoint", None, f"{host}:{port}",
                             f"a free port: port {port} on this machine is already in use (another torchrun, "
                             f"a previous run still exiting, or another service; `ss -ltnp 'sport = :{port}'` "
                             "shows which). Choose another port and use it on every node; on one node, leave "
                             "--rdzv-endpoint out to get a free port")
    elif not local and args.node_rank == 0 and args.nnodes > 1:
        notes.append(f"{host} is not this machine: the node at {host} serves the rendezvous")
    return f"{host}:{port}", notes


# ------------------------------------------------------------------ checks that need torch

def check_runtime(args, cfg: dict) -> tuple[str, int, list[str]]:
    """(backend, nproc, notes); CUDA/NCCL problems and bad model names are input errors, caught before launch."""
    import torch
    import torch.distributed as dist

    from bench import zoo
    from bench.precision import plan_for

    notes = []
    if not dist.is_available():
        raise InputError("--backend", None, args.backend, f"a torch build with torch.distributed ({torch.__version__})")
    cuda = torch.cuda.is_available()
    backend = args.backend if args.backend != "auto" else ("nccl" if cuda else "gloo")
    if args.backend == "auto" and not cuda:
        notes.append("no CUDA device: gloo on the CPU checks the pipeline; the planner never uses a CPU/gloo result "
                     "for a GPU plan")
    if backend == "nccl":
        if not cuda:
            why = "this torch build has no CUDA" if not torch.version.cuda else "torch.cuda.is_available() is False"
            raise InputError("--backend", None, "nccl",
                             f"CUDA GPUs: NCCL needs them and none is usable here ({why}). On a machine without "
                             "GPUs use --backend gloo (a CPU pipeline check)")
        if not dist.is_nccl_available():
            raise InputError("--backend", None, "nccl", f"a torch build with NCCL (torch {torch.__version__} has none)")
        count = torch.cuda.device_count()
        nproc = args.nproc or count
        if nproc > count:
            raise InputError("--nproc", None, nproc, f"at most {count}: one process per GPU, {count} visible here "
                             "(CUDA_VISIBLE_DEVICES narrows them)")
    else:
        nproc = args.nproc or 2
    if args.fault_inject and args.nnodes * nproc < 2:
        raise InputError("--fault-inject", None, args.fault_inject, "a run with at least 2 processes")
    try:
        zoo.build(args.model, device="meta", **cfg["options"])
    except zoo.UnknownModelError:
        raise InputError("--model", None, args.model, "a zoo id: " + ", ".join(zoo.list_models())) from None
    except (TypeError, ValueError) as exc:
        raise InputError("--model-option", None, cfg["options"], str(exc)) from None
    plan = plan_for(args.precision, "cuda" if backend == "nccl" else "cpu")
    if plan.skip_reason:
        raise InputError("--precision", None, args.precision, f"a precision that runs here ({plan.skip_reason})")
    return backend, nproc, notes


# ------------------------------------------------------------------ running torchrun

def torchrun_command(args, nproc: int, endpoint: str, run_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes", str(args.nnodes), "--nproc-per-node", str(nproc), "--node-rank", str(args.node_rank),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", args.rdzv_id,
        "--rdzv-conf", f"join_timeout={max(1, int(args.timeout_s))}",
        "--max-restarts", "0", "--monitor-interval", "0.5",
        "--log-dir", str(run_dir / "logs"), "--redirects", "2",  # each worker's stderr -> its own file
        "-m", "bench.ddp_worker", "--config", str(run_dir / "config.json"),
    ]


def worker_config(args, cfg: dict, backend: str, nproc: int, run_dir: Path) -> dict:
    return {
        "model": args.model, "options": cfg["options"], "backend": backend, "nproc_per_node": nproc,
        "nnodes": args.nnodes, "precision": args.precision, "batch": args.batch, "steps": args.steps,
        "warmup": args.warmup, "optimizer": args.optimizer, "optimizer_impl": args.optimizer_impl, "lr": args.lr,
        "bucket_cap_mb": args.bucket_cap_mb, "busbw_sizes": cfg["sizes"], "busbw_budget_s": args.busbw_budget_s,
        "pg_timeout_s": cfg["pg_timeout_s"], "wait_timeout_s": args.timeout_s, "profiles": args.profiles,
        "seed": args.seed, "fault_inject": args.fault_inject, "run_dir": str(run_dir),
    }


def _stop(proc: subprocess.Popen, run_dir: Path) -> None:
    """SIGTERM torchrun (it stops its workers); after a grace period SIGKILL it and any worker still alive, by pid."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pid_file in (run_dir / "pids").glob("*.pid"):
        try:
            pid = int(pid_file.read_text().strip())
            # Only a process that is still one of this run's workers (a pid can be reused once it exits).
            if str(run_dir) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                os.kill(pid, signal.SIGKILL)
        except (ValueError, OSError):
            continue


def launch(cmd: list[str], run_dir: Path, timeout_s: float) -> tuple[int | None, float]:
    """Run torchrun; (exit status or None on timeout, seconds). Its own log goes to run_dir/torchrun.log."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    t0 = time.monotonic()
    with open(run_dir / "torchrun.log", "wb") as log:
        # A session of its own: Ctrl-C reaches the launcher only, which then stops torchrun in order.
        proc = subprocess.Popen(cmd, stdout=None, stderr=log, env=env, cwd=str(ROOT), start_new_session=True)
        try:
            rc = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc, run_dir)
            return None, time.monotonic() - t0
        except BaseException:
            _stop(proc, run_dir)
            raise
    return rc, time.monotonic() - t0


# ------------------------------------------------------------------ explaining a failure

_ROOT_CAUSE = re.compile(
    r"Root Cause.*?host\s*:\s*(?P<host>\S+).*?rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local>\d+)\)"
    r".*?exitcode\s*:\s*(?P<code>-?\d+)", re.S)


_FAILURE = re.compile(
    r"host\s*:\s*(?P<host>\S+)\s*\n\s*rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local>\d+)\)"
    r"\s*\n\s*exitcode\s*:\s*(?P<code>-?\d+)")
# Errors a rank gets *because* another one died first: never the culprit when a better candidate exists.
_CONSEQUENCE = re.compile(r"Connection closed by peer|remote worker crash|Connection reset|timed out|SIGTERM", re.I)


def _culprit(summary: str, logs: Path):
    """The failure to report: torchrun's 'root cause' is the first *observed* failure, which is often a rank
    that lost its peer (killed or 'connection closed'); prefer a rank that exited on its own with an error."""
    root = _ROOT_CAUSE.search(summary)
    candidates = list(_FAILURE.finditer(summary))
    for m in candidates:
        if int(m.group("code")) <= 0:
            continue
        own = "\n".join(_tail(p) for p in sorted(logs.glob(f"**/attempt_*/{m.group('local')}/stderr.log")))
        if not _CONSEQUENCE.search(own):
            return m
    return root


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def _error_json_message(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    msg = data.get("message")
    if isinstance(msg, dict):
        msg = msg.get("message")
    return str(msg).strip() if msg else None


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of host memory?)" if name == "SIGKILL" else ""
        return f"was killed by {name}{hint}"
    return f"exited with code {code}"


def explain_failure(run_dir: Path, rc: int | None, elapsed_s: float, timeout_s: float) -> str:
    """One message naming the failing worker and its error (its error file, else the end of its stderr)."""
    logs = run_dir / "logs"
    if rc is None:
        tails = []
        for path in sorted(logs.glob("**/attempt_*/*/stderr.log")):
            tail = _tail(path, 3)
            if tail:
                tails.append(f"[local rank {path.parent.name}] {tail}")
        return (f"timed out after {elapsed_s:.0f} s (--timeout-s {timeout_s:g}): torchrun and its workers were "
                "stopped. Nodes that never joined the rendezvous, or a rank that stopped answering, look like "
                "this." + "".join("\n" + t for t in tails) + f"\nlogs: {run_dir}")
    summary = (run_dir / "torchrun.log").read_text(encoding="utf-8", errors="replace") \
        if (run_dir / "torchrun.log").exists() else ""
    m = _culprit(summary, logs)
    if not m:
        return f"torchrun exited with code {rc}:\n{_tail(run_dir / 'torchrun.log', 20)}\nlogs: {run_dir}"
    local = m.group("local")
    error = None
    for path in sorted(logs.glob(f"**/attempt_*/{local}/error.json")):
        error = _error_json_message(path) or error
    stderr = "\n".join(filter(None, (_tail(p) for p in sorted(logs.glob(f"**/attempt_*/{local}/stderr.log")))))
    detail = error or stderr or "(it left no error message)"
    if re.search(r"timed out|timeout", detail, re.I):
        detail += ("\n(a collective timed out after --pg-timeout-s: another rank stopped answering or died "
                   "first, possibly on another node; see its log)")
    return (f"worker rank {m.group('rank')} (local rank {local} on {m.group('host')}) "
            f"{_exit_text(int(m.group('code')))}: {detail}\nlogs: {run_dir}")


# ------------------------------------------------------------------ the result file

def build_result(report: dict, created_utc: str, command: list[str]) -> dict:
    """The result file (schema /2) from rank 0's report; written only for a complete run, so nothing is missing."""
    from bench.runinfo import requested
    from bench.stats import noise_warning
    from planner.inputs.reasons import warning_fields
    from planner.inputs.resultfile import SCHEMA

    m, d, s = report["measurement"], report["ddp"], report["settings"]
    settings = {**s, "command": command,
                "requested": requested([d["precision"]], [d["batch_per_process"]], s["steps"], s["warmup"])}
    warnings = [noise_warning(m["step_time_s"], processes=d["world_size"], batch=d["batch_per_process"])
                ] if m.get("noisy") else []
    return {"schema": SCHEMA, "created_utc": created_utc, "partial": False, "environment": report["environment"],
            "model": report["model"], "settings": settings, "missing": [], **warning_fields(warnings),
            "measurements": [m], "max_batch": [], "dataloader": [], "ddp": d}


def write_result(report: dict, root: Path, created_utc: str, command: list[str]) -> Path:
    from planner.inputs.resultfile import parse_result, result_path, write_result_atomic

    data = build_result(report, created_utc, command)
    target = result_path(root, report["device_dir"], data["model"]["name"], created_utc)
    parse_result(data, str(target))  # a report that would not read back is an error, never a file
    return write_result_atomic(data, target)


def summary_text(report: dict, path: Path) -> str:
    d = report["ddp"]
    n = d["world_size"]
    lines = [
        f"{d['nnodes']} node(s) x {d['nproc_per_node']} process(es), {d['backend']}, {report['device_dir']}, "
        f"{d['precision']}, batch {d['batch_per_process']} per process",
        f"  step time, 1 process, no DDP: {d['step_time_1_s'] * 1e3:10.3f} ms",
        f"  step time, DDP x {n:<4}         {d['step_time_n_s'] * 1e3:10.3f} ms   "
        f"(under no_sync: {d['step_time_nosync_s'] * 1e3:.3f} ms)",
        f"  exposed communication:        {d['exposed_comm_s'] * 1e3:10.3f} ms   efficiency {d['efficiency']:.3f}",
        "  all-reduce bus bandwidth:",
    ]
    for row in d["busbw"]:
        bw = f"{row['gb_per_s']:8.2f} GB/s" if row["gb_per_s"] is not None else "       - (one rank)"
        lines.append(f"    {row['bytes']:>13,} B  {bw}   ({row['time_s'] * 1e6:,.0f} us)")
    lines.append(f"results: {path}")
    return "\n".join(lines)


# ------------------------------------------------------------------ entry point

def _say(text: str) -> None:
    print(f"bench ddp: {text}", file=sys.stderr, flush=True)


def main(args) -> int:
    cfg = validate(args)
    endpoint, notes = rendezvous(args, cfg["endpoint"])
    backend, nproc, more = check_runtime(args, cfg)
    for note in notes + more:
        _say(note)
    created = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _say(f"{args.nnodes} node(s) x {nproc} process(es), {backend}, rendezvous {endpoint}; timeout "
         f"{args.timeout_s:g} s")
    # Worker logs live here; kept when the run fails (the message names the folder), removed otherwise.
    run_dir = Path(tempfile.mkdtemp(prefix="trainplan-ddp-"))
    (run_dir / "pids").mkdir()
    (run_dir / "config.json").write_text(json.dumps(worker_config(args, cfg, backend, nproc, run_dir)),
                                         encoding="utf-8")
    cmd = torchrun_command(args, nproc, endpoint, run_dir)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        rc, elapsed = launch(cmd, run_dir, args.timeout_s)
    except KeyboardInterrupt:
        _say(f"interrupted: workers stopped, no result file written (logs: {run_dir})")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    report_path = run_dir / "report.json"
    if rc != 0:
        _say("failed, no result file written: " + explain_failure(run_dir, rc, elapsed, args.timeout_s))
        return 1
    if not report_path.exists():
        node = run_dir / "node.json"
        host = json.loads(node.read_text())["rank0_host"] if node.exists() else "the node that hosted rank 0"
        _say(f"this node's workers finished; global rank 0 ran on {host}, which writes the result file")
        shutil.rmtree(run_dir, ignore_errors=True)
        return 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    root = cfg["root"] or default_root(report["device_dir"])
    try:
        path = write_result(report, root, created, command_line(args))
    except InputError as exc:
        _say(f"the workers' report does not make a valid result file ({exc}); nothing written; logs: {run_dir}")
        return 1
    shutil.rmtree(run_dir, ignore_errors=True)
    print(summary_text(report, path), flush=True)
    return 0


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover - use python -m bench ddp
    sys.exit("use: python -m bench ddp ...")
