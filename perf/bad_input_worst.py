"""Bad inputs, worst case: run every bad case through the real CLI, one process each, and report the slowest and
the largest (wall seconds, peak RSS MiB from the child's own rusage), plus every run that crashed or hung.

Cases: tests/fixtures/bad/ (every file kind x category) placed where the CLI reads them (scenario path, standard
input, --profiles, --results, $TRAINPLAN_HOME), the size cases, the originals of issue 13's findings
(100,000-level nesting, a FIFO and /dev/zero as the scenario), the bad command-line flags of make_bad.flag_cases
(the planner's, `trainplan app`'s, bench's), and the writer cases of issue 34 (tests/fixtures/bad/writer_cases.py:
empty imports and catalogs, symlinked or edited excerpts, result files with no measurements, plans with nothing to
plan), each with the file it would replace already there: a writer run that changed anything in its folder is
counted as a lost file.

    .venv/bin/python perf/bad_input_worst.py [--limit-gib 3] [--timeout 30] [--jobs 2] [--root DIR]

--root runs another checkout's `python -m planner` (e.g. `git archive HEAD | tar -x -C /tmp/old` for a before
figure) on the same files; cases its CLI cannot take (standard input) are left out.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.bad.make_bad import HERE as BAD_DIR  # noqa: E402
from tests.fixtures.bad.make_bad import all_cases, flag_cases, profile_text, scenario_text, size_case  # noqa: E402
from tests.fixtures.bad.writer_cases import tree, writer_cases  # noqa: E402


@dataclass
class Outcome:
    label: str
    returncode: int | None  # None: killed at the timeout
    seconds: float
    peak_mib: float
    tail: str


def run_one(label: str, args: list[str], root: Path, home: Path, limit_bytes: int, timeout_s: float,
            stdin: bytes | None = None, module: str = "planner") -> Outcome:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(root), "TRAINPLAN_HOME": str(home)}
    t0 = time.perf_counter()
    # A flag case names its module (["-m", "bench", ...]); every other job is `python -m <module> ARGS`.
    command = args if args[:1] == ["-m"] else ["-m", module, *args]
    proc = subprocess.Popen([sys.executable, *command], cwd=root, env=env, preexec_fn=limits,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        try:
            proc.stdin.write(stdin or b"")
            proc.stdin.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS, not the max over all children
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return Outcome(label, None if killed.is_set() else proc.returncode, seconds, usage.ru_maxrss / 1024,
                   tail[0][:160])


def build_jobs(tmp: Path, new_cli: bool) -> list[tuple[str, list[str], Path, bytes | None]]:
    jobs = []
    base = tmp / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    n = 0

    def home() -> Path:
        nonlocal n
        n += 1
        h = tmp / "homes" / str(n)
        h.mkdir(parents=True)
        return h

    for case in all_cases():
        path = BAD_DIR / case.kind / case.filename
        if case.kind == "scenario":
            jobs.append((f"scenario path {case.name}", [str(path), "--no-user-data"], home(), None))
            if new_cli:
                jobs.append((f"scenario stdin {case.name}", ["-", "--no-user-data"], home(), case.data))
        elif case.kind == "overrides":
            h = home()
            (h / "price_overrides.yaml").write_bytes(case.data)
            jobs.append((f"overrides {case.name}", [str(base)], h, None))
        elif case.kind == "profile":
            folder = tmp / "profiles" / case.name
            folder.mkdir(parents=True)
            (folder / case.filename).write_bytes(case.data)
            jobs.append((f"profile folder {case.name}", [str(base), "--no-user-data", "--profiles",
                                                         str(ROOT / "gpu_profiles"), "--profiles", str(folder)],
                         home(), None))
            h = home()
            (h / "gpu_profiles").mkdir()
            (h / "gpu_profiles" / case.filename).write_bytes(case.data)
            jobs.append((f"profile user {case.name}", [str(base)], h, None))
        else:
            top = tmp / "results" / case.name
            (top / "h100-sxm-80gb").mkdir(parents=True)
            (top / "h100-sxm-80gb" / case.filename).write_bytes(case.data)
            jobs.append((f"result folder {case.name}", [str(base), "--no-user-data", "--results", str(top)],
                         home(), None))
            h = home()
            (h / "results" / "h100-sxm-80gb").mkdir(parents=True)
            (h / "results" / "h100-sxm-80gb" / case.filename).write_bytes(case.data)
            jobs.append((f"result user {case.name}", [str(base)], h, None))
    for kind in ("scenario", "profile", "overrides", "result"):
        h = home()
        folder = {"scenario": tmp / "size", "profile": h / "gpu_profiles", "overrides": h,
                  "result": h / "results" / "h100-sxm-80gb"}[kind]
        folder.mkdir(parents=True, exist_ok=True)
        path = size_case(kind, folder)
        args = [str(path), "--no-user-data"] if kind == "scenario" else [str(base)]
        jobs.append((f"size {kind}", args, h, None))
    deep = "[" * 100_000 + "]" * 100_000
    (tmp / "deep.yaml").write_text(deep)
    jobs.append(("finding: 100k-deep scenario", [str(tmp / "deep.yaml"), "--no-user-data"], home(), None))
    pdir = tmp / "deep-profiles"
    pdir.mkdir()
    (pdir / "deep.yaml").write_text(deep)
    (pdir / "lab-gpu.yaml").write_text(profile_text("lab-gpu"))
    jobs.append(("finding: 100k-deep profile", [str(base), "--no-user-data", "--profiles", str(pdir)], home(), None))
    rdir = tmp / "deep-results" / "h100-sxm-80gb"
    rdir.mkdir(parents=True)
    (rdir / "deep-20260101T000000Z.json").write_text(deep)
    jobs.append(("finding: 100k-deep result", [str(base), "--no-user-data", "--results", str(rdir.parent)], home(),
                 None))
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    jobs.append(("finding: FIFO scenario", [str(fifo), "--no-user-data"], home(), None))
    jobs.append(("finding: /dev/zero scenario", ["/dev/zero", "--no-user-data"], home(), None))
    if new_cli:  # command-line flags (issue 34): the planner's, `trainplan app`'s and bench's
        (tmp / "a-file.txt").write_text("not a folder\n")
        for case in flag_cases():
            fill = {"{base}": str(base), "{dir}": str(tmp), "{file}": str(tmp / "a-file.txt"),
                    "{out}": str(tmp / f"never-{case.name}.out")}
            jobs.append((f"flag {case.name}", ["-m", case.module, *(fill.get(a, a) for a in case.args)], home(),
                         None))
    return jobs


@dataclass
class WriterJob:
    label: str
    module: str
    args: list[str]
    home: Path
    folder: Path
    before: dict


def build_writer_jobs(tmp: Path, root: Path) -> list[WriterJob]:
    """Issue 34's writer cases, each in its own folder with the file it would replace; the folder's state before."""
    jobs = []
    for case in writer_cases():
        if case.surface == "result-import" and not (root / "tests" / "fixtures" / "bad" / "import_as_app.py").exists():
            continue  # an older checkout has no process for the app's import
        folder = tmp / "writers" / case.id.replace("/", "-")
        folder.mkdir(parents=True)
        made = case.make(folder)
        module, *args = made.args
        jobs.append(WriterJob(f"writer {case.id}", module, args, made.home, folder, tree(folder)))
    return jobs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit-gib", type=float, default=3.0, help="address-space limit per run (default 3 GiB)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a run counts as hung")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose `python -m planner` runs")
    args = ap.parse_args()
    new_cli = (args.root / "planner" / "inputs" / "loader.py").exists()
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        jobs = build_jobs(Path(tmp), new_cli)
        writers = build_writer_jobs(Path(tmp), args.root)
        limit = int(args.limit_gib * 2**30)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(lambda j: run_one(j[0], j[1], args.root, j[2], limit, args.timeout, j[3]),
                                     jobs))
            written = list(pool.map(lambda w: run_one(w.label, w.args, args.root, w.home, limit, args.timeout,
                                                      module=w.module), writers))
        total = time.perf_counter() - t0
        lost = [o for o, w in zip(written, writers, strict=True) if tree(w.folder) != w.before]
    outcomes += written
    print(f"{len(outcomes)} bad-input runs of {args.root} in {total:.1f} s ({args.jobs} at a time; "
          f"limit {args.limit_gib:g} GiB address space, {args.timeout:g} s)")
    print(f"writer runs (issue 34): {len(written)}; exit 2: {sum(o.returncode == 2 for o in written)}; "
          f"changed or removed a file in their folder: {len(lost)}")
    for o in lost:
        print(f"  wrote over something: {o.label}: exit {o.returncode}: {o.tail}")
    slow = max(outcomes, key=lambda o: o.seconds)
    big = max(outcomes, key=lambda o: o.peak_mib)
    print(f"worst wall time: {slow.seconds:.2f} s  ({slow.label}; exit {slow.returncode})")
    print(f"worst peak RSS:  {big.peak_mib:.0f} MiB  ({big.label}; exit {big.returncode})")
    for o in sorted(outcomes, key=lambda o: -o.seconds)[:5]:
        print(f"  {o.seconds:6.2f} s {o.peak_mib:7.0f} MiB  exit {o.returncode}  {o.label}")
    wrong = [o for o in outcomes if o.returncode not in (0, 2) or "Traceback" in o.tail]
    print(f"runs that crashed, hung or printed a traceback: {len(wrong)}")
    for o in wrong:
        print(f"  {o.label}: exit {o.returncode} after {o.seconds:.1f} s, {o.peak_mib:.0f} MiB: {o.tail}")


if __name__ == "__main__":
    main()
