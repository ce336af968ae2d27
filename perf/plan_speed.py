"""Planner speed: plan every profile x 4 precisions x GPU counts {1..64} for the ResNet-50 scenario; CLI end to end.

Targets (issue 3): < 100 ms per plan after profiles are loaded; `python -m planner` end to end < 1.5 s.
Prints medians over repeated runs (the machines are shared and noisy: compare medians, not single runs).
"""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine.plan import build_plan  # noqa: E402
from planner.inputs.folders import load_inputs  # noqa: E402
from planner.inputs.scenario import load_scenario_file  # noqa: E402


def main() -> None:
    inputs = load_inputs(include_user_data=False)
    s = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    counts = (1, 2, 4, 8, 16, 32, 64)
    s = dataclasses.replace(s, training=dataclasses.replace(s.training, global_batch=1024),
                            hardware=dataclasses.replace(s.hardware, gpus=None, gpu_counts=counts))
    plan_ms = []
    for _ in range(15):
        t0 = time.perf_counter()
        plan = build_plan(s, inputs)
        plan_ms.append((time.perf_counter() - t0) * 1e3)
    print(f"options per plan: {len(plan.options)} ({len(inputs.profiles)} profiles x 4 precisions x {len(counts)} counts)")
    print(f"build_plan median {statistics.median(plan_ms):.1f} ms (min {min(plan_ms):.1f}, max {max(plan_ms):.1f}) "
          f"target < 100 ms")
    cli_s = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "planner", "scenarios/resnet50-imagenet.yaml", "--no-user-data"],
                       cwd=ROOT, check=True, capture_output=True)
        cli_s.append(time.perf_counter() - t0)
    print(f"python -m planner end to end median {statistics.median(cli_s):.2f} s target < 1.5 s")


if __name__ == "__main__":
    main()
