"""calibration/convergence_report.py: the reference-point fit against MLPerf's reference convergence points, held out one
benchmark at a time. Deterministic, so the committed metrics (calibration/convergence_metrics.json), the calibration the
planner reads (planner/inputs/convergence_calibration.json) and the README's table must equal a fresh run's."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pytest

from planner.engine.convergence import estimate_convergence
from planner.inputs.convergence_calibration import CONVERGENCE_CALIBRATION_PATH, load_convergence_calibration
from planner.inputs.scenario import ReferencePoint, Workload
from tests.notes_support import texts

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "calibration" / "convergence_data"


def _module():
    from calibration import convergence_report

    return convergence_report


@pytest.fixture(scope="module")
def report():
    module = _module()
    return module, module.fresh_run()


# ---------------------------------------------------------------- the data

def test_every_benchmark_is_held_out_from_its_newest_rcps():
    module = _module()
    sources = module.load_sources()
    assert sources["commit"] == "7bbf792686936919201796120b970dd820331099"
    benches = module.load_benchmarks()  # checks each file's sha256 against SOURCES.yaml
    assert len(benches) == 18
    versions = {b.name: b.version for b in benches}
    assert versions["bert"] == "5.1.0" and versions["resnet"] == "4.0.0" and versions["llama31_8b"] == "6.1.0"
    assert "ssd" not in versions and "gnn" not in versions  # the same numbers as retinanet and rgat
    assert all(len(b.points) >= 3 for b in benches)  # two reference points and at least one held out


def test_the_raw_copies_are_the_files_sources_yaml_names():
    module = _module()
    listed = {e["file"]: e["sha256"] for e in module.load_sources()["benchmarks"].values()}
    on_disk = {str(p.relative_to(DATA)) for p in DATA.rglob("*.json")}
    assert set(listed) == on_disk
    for file, sha in listed.items():
        assert hashlib.sha256((DATA / file).read_bytes()).hexdigest() == sha, file


def test_the_published_value_is_the_rcp_checkers_olympic_mean():
    module = _module()
    # resnet 1632 (training_4.0.0): 17 seeds, sum 595, the 33 and one 37 dropped -> 525 / 15 = 35.0
    assert module.olympic_mean([34, 34, 34, 35, 35, 37, 35, 35, 33, 35, 35, 37, 37, 35, 35, 34, 35], "resnet") == 35.0
    assert module.olympic_mean(list(range(10)), "unet3d") == 4.5  # four dropped at each end


# ---------------------------------------------------------------- the committed files

def test_the_metrics_do_not_regress_against_the_committed_ones(report):
    module, r = report
    fresh = module.metrics(r)
    committed = json.loads(module.METRICS_PATH.read_text(encoding="utf-8"))
    assert fresh["n_heldout_points"] == committed["n_heldout_points"], \
        "the data changed: re-run calibration/convergence_report.py --write"
    for key in ("after_median_abs", "after_p90_abs"):
        assert fresh[key] <= committed[key] + 0.005, (key, fresh[key], committed[key])
    for key in ("after_mean_signed", "after_mean_signed_over_8x"):
        assert abs(fresh[key]) <= abs(committed[key]) + 0.005, (key, fresh[key], committed[key])
    assert fresh["heldout_coverage"] >= committed["heldout_coverage"] - 0.005


def test_the_committed_metrics_are_a_fresh_run(report):
    module, r = report
    assert module.METRICS_PATH.read_text(encoding="utf-8") == module.metrics_text(r)


def test_the_calibration_is_reproducible_and_the_planner_reads_it(report):
    """Same data, same file (calibration/convergence_report.py --check); the planner's loader gives the same numbers."""
    module, r = report
    assert CONVERGENCE_CALIBRATION_PATH.read_text(encoding="utf-8") == module.calibration_text(r)
    shipped = load_convergence_calibration()
    assert shipped is not None
    assert shipped.large_batch_exponent == round(r.calibration.large_batch_exponent, 4)
    assert shipped.extrapolation_per_log_batch == round(r.calibration.extrapolation_per_log_batch, 4)
    assert (shipped.seed_spread_p10, shipped.seed_spread_p90) == (round(r.calibration.seed_spread_p10, 4),
                                                                   round(r.calibration.seed_spread_p90, 4))


def test_the_readme_table_is_the_report(report):
    module, r = report
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- convergence-table:start -->\n(.*?)\n<!-- convergence-table:end -->", readme, re.S)
    assert block, "README lost its convergence table markers"
    assert block.group(1).strip() == "\n".join(module.report_lines(r)).strip()


# ---------------------------------------------------------------- what the data shows

def test_the_correction_reduces_the_held_out_bias(report):
    """Measured on the committed data: eq. 2.11 fitted at the two smallest batches under-counts the steps at large
    batches (-35% past 8x the largest reference batch, -10% over all 63 held-out batches); gamma, fitted on the
    other benchmarks, brings both nearer zero and the absolute errors down."""
    module, r = report
    m = module.metrics(r)
    assert m["before_mean_signed"] == pytest.approx(-0.0982, abs=1e-4)
    assert m["after_mean_signed"] == pytest.approx(0.0354, abs=1e-4)
    assert m["before_mean_signed_over_8x"] == pytest.approx(-0.3523, abs=1e-4)
    assert m["after_mean_signed_over_8x"] == pytest.approx(-0.0992, abs=1e-4)
    assert abs(m["after_mean_signed"]) < abs(m["before_mean_signed"])
    assert abs(m["after_mean_signed_over_8x"]) < abs(m["before_mean_signed_over_8x"])
    assert m["after_median_abs"] < m["before_median_abs"] and m["after_p90_abs"] < m["before_p90_abs"]
    # One parameter, stable when any one benchmark is left out.
    assert 0.1 < m["large_batch_exponent_heldout_min"] <= m["large_batch_exponent"] \
        <= m["large_batch_exponent_heldout_max"] < 0.2


def test_the_held_out_ranges_cover_the_published_means_about_as_often_as_they_claim(report):
    module, r = report
    assert 0.7 <= module.metrics(r)["heldout_coverage"] <= 0.9


def test_the_report_predicts_with_the_planners_own_estimate(report):
    """A user with resnet's two smallest RCPs as reference points plans the published largest batch: the plan's
    steps and range are the report's 'after' prediction and range (with the shipped gamma)."""
    module, r = report
    resnet = next(b for b in r.benches if b.name == "resnet")
    d = 1_000_000  # any dataset size: it scales every step count alike
    points = tuple(ReferencePoint(global_batch=p.batch, epochs=p.mean) for p in resnet.points[:2])
    top = resnet.points[-1]
    est = estimate_convergence(Workload(dataset_samples=d, reference_points=points), top.batch, None)
    fit = module.reference_fit(resnet)
    shipped = load_convergence_calibration()
    assert shipped is not None
    expected = module.steps_past_reference(fit.s_min, fit.e_min, top.batch, fit.high_batch,
                                           exponent=shipped.large_batch_exponent) * d
    assert est.steps == math.ceil(expected - 1e-9)
    assert any(n.startswith("batch 20.8x the largest reference batch (3,264)") for n in texts(est.notes))
    low, high = est.steps_range
    d_log = math.log(top.batch / fit.high_batch)
    assert math.log(high / est.steps) == pytest.approx(module.steps_band_log(fit.largest_log_residual, d_log, shipped))
    assert math.log(est.steps / low) == pytest.approx(math.log(high / est.steps))


# One per benchmark: the held-out prediction at its largest batch lies inside the planner's steps range (the
# tolerance the report states). Where it does not, the reason, from the report's rows.
OUTSIDE = {
    "llama2_70b_lora": "+49% at 8x (eq. 2.11 alone: +42%): steps fall faster at 32-128 than batches 8 and 16 say",
    "maskrcnn": "+46% at 5.7x (eq. 2.11 alone: +23%): batch 8 takes 12.7 epochs, 48-128 about 14: the 8->48 fit "
                "over-counts",
    "resnet": "-35% at 20.8x (eq. 2.11 alone: -52%): epochs climb from 35 to 86 between 3,264 and 67,840, more "
              "than one gamma fitted on the others gives",
    "stable_diffusion": "+70% at 5.3x (eq. 2.11 alone: +62%): steps fall faster past 384 than batches 256 and 384 "
                        "say",
}
BENCHMARKS = ("bert", "deepseekv3_671b", "dlrm", "dlrm_dcnv2", "flux1", "gpt3", "gpt_oss_20b", "llama2_70b_lora",
              "llama31_405b", "llama31_8b", "maskrcnn", "qwen35_397b_grpo", "resnet", "retinanet", "rgat", "rnnt",
              "stable_diffusion", "unet3d")


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=OUTSIDE[n])) if n in OUTSIDE else n
    for n in BENCHMARKS])
def test_the_held_out_prediction_at_the_largest_batch_is_inside_the_range(report, name):
    module, r = report
    assert sorted(b.name for b in r.benches) == list(BENCHMARKS)
    h = module.largest(r, name)
    assert h.covered, (name, h.batch, h.error_after, math.exp(h.band_log) - 1)
