"""Check the schema-/2 facts of the result files a device check wrote: cuDNN, raw times and noise, safe batch.

    python -m bench.check_results RESULTS_DIR --device cuda|cpu [--json OUT.json]

On cuda (a real GPU) it also requires what only a GPU gives: a cuDNN version, CUDA-event timings, and a max-batch
search whose safe batch is below the largest that ran and passed its repeat run. Prints one line per check;
exit 1 when any fails. Standard library + planner.inputs only (no torch).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planner.inputs.resultfile import SCHEMA, ResultFile, iqr_over_median, is_noisy, percentile, scan_results


def check_file(rf: ResultFile, device: str) -> tuple[list[str], list[str], dict]:
    """(passed, failed, facts) for one file."""
    ok: list[str] = []
    bad: list[str] = []
    name = Path(rf.path).name

    def expect(cond: bool, what: str) -> None:
        (ok if cond else bad).append(f"{name}: {what}")

    env = rf.environment
    expect(rf.schema == SCHEMA and not rf.partial and rf.missing == (), f"complete {SCHEMA} file")
    expect(bool(env.get("trainplan_version")), "environment.trainplan_version")
    threads = env.get("cpu_threads") or {}
    expect(bool(threads.get("torch_num_threads")), f"environment.cpu_threads {dict(threads)}")
    cudnn = env.get("cudnn")
    if device == "cuda":
        expect(env.get("device") == "cuda" and isinstance(cudnn, int) and cudnn > 0, f"cuDNN version {cudnn}")
    else:
        expect(cudnn is not None or bool((env.get("unmeasured") or {}).get("cudnn")),
               f"cuDNN {cudnn} (null needs a reason)")
    command = rf.settings.get("command") or []
    expect("-m" in command and "bench" in command, "settings.command is the bench command line")
    expect(isinstance(rf.settings.get("requested"), dict), "settings.requested")
    timings = []
    for m in rf.measurements:
        st = m.step_time_s
        if not (m.ok and m.source == "measured" and st):
            continue
        ratio = iqr_over_median(st.raw) if st.raw else None
        timings.append({"precision": m.precision, "batch": m.batch_size, "median_s": st.median,
                        "iqr_over_median": ratio, "noisy": m.noisy})
        expect(len(st.raw) == st.n == rf.settings.get("steps") and percentile(st.raw, 50) == st.median,
               f"{m.precision} b={m.batch_size}: {st.n} raw step times give the median")
        expect(ratio is not None and m.noisy == is_noisy(ratio), f"{m.precision} b={m.batch_size}: noisy="
               f"{m.noisy} from IQR/median {ratio if ratio is None else round(ratio, 4)}")
    if device == "cuda" and timings:
        expect(rf.settings.get("sync_method") == "cuda_events", "timed with CUDA events")
    expect(len(rf.warnings) == sum(1 for t in timings if t["noisy"]), "one warning per noisy measurement")
    safe_rows = []
    for mb in rf.max_batch:
        largest, safe, confirmed = mb.get("max_batch"), mb.get("safe_batch"), mb.get("safe_confirmed")
        safe_rows.append({"precision": mb.get("precision"), "max_batch": largest, "safe_batch": safe,
                          "safe_confirmed": confirmed, "safe_trials": mb.get("safe_trials")})
        if device == "cuda":
            trials = mb.get("safe_trials") or []
            expect(bool(largest) and safe is not None and (safe < largest or largest == 1) and confirmed is True
                   and bool(trials) and trials[-1] == {"batch_size": safe, "status": "ok"},
                   f"{mb.get('precision')}: safe batch {safe} < max {largest}, confirmed by a repeat run")
        else:
            expect(largest is None and safe is None and bool(mb.get("reason")), "CPU: no max-batch search (reason)")
    facts = {"file": str(rf.path), "cudnn": cudnn, "timings": timings, "max_batch": safe_rows}
    return ok, bad, facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check_results", description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the results folder the device check wrote")
    parser.add_argument("--device", required=True, choices=("cuda", "cpu"))
    parser.add_argument("--json", default=None, help="write the facts and outcomes here")
    args = parser.parse_args(argv)
    files, problems = scan_results(args.results)
    passed: list[str] = []
    failed = [f"unreadable: {p}" for p in problems] + ([] if files else [f"no result files in {args.results}"])
    facts = []
    for rf in files:
        ok, bad, found = check_file(rf, args.device)
        passed += ok
        failed += bad
        facts.append(found)
    if args.device == "cuda" and not any(f["max_batch"] for f in facts):
        failed.append("no max-batch search in any file")
    for line in passed:
        print(f"ok   {line}")
    for line in failed:
        print(f"FAIL {line}")
    print(f"{len(passed)} checks passed, {len(failed)} failed")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "passed": passed, "failed": failed,
                                               "files": facts}, indent=1), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
