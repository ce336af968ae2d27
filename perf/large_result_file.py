"""How long a plan takes when a result file is huge (issue 13: a valid 13 MB file took 19 s, 35 MB never finished).

Writes synthetic result files (tests/fixtures helpers: NOT real measurements, in a temp folder) of growing size,
then times load_inputs + build_plan on the shipped ResNet-50 scenario with that folder as --results.
Prints size, measurements, load and plan seconds (median of --repeats) and the growth ratio per doubling.

    python perf/large_result_file.py [--mib 8 16 32 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.engine.plan import build_plan  # noqa: E402
from planner.inputs.folders import load_inputs  # noqa: E402
from planner.inputs.scenario import load_scenario_file  # noqa: E402
from tests.fixtures.make_fixtures import measurement, result  # noqa: E402

BYTES_PER_MEASUREMENT = 716  # one fixture measurement as json.dumps writes it


def write_file(folder: Path, target_mib: float) -> tuple[Path, int]:
    """A valid resnet50-on-H100 result file of about target_mib: batches 1..n at bf16 with a linear t(b), peak(b)."""
    path = folder / "h100-sxm-80gb" / f"resnet50-{int(target_mib)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    n = max(8, int(target_mib * 2**20 / BYTES_PER_MEASUREMENT))
    for _ in range(2):  # the estimate, then once more scaled to the size it gave (rows grow with the batch)
        ms = [measurement("bf16", b, 0.004 + 0.00042 * b, 0.6 * 2**30 + 0.06 * 2**30 * b) for b in range(1, n + 1)]
        path.write_text(json.dumps(result("resnet50", "h100-sxm-80gb", ms)), encoding="utf-8")
        n = int(n * target_mib * 2**20 / path.stat().st_size * 0.995)
    return path, len(ms)


def time_plan(results_dir: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    inputs = load_inputs([results_dir], None, include_user_data=False)
    t1 = time.perf_counter()
    scenario = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml", known_gpu_ids=inputs.profiles)
    build_plan(scenario, inputs, today=dt.date(2026, 12, 1))
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=float, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    previous = None
    print(f"{'file MiB':>9} {'measurements':>13} {'load s':>8} {'plan s':>8} {'total s':>8} {'x per 2x':>9}")
    for mib in args.mib:
        with tempfile.TemporaryDirectory() as tmp:
            path, n = write_file(Path(tmp), mib)
            runs = [time_plan(Path(tmp)) for _ in range(args.repeats)]
            size = path.stat().st_size / 2**20
        load = statistics.median(r[0] for r in runs)
        plan = statistics.median(r[1] for r in runs)
        total = load + plan
        growth = f"{total / previous:.2f}" if previous else "—"
        print(f"{size:9.1f} {n:13,} {load:8.2f} {plan:8.2f} {total:8.2f} {growth:>9}")
        previous = total


if __name__ == "__main__":
    main()
