"""bench/device_check.sh in --smoke mode (CPU, tiny models): every stage runs and writes its files, and the
schema-/2 checks (bench/check_results.py) pass on what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench import check_results
from planner.inputs.resultfile import scan_results, write_result_atomic
from tests.fixtures.make_fixtures import resnet50_h100_v2

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
    checks = json.loads((out / "checks.json").read_text())  # the /2 facts; on a GPU also cuDNN and safe batch
    assert checks["device"] == "cpu" and checks["failed"] == [] and len(checks["files"]) == 3
    assert all(t["iqr_over_median"] is not None for f in checks["files"] for t in f["timings"])
    log = (out / "device_check.log").read_text()
    assert "0 stage(s) failed" in log and "check /2 fields: exit 0" in log


def test_the_gpu_checks_pass_on_a_good_gpu_file_and_name_what_is_wrong(tmp_path):
    good = resnet50_h100_v2()
    write_result_atomic(good, tmp_path / "good" / "h100-sxm-80gb" / "r.json")
    assert check_results.main([str(tmp_path / "good"), "--device", "cuda", "--json", str(tmp_path / "c.json")]) == 0
    facts = json.loads((tmp_path / "c.json").read_text())["files"][0]
    assert facts["cudnn"] == 91002 and facts["max_batch"][0]["safe_batch"] == 984
    assert [t["noisy"] for t in facts["timings"]].count(True) == 1
    bad = resnet50_h100_v2()
    bad["environment"].update(cudnn=None, unmeasured={"cudnn": "no cuDNN"})
    bad["max_batch"][0].update(safe_confirmed=False)
    write_result_atomic(bad, tmp_path / "bad" / "h100-sxm-80gb" / "r.json")
    assert check_results.main([str(tmp_path / "bad"), "--device", "cuda", "--json", str(tmp_path / "b.json")]) == 1
    failed = json.loads((tmp_path / "b.json").read_text())["failed"]
    assert len(failed) == 2 and "cuDNN version None" in failed[0] and "safe batch 984" in failed[1]
