"""`python -m bench detect|run|trace` as subprocesses for the app: the app never imports torch itself.

No Streamlit here: bench speaks the versioned event stream of planner/inputs/bench_events.py (`--events json`),
whose keys, never its wording, decide what happened. A BenchRun owns one `bench run` process, reads its events in
a thread, and is cancelled with SIGINT so bench saves what it measured (a partial file). One run at a time per app
process, since two benchmarks on one machine would disturb each other's timings. A trace takes seconds and times nothing, so
`trace()` simply waits for its child process.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from planner.inputs.bench_events import FLAG as EVENTS_FLAG
from planner.inputs.bench_events import FORMAT as EVENTS_FORMAT
from planner.inputs.bench_events import EventReader, StreamProblem, last_event, read_events
from planner.inputs.errors import InputError
from planner.inputs.zoo_catalog import canonical_id
from planner.vocab import PRECISIONS, TRACEABLE_OPTIMIZERS

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON_ENV = "TRAINPLAN_BENCH_PYTHON"  # another interpreter (one with torch) for bench; default: the app's own
DETECT_TIMEOUT_S = 90
MAX_BATCHES = 12
TORCH_PIN = "torch==2.13.0"
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


def bench_python() -> str:
    return os.environ.get(PYTHON_ENV) or sys.executable


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _stderr_tail(stderr: str, lines: int = 6) -> str:
    return "\n".join(stderr.strip().splitlines()[-lines:])


def _events_argv(python: str, command: str) -> list[str]:
    return [python, "-m", "bench", command, EVENTS_FLAG, EVENTS_FORMAT]


# ---------------------------------------------------------------- detect

@dataclass(frozen=True)
class Detection:
    """What `python -m bench detect --json` said, or why it could not say anything.

    status: ok | no_torch (a module bench needs is missing: `missing`) | timeout | failed.
    """

    status: str
    python: str
    facts: dict | None = None
    missing: str | None = None
    message: str = ""
    elapsed_s: float = 0.0
    problem: StreamProblem | None = None  # failed: bench's output was not the event stream (a crash before it)

    @property
    def device(self) -> str | None:
        return self.facts.get("device") if self.facts else None

    @property
    def gpus(self) -> list[dict]:
        return list((self.facts or {}).get("gpus") or [])


def detect(python: str | None = None, timeout_s: float = DETECT_TIMEOUT_S) -> Detection:
    """Run detect in a subprocess; never raises for a machine without torch, CUDA or NVML."""
    python = python or bench_python()
    started = time.monotonic()
    try:
        proc = subprocess.run(_events_argv(python, "detect"), cwd=PROJECT_ROOT, env=_env(),
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return Detection("timeout", python, message=f"no answer within {timeout_s:g} s",
                         elapsed_s=time.monotonic() - started)
    except OSError as exc:
        return Detection("failed", python, message=f"cannot start {python}: {exc}",
                         elapsed_s=time.monotonic() - started)
    elapsed = time.monotonic() - started
    events, problem = read_events(proc.stdout.splitlines())
    if problem is not None:
        return Detection("failed", python, message=_stderr_tail(proc.stderr), problem=problem, elapsed_s=elapsed)
    error = last_event(events, "error")
    if error is not None and error.get("key") == "missing_module":
        return Detection("no_torch", python, missing=str(error.get("module")), message=str(error.get("message", "")),
                         elapsed_s=elapsed)
    done = last_event(events, "done")
    if error is not None or done is None or not isinstance(done.get("facts"), dict):
        message = str(error.get("message", "")) if error else _stderr_tail(proc.stderr)
        return Detection("failed", python, message=message or f"exit status {proc.returncode}", elapsed_s=elapsed)
    return Detection("ok", python, facts=done["facts"], elapsed_s=elapsed)


def install_command(python: str, cpu_only: bool = True) -> str:
    extra = f" --index-url {CPU_WHEELS}" if cpu_only else ""
    return f"{python} -m pip install {TORCH_PIN}{extra}"


# ---------------------------------------------------------------- run

@dataclass(frozen=True)
class RunRequest:
    model: str
    precisions: tuple[str, ...]
    batches: tuple[int, ...]
    steps: int = 10
    warmup: int = 3
    phase_steps: int = 5
    out: str = ""

    def argv(self, python: str) -> list[str]:
        return [python, "-m", "bench", "run", "--model", self.model, "--precision", ",".join(self.precisions),
                "--batch", ",".join(map(str, self.batches)), "--steps", str(self.steps), "--warmup", str(self.warmup),
                "--phase-steps", str(self.phase_steps), "--out", self.out, EVENTS_FLAG, EVENTS_FORMAT]


def parse_batches(text: str) -> tuple[int, ...]:
    """'8, 16,32' -> (8, 16, 32); InputError names the bad part."""
    out: list[int] = []
    for part in (text or "").replace(" ", ",").split(","):
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise InputError("batch sizes", None, part, "whole numbers separated by commas, e.g. 8,16,32") from None
        if not 1 <= value <= 65536:
            raise InputError("batch sizes", None, value, "batch sizes from 1 to 65536")
        out.append(value)
    if not out:
        raise InputError("batch sizes", None, text, "at least one batch size, e.g. 8,16,32")
    if len(set(out)) > MAX_BATCHES:
        raise InputError("batch sizes", None, len(set(out)), f"at most {MAX_BATCHES} batch sizes")
    return tuple(sorted(set(out)))


def make_request(model: str, known_models, precisions, batches_text: str, steps: int, warmup: int,
                 out: str | Path) -> RunRequest:
    """A validated request; InputError names the field (model, precisions, batch sizes, steps, warmup)."""
    model = canonical_id(model)[0]  # an old id ('llama') from a saved scenario means its current one
    if model not in set(known_models):
        raise InputError("benchmark", "model", model, "a model of the zoo (python -m bench list)")
    precisions = tuple(p for p in PRECISIONS if p in set(precisions))
    if not precisions:
        raise InputError("benchmark", "precisions", list(precisions), "at least one of " + ", ".join(PRECISIONS))
    if not 1 <= int(steps) <= 1000:
        raise InputError("benchmark", "steps", steps, "1 to 1000 timed steps")
    if not 1 <= int(warmup) <= 100:
        raise InputError("benchmark", "warmup", warmup, "1 to 100 warm-up steps")
    return RunRequest(model, precisions, parse_batches(batches_text), int(steps), int(warmup), out=str(out))


class Busy(RuntimeError):
    """Another benchmark started from this app is still running."""


@dataclass
class BenchRun:
    """One `bench run` subprocess and what it has reported so far (thread-safe reads)."""

    request: RunRequest
    python: str
    proc: subprocess.Popen | None = None
    events: list[dict] = field(default_factory=list)
    reader: EventReader = field(default_factory=EventReader)
    stderr: collections.deque = field(default_factory=lambda: collections.deque(maxlen=200))
    started: float = field(default_factory=time.monotonic)
    cancelled: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _readers: list[threading.Thread] = field(default_factory=list, repr=False)

    def start(self) -> BenchRun:
        self.proc = subprocess.Popen(self.request.argv(self.python), cwd=PROJECT_ROOT, env=_env(),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, encoding="utf-8", errors="replace")
        for stream, handler in ((self.proc.stdout, self._on_stdout), (self.proc.stderr, self._on_stderr)):
            thread = threading.Thread(target=self._pump, args=(stream, handler), daemon=True)
            thread.start()
            self._readers.append(thread)
        return self

    @staticmethod
    def _pump(stream, handler) -> None:
        for line in stream:
            handler(line.rstrip("\n"))
        stream.close()

    def _on_stdout(self, line: str) -> None:
        with self._lock:
            event = self.reader.feed(line)
            if event is not None:
                self.events.append(event)
            elif line.strip():
                self.stderr.append(line)

    def _on_stderr(self, line: str) -> None:
        if line.strip():
            with self._lock:
                self.stderr.append(line.split("\r")[-1])

    # -------------------------------------------------------------- what the page reads
    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    @property
    def running(self) -> bool:
        if self.proc is None:
            return False
        if self.proc.poll() is None:
            return True
        for thread in self._readers:  # the exit status can arrive before the last lines are read
            thread.join(timeout=2)
        return False

    @property
    def problem(self) -> StreamProblem | None:
        """Why bench's output could not be read as the event stream (checked once it has ended)."""
        if self.running:
            return self.reader.problem
        with self._lock:
            return self.reader.finish()

    @property
    def state(self) -> str:
        """running | done | cancelled | failed."""
        if self.running:
            return "running"
        if self.problem is not None:
            return "failed"
        code = self.returncode
        if code == 0:
            return "done"
        if self.cancelled or code == 130 or self.last("interrupted"):
            return "cancelled"
        return "failed"

    def snapshot(self) -> tuple[list[dict], list[str]]:
        with self._lock:
            return list(self.events), list(self.stderr)

    def last(self, kind: str) -> dict | None:
        events, _ = self.snapshot()
        return next((e for e in reversed(events) if e.get("event") == kind), None)

    def progress(self) -> tuple[int, int | None]:
        """(configurations measured, configurations planned); total is None until bench has said."""
        p = self.last("progress")
        start = self.last("start")
        if p is not None:
            return int(p.get("done") or 0), p.get("total")
        if start is not None:
            n = len(start.get("precisions") or []) * len(start.get("batches") or []) if isinstance(
                start.get("batches"), list) else None
            return 0, n
        return 0, None

    @property
    def path(self) -> str | None:
        for kind in ("done", "interrupted", "error", "start"):
            e = self.last(kind)
            if e and e.get("path"):
                return str(e["path"])
        return None

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    # -------------------------------------------------------------- control
    def cancel(self, grace_s: float = 30.0) -> None:
        """SIGINT (bench saves a partial file); SIGTERM, then SIGKILL, if it is still running after grace_s."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        self.cancelled = True
        proc.send_signal(signal.SIGINT)

        def escalate() -> None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    proc.wait(timeout=grace_s)
                    return
                except subprocess.TimeoutExpired:
                    proc.send_signal(sig)

        threading.Thread(target=escalate, daemon=True).start()

    def wait(self, timeout_s: float | None = None) -> int | None:
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
        self.running  # noqa: B018 - joins the reader threads
        return self.proc.returncode


_ACTIVE: BenchRun | None = None
_ACTIVE_LOCK = threading.Lock()


def active_run() -> BenchRun | None:
    """The benchmark this app process is running now, if any (started from any browser tab)."""
    with _ACTIVE_LOCK:
        return _ACTIVE if _ACTIVE is not None and _ACTIVE.running else None


def start_run(request: RunRequest, python: str | None = None) -> BenchRun:
    """Start `bench run`; raises Busy while another run from this app is still going."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        if _ACTIVE is not None and _ACTIVE.running:
            raise Busy(f"a benchmark of {_ACTIVE.request.model} is still running")
        _ACTIVE = BenchRun(request, python or bench_python()).start()
        return _ACTIVE


# ---------------------------------------------------------------- trace

TRACE_TIMEOUT_S = 300
TRACE_IMPLS = ("foreach", "fused")
_CUSTOM_MODEL = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_BENCH_NEEDS = ("torch", "yaml")  # a missing one of these means "install bench's requirements", not a bad model


@dataclass(frozen=True)
class TraceRequest:
    model: str
    precisions: tuple[str, ...]
    batches: tuple[int, ...]
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"
    checkpointing: bool = False
    frozen_fraction: float = 0.0
    lora_rank: int = 0
    seq_len: int | None = None
    out: str = ""

    def args(self) -> list[str]:
        """The options after `python -m bench trace`."""
        argv = ["--model", self.model, "--precision", ",".join(self.precisions), "--batch",
                ",".join(map(str, self.batches)), "--optimizer", self.optimizer, "--optimizer-impl",
                self.optimizer_impl, "--frozen-fraction", str(float(self.frozen_fraction))]
        if self.checkpointing:
            argv.append("--checkpointing")
        if self.lora_rank:
            argv += ["--adapter", f"lora:{self.lora_rank}"]
        if self.seq_len is not None:
            argv += ["--seq-len", str(self.seq_len)]
        return [*argv, "--out", self.out]


def make_trace_request(model: str, known_models, precisions, batches_text: str, *, optimizer: str = "adamw",
                       optimizer_impl: str = "foreach", checkpointing: bool = False, frozen_fraction: float = 0.0,
                       lora_rank: int = 0, seq_len: int | None = None, out: str | Path = "") -> TraceRequest:
    """A validated trace request; InputError names the field. `model` is a zoo id or 'package.module:callable'."""
    model = (model or "").strip()
    if ":" in model:
        if not _CUSTOM_MODEL.match(model):
            raise InputError("trace", "custom model", model, "package.module:callable, e.g. mypkg.models:build")
        if seq_len is not None:
            raise InputError("trace", "sequence length", seq_len, "none for a custom model (its callable sets it)")
    elif canonical_id(model)[0] not in set(known_models):
        raise InputError("trace", "model", model, "a model of the zoo or a custom package.module:callable")
    else:
        model = canonical_id(model)[0]
    chosen = tuple(p for p in PRECISIONS if p in set(precisions))
    if not chosen:
        raise InputError("trace", "precisions", list(precisions), "at least one of " + ", ".join(PRECISIONS))
    parts = [p for p in (batches_text or "").replace(" ", ",").split(",") if p]
    bad = [p for p in parts if not (p.isdigit() and int(p) >= 1)]
    if bad or not parts:
        raise InputError("trace", "batch sizes", batches_text, "positive whole numbers separated by commas, e.g. "
                         "1,8,32" + (f" (not: {', '.join(bad)})" if bad else ""))
    batches = parse_batches(batches_text)  # and its limits: at most 65536, at most MAX_BATCHES sizes
    if optimizer not in TRACEABLE_OPTIMIZERS:
        raise InputError("trace", "optimizer", optimizer, "one of " + ", ".join(TRACEABLE_OPTIMIZERS))
    if optimizer_impl not in TRACE_IMPLS or (optimizer_impl == "fused" and optimizer == "adafactor"):
        raise InputError("trace", "optimizer implementation", optimizer_impl,
                         "foreach, or fused for sgd, sgd_momentum, adam and adamw")
    if not 0.0 <= float(frozen_fraction) < 1.0:
        raise InputError("trace", "frozen fraction", frozen_fraction, "a fraction from 0 up to (not including) 1")
    if int(lora_rank) < 0:
        raise InputError("trace", "LoRA rank", lora_rank, "0 (no adapter) or a positive rank")
    if lora_rank and frozen_fraction:
        raise InputError("trace", "frozen fraction", frozen_fraction, "0 with LoRA (LoRA freezes the base weights)")
    if seq_len is not None and int(seq_len) < 1:
        raise InputError("trace", "sequence length", seq_len, "a positive number of tokens")
    return TraceRequest(model, chosen, batches, optimizer, optimizer_impl, bool(checkpointing),
                        float(frozen_fraction), int(lora_rank), None if seq_len is None else int(seq_len), str(out))


@dataclass(frozen=True)
class TraceOutcome:
    """What one `bench trace` said. status: ok | some_failed (a file with failed rows) | bad_input (exit 2: bad
    options or an untraceable model) | no_torch (`missing` names the module) | timeout | failed."""

    status: str
    python: str
    code: int
    path: str | None = None
    message: str = ""  # the tracer's own lines, tracebacks left out
    summary: str = ""  # what it printed about each configuration
    missing: str | None = None
    elapsed_s: float = 0.0
    problem: StreamProblem | None = None  # failed: bench's output was not the event stream (a crash before it)


def _without_tracebacks(stderr: str) -> list[str]:
    """The non-empty lines of stderr minus each 'Traceback ...' block (its frames and its exception line)."""
    out: list[str] = []
    inside = False
    for line in stderr.splitlines():
        if line.startswith("Traceback (most recent call last)"):
            inside = True
            continue
        if inside:
            if line[:1] in (" ", "\t"):
                continue
            inside = False  # the exception line closes the block; "internal error: ..." repeats it for the user
            continue
        if line.strip():
            out.append(line.strip())
    return out


def _trace_outcome(python: str, code: int, stdout: str, stderr: str, elapsed_s: float) -> TraceOutcome:
    """What a finished `bench trace --events json` said: its events decide the status; a stream that never began
    (a crash before bench started, a timeout, a signal) is a failure with what the tracer printed."""
    events, problem = read_events(stdout.splitlines())
    done, error = last_event(events, "done"), last_event(events, "error")
    said = _without_tracebacks(stderr)
    wrote = str(done["path"]) if done and done.get("path") else None
    path = wrote if wrote and Path(wrote).is_file() else None

    def outcome(status: str, message: str, missing: str | None = None) -> TraceOutcome:
        return TraceOutcome(status, python=python, code=code, path=path, message=message,
                            summary=str(done.get("summary") or "") if done else "", missing=missing,
                            elapsed_s=elapsed_s, problem=problem if status == "failed" else None)

    if code == 124:  # the caller's timeout: the tracer's own stream stops wherever it was
        return outcome("timeout", "\n".join(said[-5:]))
    if problem is not None:
        return outcome("failed", "\n".join(said[-5:]))
    key = error.get("key") if error else None
    message = str(error.get("message") or "") if error else "\n".join(said[-5:])
    if key == "missing_module" and error is not None and error.get("module") in _BENCH_NEEDS:
        return outcome("no_torch", message, missing=str(error["module"]))
    if key in ("bad_input", "untraceable_model"):
        return outcome("bad_input", message)
    if path and code == 0:
        return outcome("ok", message)
    if path and code == 1:
        return outcome("some_failed", message)
    return outcome("failed", message or f"exit status {code}, nothing said")


def _run_trace_with(python: str, argv: list[str], timeout_s: float) -> tuple[int, str, str]:
    """`PYTHON -m bench trace ARGV` for another interpreter (bench.trace.trace_in_subprocess runs the app's own)."""
    try:
        proc = subprocess.run([python, "-m", "bench", "trace", *argv, EVENTS_FLAG, EVENTS_FORMAT], cwd=PROJECT_ROOT, env=_env(),
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"bench trace: timed out after {timeout_s:g} s"
    except OSError as exc:
        return 127, "", f"bench trace: could not start {python}: {exc}"
    if proc.returncode < 0:
        return proc.returncode, proc.stdout, proc.stderr + f"\nbench trace: the tracer died from signal " \
                                                           f"{-proc.returncode}"
    return proc.returncode, proc.stdout, proc.stderr


def trace(request: TraceRequest, python: str | None = None, timeout_s: float = TRACE_TIMEOUT_S) -> TraceOutcome:
    """Run `bench trace` in a child process and say what happened; never raises for a crash, a hang or no torch."""
    python = python or bench_python()
    started = time.monotonic()
    if python == sys.executable:
        from bench.trace import trace_in_subprocess  # imports no torch: only the child process loads it

        code, stdout, stderr = trace_in_subprocess([*request.args(), EVENTS_FLAG, EVENTS_FORMAT], timeout_s)
    else:
        code, stdout, stderr = _run_trace_with(python, request.args(), timeout_s)
    return _trace_outcome(python, code, stdout, stderr, time.monotonic() - started)
