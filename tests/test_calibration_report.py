"""calibration/calibration_report.py: the step-time paths against held-out published runs. Deterministic, so the committed
metrics (calibration/calibration_metrics.json, schema trainplan.calibration-metrics/2) and the README's table must equal a
fresh run's, and no change may make the metrics worse without re-committing them (`--write`). The frozen held-out split
(calibration/heldout.yaml) is tested in tests/test_heldout.py; the issue's goals on it are xfail(strict) here until met."""

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
    heldout = module.load_heldout()
    points, preds = module.run(results, inputs, heldout)
    multi = module.multi_gpu_rows(results, inputs, heldout)
    return module, points, preds, results, inputs, multi, heldout


@pytest.fixture(scope="module")
def fresh(report):
    module, points, preds, results, inputs, multi, heldout = report
    return module.metrics(points, preds, multi, heldout)


@pytest.fixture(scope="module")
def committed(report):
    module = report[0]
    data = json.loads((ROOT / "calibration" / "calibration_metrics.json").read_text(encoding="utf-8"))
    module.check_metrics_schema(data, "calibration/calibration_metrics.json")
    return data


def test_every_one_gpu_published_figure_is_held_out_once_per_path(report):
    module, points, preds, results, inputs, multi, heldout = report
    assert len(points) >= 90 and len({p.source for p in points}) >= 4
    # one point per run: timm publishes samples/s and ms per iteration on the same line
    assert len({(p.citation, p.model, p.gpu, p.precision, p.micro_batch) for p in points}) == len(points)
    assert {k: len(v) for k, v in preds.items()} == {k: len(points) for k in preds}
    # A held-out point never predicts itself: with its GPU hidden, no 'published' time for that GPU remains.
    assert not [p for p, pr in zip(points, preds["transfer"], strict=True) if pr.kind == "published"]
    assert all(pr.kind == "analytic" for pr in preds["analytic"])
    # the held-out path predicts exactly the held-out sources' rows
    assert [heldout.holds(p.source) for p in points] == [pr is not module.NOT_PREDICTED for pr in preds["heldout"]]
    assert any(heldout.holds(p.source) for p in points)


def test_the_metrics_file_is_versioned_and_says_what_each_figure_means(committed):
    figures = {k for k in committed if k not in ("schema", "definitions") and not k.startswith("n_")}
    assert figures <= set(committed["definitions"]), sorted(figures - set(committed["definitions"]))
    assert "summary" in committed["definitions"]


def test_a_metrics_file_of_another_version_is_refused_with_a_clear_message(report):
    module = report[0]
    old = {"analytic_median_abs": 0.16, "loso_median_abs": 0.18, "heldout_coverage": 0.74}
    with pytest.raises(ValueError, match="unversioned.*calibration-metrics/2"):
        module.check_metrics_schema(old, "calibration_metrics.json")
    with pytest.raises(ValueError, match="calibration-metrics/1"):
        module.check_metrics_schema({**old, "schema": "trainplan.calibration-metrics/1"}, "calibration_metrics.json")
    module.check_metrics_schema({"schema": module.METRICS_SCHEMA}, "calibration_metrics.json")


def test_the_calibration_is_reproducible():
    """Same data, same file: calibration/calibrate.py --check refits and compares byte for byte."""
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "calibration" / "calibrate.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_held_out_ranges_cover_the_held_out_runs_as_often_as_they_claim(report, fresh):
    """p10-p90 ranges on the frozen held-out split's one-GPU rows: the issue's band, 70-90%; no zero-width range."""
    module, points, preds, results, inputs, multi, heldout = report
    assert 0.7 <= fresh["heldout_one_gpu"]["coverage"] <= 0.9, fresh["heldout_one_gpu"]
    held = [pr for p, pr in zip(points, preds["heldout"], strict=True) if heldout.holds(p.source)]
    assert all(pr.high_s > pr.low_s for pr in held)


def test_the_multi_gpu_rows_get_the_held_out_treatment(report, fresh):
    """The corpus's multi-GPU rows of held-out sources are planned by the multi-GPU path, at least 30 of them LLM
    rows; a row the planner cannot plan is counted and says why, never dropped silently."""
    module, points, preds, results, inputs, multi, heldout = report
    assert fresh["heldout_multi_gpu_llm"]["n"] >= 30
    assert fresh["n_multi_gpu_rows"] == len(multi) >= fresh["n_multi_gpu_predicted"]
    assert all(r.reason for r in multi if r.prediction is None)
    assert {r.n_gpus for r in multi} >= {8} and all(r.n_gpus > 1 for r in multi)


def test_cross_validation_ranges_cover_the_runs_about_as_often_as_they_claim(report, fresh):
    # It failed (53%) while three of the four one-GPU time sources were held out; with the corpus widened (torchtune,
    # llm.c) and LoRA rows predicted as LoRA runs it holds again.
    module, points, preds, results, inputs, multi, heldout = report
    assert 0.7 <= fresh["cv_coverage"] <= 0.9, fresh["cv_coverage"]


@pytest.mark.xfail(strict=True, reason="issue 32 goals on the held-out split not met yet: one-GPU p90 69% "
                   "(> 45%; NVIDIA's BERT-large pre-training on the A100 planned far too slow), no one-GPU LLM rows "
                   "at all (0; goal needs them), multi-GPU p90 103%")
def test_the_held_out_split_meets_the_issue_goals(fresh):
    one, llm = fresh["heldout_one_gpu"], fresh["heldout_one_gpu_llm"]
    assert one["median_abs"] <= 0.20 and one["p90_abs"] <= 0.45 and 0.7 <= one["coverage"] <= 0.9, one
    assert llm["n"] >= 30 and llm["median_abs"] <= 0.20, llm


def _summaries(m: dict) -> dict[str, dict]:
    """Every summary block of a metrics file, by its key (lofo's per family as lofo.<family>)."""
    out = {k: v for k, v in m.items() if isinstance(v, dict) and "n" in v}
    out.update({f"lofo.{g}": v for g, v in m.get("lofo", {}).items()})
    return out


def test_the_metrics_do_not_regress_against_the_committed_ones(report, fresh, committed):
    assert fresh["n_points"] == committed["n_points"] and fresh["heldout_sources"] == committed["heldout_sources"], \
        "the data or the split changed: re-run calibration/calibrate.py, then calibration/calibration_report.py --write"
    assert fresh["definitions"] == committed["definitions"]
    new, old = _summaries(fresh), _summaries(committed)
    assert set(new) == set(old)
    for key, s in old.items():
        assert new[key]["n"] == s["n"], (key, new[key], s)
        if not s["n"]:
            continue
        for f in ("median_abs", "p90_abs"):
            assert new[key][f] <= s[f] + 0.005, (key, f, new[key][f], s[f])
        assert abs(new[key]["mean_signed"]) <= abs(s["mean_signed"]) + 0.005, (key, new[key], s)
    assert fresh["cv_coverage"] >= committed["cv_coverage"] - 0.005


def test_the_readme_table_is_the_report(report):
    module, points, preds, results, inputs, multi, heldout = report
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- calibration-table:start -->\n(.*?)\n<!-- calibration-table:end -->", readme, re.S)
    assert block, "README lost its calibration table markers"
    fresh = "\n".join(module.report_lines(results, inputs, points, preds, multi, heldout))
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
