"""calibration/calibration_report.py: the step-time paths against held-out published runs. Deterministic, so the committed
metrics (calibration/calibration_metrics.json) and the README's table must equal a fresh run's, and no change may make
the metrics worse without re-committing them (`--write`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    from calibration import calibration_report as module

    results, problems = module.scan_results(module.PUBLISHED)
    assert not problems
    inputs = module.corpus_inputs()
    points, preds = module.run(results, inputs)
    return module, points, preds, results, inputs


def test_every_one_gpu_published_figure_is_held_out_once_per_path(report):
    module, points, preds, results, inputs = report
    assert len(points) >= 90 and len({p.source for p in points}) >= 4
    # one point per run: timm publishes samples/s and ms per iteration on the same line
    assert len({(p.citation, p.model, p.gpu, p.precision, p.micro_batch) for p in points}) == len(points)
    assert {k: len(v) for k, v in preds.items()} == {k: len(points) for k in preds}
    # A held-out point never predicts itself: with its GPU hidden, no 'published' time for that GPU remains.
    assert not [p for p, pr in zip(points, preds["transfer"], strict=True) if pr.kind == "published"]
    assert all(pr.kind == "analytic" for pr in preds["analytic"])


def test_the_calibration_is_reproducible():
    """Same data, same file: calibration/calibrate.py --check refits and compares byte for byte."""
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "calibration" / "calibrate.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_held_out_ranges_cover_the_published_runs_about_as_often_as_they_claim(report):
    """p10-p90 ranges: about 80% of held-out runs inside (the issue's band: 70-90%), and no zero-width range."""
    module, points, preds, results, inputs = report
    held = [(p, pr) for key in ("transfer", "leave_one_source_out") for p, pr in zip(points, preds[key], strict=True)]
    inside = sum(pr.covers(p.published_s) for p, pr in held) / len(held)
    assert 0.7 <= inside <= 0.9, inside
    assert all(pr.high_s > pr.low_s for _, pr in held)


def test_the_metrics_do_not_regress_against_the_committed_ones(report):
    module, points, preds, results, inputs = report
    fresh = module.metrics(points, preds)
    committed = json.loads((ROOT / "calibration" / "calibration_metrics.json").read_text(encoding="utf-8"))
    assert fresh["n_points"] == committed["n_points"], "the data changed: re-run calibration/calibration_report.py --write"
    for key in ("analytic_median_abs", "analytic_p90_abs", "transfer_median_abs", "transfer_p90_abs",
                "loso_median_abs", "loso_p90_abs"):
        assert fresh[key] <= committed[key] + 0.005, (key, fresh[key], committed[key])
    for key in ("analytic_mean_signed", "transfer_mean_signed", "loso_mean_signed"):
        assert abs(fresh[key]) <= abs(committed[key]) + 0.005, (key, fresh[key], committed[key])
    assert fresh["heldout_coverage"] >= committed["heldout_coverage"] - 0.005


def test_the_readme_table_is_the_report(report):
    module, points, preds, results, inputs = report
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- calibration-table:start -->\n(.*?)\n<!-- calibration-table:end -->", readme, re.S)
    assert block, "README lost its calibration table markers"
    fresh = "\n".join(module.report_lines(results, inputs, points, preds))
    assert block.group(1).strip() == fresh.strip()


def test_the_roofline_by_operator_class_is_held_out_against_the_two_term_formula_on_the_same_points():
    """calibration/class_roofline.py (issue 15): every published point whose model (or a traced twin of its typed shape)
    has a per-class split is predicted held out by both forms fitted on exactly those points; the README carries the
    table as the script prints it (deterministic), and the class form keeps one parameter per ten points."""
    from calibration import class_roofline as module

    m = module.compute()
    assert m["n_split"] >= 90 and m["n_split"] + m["n_unsplit"] == m["n_points"]  # the BERT SQuAD shapes' twins
    assert m["n_params"] * 10 <= m["n_split"]
    two_term, by_class = m["analytic_same_points"], m["class_roofline_heldout"]
    assert two_term["n"] == by_class["n"] == m["n_split"]
    assert 0.05 < by_class["median_abs"] < 0.3 and 0.05 < two_term["median_abs"] < 0.3
    assert sum(v["n"] for v in m["by_architecture_and_bound"].values()) == m["n_split"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- class-roofline-table:start -->\n(.*?)\n<!-- class-roofline-table:end -->", readme, re.S)
    assert block, "README lost its class-roofline table markers"
    assert block.group(1) == "\n".join(module.lines(m)), "README table is stale: run calibration/class_roofline.py"
