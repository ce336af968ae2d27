"""bench/device_check.sh in --smoke mode (CPU, tiny models): every stage runs and writes its files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from planner.inputs.resultfile import scan_results

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_device_check_smoke(tmp_path):
    out = tmp_path / "dc"
    env = {**os.environ, "TRAINPLAN_HOME": str(tmp_path / "home")}
    r = subprocess.run(["bash", str(ROOT / "bench" / "device_check.sh"), str(out), "--smoke"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads((out / "detect.json").read_text())["device"] in ("cpu", "cuda")
    good, problems = scan_results(out / "results")
    assert not problems and len(good) == 3
    assert any(rf.max_batch for rf in good)
    timing = json.loads((out / "harness_vs_timer.json").read_text())
    assert timing["timing"]["harness_median_s"] > 0 and timing["timing"]["timer_median_s"] > 0
    log = (out / "device_check.log").read_text()
    assert "0 stage(s) failed" in log
