"""Speed and memory of `bench trace`: wall time and peak RSS of the CLI in a fresh process, per configuration.

Targets (issue 8): GPT-2 at one batch size under 5 s; a LLaMA-7B-style decoder (32 layers, hidden 4096, seq 2048,
batch 8, AdamW) under 15 s and under 2 GiB RSS. Each case runs `python -m bench.trace ... --out -` as a child
process; RSS is that child's ru_maxrss (getrusage(RUSAGE_CHILDREN) in a wrapper that has only that child), time is its wall clock including interpreter start and
`import torch`, and the child also reports the time spent tracing alone.

Run: .venv/bin/python perf/trace_speed.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("gpt2, bf16, batch 8 (seq 1024)", ["--model", "gpt2", "--precision", "bf16", "--batch", "8"], 5.0, None),
    ("LLaMA-7B-style, bf16, batch 8 (32 x 4096, seq 2048), AdamW",
     ["--model", "llama", "--model-option", "preset=7b", "--precision", "bf16", "--batch", "8",
      "--optimizer", "adamw"], 15.0, 2.0),
    ("LLaMA-7B-style, fp32, batch 8, checkpointing",
     ["--model", "llama", "--model-option", "preset=7b", "--precision", "fp32", "--batch", "8",
      "--checkpointing"], 15.0, 2.0),
]
# Timing inside the child: everything after interpreter start-up is measured by the CLI itself.
CHILD = (
    "import sys, time; t0 = time.perf_counter(); import torch; t1 = time.perf_counter(); "
    "from bench import trace; code = trace.cli(sys.argv[1:]); t2 = time.perf_counter(); "
    "print(f'TIMING import_torch={t1 - t0:.3f} trace={t2 - t1:.3f}', file=sys.stderr); sys.exit(code)"
)


def run_case(argv: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *argv, "--out", "-"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    timing = dict(kv.split("=") for line in err.splitlines() if line.startswith("TIMING") for kv in line.split()[1:])
    doc = json.loads(out) if proc.returncode == 0 else None
    return {"returncode": proc.returncode, "wall_s": wall, "timing": timing, "doc": doc, "stderr": err}


def run_case_rss(argv: list[str]) -> tuple[dict, float]:
    """run_case in a fresh wrapper process, so RUSAGE_CHILDREN holds exactly one child: the tracer."""
    code = (
        "import json, resource, sys; sys.path.insert(0, sys.argv[1]); import perf.trace_speed as s; "
        "r = s.run_case(sys.argv[2:]); r['maxrss_kib'] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
        "r.pop('doc', None) if r['returncode'] else None; print(json.dumps(r))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT), *argv], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    result = json.loads(proc.stdout)
    return result, result["maxrss_kib"] / 2**20


def main() -> int:
    print("| case | wall s (fresh process) | of which import torch s | tracer imports + trace s | peak RSS GiB "
          "| traced peak GiB | target |")
    print("|---|---|---|---|---|---|---|")
    failed = False
    for name, argv, max_s, max_rss_gib in CASES:
        result, rss_gib = run_case_rss(argv)
        if result["returncode"] != 0:
            print(f"| {name} | failed ({result['returncode']}): {result['stderr'].strip()[-300:]} |")
            failed = True
            continue
        peak = result["doc"]["measurements"][0]["peak_allocated_bytes"] / 2**30
        ok = result["wall_s"] <= max_s and (max_rss_gib is None or rss_gib <= max_rss_gib)
        failed |= not ok
        target = f"< {max_s:g} s" + (f", < {max_rss_gib:g} GiB RSS" if max_rss_gib else "")
        print(f"| {name} | {result['wall_s']:.2f} | {float(result['timing']['import_torch']):.2f} | "
              f"{float(result['timing']['trace']):.2f} | {rss_gib:.2f} | {peak:.1f} | "
              f"{target}: {'ok' if ok else 'MISSED'} |")
    print(f"\n{os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
