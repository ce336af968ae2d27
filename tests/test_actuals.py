"""Plan against actual (issue 19): the error arithmetic, recorded-run files, measured points from runs, the Runs page."""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from planner import __version__, cli
from planner.engine import actuals as ea
from planner.engine.plan import build_plan
from planner.inputs import actuals as ia
from planner.inputs.folders import load_inputs
from planner.inputs.resultfile import NUMERIC_FIELDS, read_result_file
from planner.inputs.scenario import load_scenario_file, parse_scenario, scenario_to_dict
from planner.inputs.userdata import DEFAULT_SCENARIO
from planner.present import planjson
from tests.fixtures.make_fixtures import measurement, result
from tests.notes_support import detail_en

ROOT = Path(__file__).resolve().parent.parent
DAY = dt.date(2026, 11, 30)


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def scenario():
    return load_scenario_file(DEFAULT_SCENARIO)


def plan_now(scenario):
    """The default scenario's plan with the shipped inputs + this test's $TRAINPLAN_HOME."""
    return build_plan(scenario, load_inputs(), today=DAY)


def one_gpu_option(plan, n_gpus: int = 1):
    return next(plan.option(i) for i in ea.recordable(plan)
                if plan.option(i).n_gpus == n_gpus and plan.option(i).grad_accum == 1)


def make_run(plan, scenario, option, **figures) -> ia.RecordedRun:
    predicted = ia.predicted_from_plan_json(planjson.option_to_dict(option), planjson.SCHEMA, __version__, DAY)
    return ea.new_run(plan, option.id, scenario=scenario_to_dict(scenario), predicted=predicted,
                      actual=ia.ActualFigures(**figures), date=DAY, note="first try")


# ---------------------------------------------------------------- the arithmetic

def test_error_is_actual_over_predicted_minus_one_and_the_range_check_includes_its_ends():
    assert ea.relative_error(12.0, 10.0) == pytest.approx(0.2)
    assert ea.relative_error(7.5, 10.0) == pytest.approx(-0.25)
    assert ea.relative_error(10.0, 10.0) == 0.0
    assert ea.relative_error(5.0, None) is None and ea.relative_error(5.0, 0.0) is None
    assert ea.within(10.0, (8.0, 10.0)) is True and ea.within(10.01, (8.0, 10.0)) is False
    assert ea.within(3.0, None) is None
    e = ea.FigureError("hours", 10.0, 13.0, ea.relative_error(13.0, 10.0), 9.0, 12.0)
    assert e.error == pytest.approx(0.3) and e.inside is False
    assert ea.FigureError("hours", 10.0, 11.0, 0.1).inside is None  # no range given


def test_run_errors_cover_each_recorded_figure_only():
    predicted = ia.Predicted("trainplan.plan/2", "0.1.0", DAY, step_time_s=0.5, step_time_range_s=(0.45, 0.6),
                             hours=20.0, hours_range=(18.0, 25.0), cost_usd=100.0, cost_usd_range=(90.0, 120.0))
    run = ia.RecordedRun(DAY, "s", {}, ia.RunOption("a-x1-bf16", "a", 1, "bf16", 8, 8), ia.RunModel("m", 10),
                         ia.ActualFigures(step_time_s=0.55, cost_usd=150.0), predicted)
    errs = {e.figure: e for e in ea.run_errors(run)}
    assert set(errs) == {"step_time_s", "cost_usd"}
    assert errs["step_time_s"].error == pytest.approx(0.1) and errs["step_time_s"].inside is True
    assert errs["cost_usd"].error == pytest.approx(0.5) and errs["cost_usd"].inside is False


# ---------------------------------------------------------------- files

def test_a_recorded_run_round_trips_with_its_prediction_and_scenario(scenario, home):
    plan = plan_now(scenario)
    option = plan.option(plan.recommendation.primary)
    run = make_run(plan, scenario, option, hours=31.5, cost_usd=40.0)
    saved = ia.save_run(run)
    assert Path(saved.path).parent == home / "actuals"
    data = yaml.safe_load(Path(saved.path).read_text(encoding="utf-8"))
    assert data["schema"] == "trainplan.actual/1"
    assert data["predicted"]["plan_schema"] == planjson.SCHEMA
    assert data["predicted"]["hours"] == planjson.option_to_dict(option)["hours"]
    runs, problems = ia.scan_actuals()
    assert problems == [] and runs == [saved]
    back = runs[0]
    assert back.option.option_id == option.id and back.option.micro_batch == option.micro_batch
    assert back.scenario["name"] == scenario.name
    assert parse_scenario(dict(back.scenario)) == scenario  # the scenario the prediction came from, whole
    assert back.not_a_point == "no_step_time" and back.measured_point is None
    again = ia.save_run(run)  # never overwritten: a second run of the same option the same day is a new file
    assert again.path != saved.path and len(ia.scan_actuals()[0]) == 2


def test_a_broken_file_is_listed_by_file_and_field_and_the_others_still_load(scenario, home):
    plan = plan_now(scenario)
    good = ia.save_run(make_run(plan, scenario, plan.option(plan.recommendation.primary), hours=30.0))
    data = yaml.safe_load(Path(good.path).read_text(encoding="utf-8"))
    data["actual"]["hours"] = -3
    (home / "actuals" / "bad-field.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    (home / "actuals" / "not-yaml.yaml").write_text("schema: [unclosed", encoding="utf-8")
    data["actual"] = {"hours": None}
    (home / "actuals" / "no-figure.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    runs, problems = ia.scan_actuals()
    assert [r.path for r in runs] == [good.path]
    assert len(problems) == 3
    text = "\n".join(problems)
    assert "bad-field.yaml: actual.hours: got -3" in text
    assert "not-yaml.yaml" in text
    assert "no-figure.yaml: actual" in text
    assert "Traceback" not in text


def test_save_refuses_a_run_without_any_figure(scenario, home):
    plan = plan_now(scenario)
    with pytest.raises(ia.InputError, match="at least one of step_time_s, hours, cost_usd"):
        ia.save_run(make_run(plan, scenario, plan.option(plan.recommendation.primary)))
    assert not (home / "actuals").exists()


# ---------------------------------------------------------------- measured points

def test_a_recorded_step_time_becomes_a_measured_point_the_plan_uses(scenario, home):
    plan = plan_now(scenario)
    option = one_gpu_option(plan)
    assert option.step.source.kind != "measured" or "recorded-" not in detail_en(option.step.source)
    actual_step = option.step.step_time_s * 1.37
    saved = ia.save_run(make_run(plan, scenario, option, step_time_s=actual_step, hours=50.0))
    assert saved.not_a_point is None and saved.measured_point
    point = Path(saved.measured_point)
    assert point.parent == home / "results" / option.gpu_id and point.name.startswith("recorded-")

    rf = read_result_file(point)  # the result-file schema's own reader accepts it
    m = rf.measurements[0]
    assert (m.source, m.status, m.precision, m.batch_size) == ("measured", "ok", option.precision, option.micro_batch)
    assert m.step_time_s.median == actual_step
    assert m.provenance.kind == "measured" and m.provenance.retrieved == DAY
    assert any("Recorded by hand on 2026-11-30" in w for w in rf.warnings)
    for name in NUMERIC_FIELDS:  # nothing unmeasured is written as 0: null, with the reason
        value = getattr(m, name)
        assert value is None and "recorded by hand" in m.unmeasured[name] or name == "samples_per_s"
    assert m.samples_per_s == pytest.approx(option.micro_batch / actual_step)

    after = plan_now(scenario).option(option.id)
    assert after.step.source.kind == "measured"
    assert point.name in detail_en(after.step.source)
    assert after.step.step_time_s == pytest.approx(actual_step, rel=1e-6)
    assert planjson.option_to_dict(after)["step_time_source"].startswith("measured")


@pytest.mark.parametrize("n_gpus,why", [(8, "multi_gpu")])
def test_a_multi_gpu_step_is_kept_with_the_run_but_not_made_a_one_gpu_point(scenario, home, n_gpus, why):
    plan = plan_now(scenario)
    option = next((plan.option(i) for i in ea.recordable(plan) if plan.option(i).n_gpus == n_gpus), None)
    assert option is not None, f"the default scenario (gpu_counts [1, 8]) has a recordable {n_gpus}-GPU option"
    saved = ia.save_run(make_run(plan, scenario, option, step_time_s=1.0))
    assert saved.measured_point is None and saved.not_a_point == why
    assert not (home / "results").exists()


def test_why_not_a_point_for_accumulation_and_a_result_file():
    base = ia.RecordedRun(DAY, "s", {}, ia.RunOption("a-x1-bf16", "a", 1, "bf16", 8, 32, grad_accum=4),
                          ia.RunModel("m", 10), ia.ActualFigures(step_time_s=1.0),
                          ia.Predicted("trainplan.plan/2", "0.1.0", DAY))
    assert ia.why_not_a_point(base) == "grad_accum"
    assert ia.why_not_a_point(replace(base, actual=ia.ActualFigures(step_time_s=1.0, step_time_from="result_file"))) \
        == "from_result_file"


# ---------------------------------------------------------------- CLI

def test_cli_actuals_list_prints_each_figure_with_its_error(scenario, home, capsys):
    plan = plan_now(scenario)
    option = plan.option(plan.recommendation.primary)
    ia.save_run(make_run(plan, scenario, option, hours=option.hours * 1.2))
    (home / "actuals" / "broken.yaml").write_text("schema: nope\n", encoding="utf-8")
    assert cli.run(["actuals", "list"]) == 0
    out, err = capsys.readouterr()
    assert option.id in out and "+20.0%" in out
    assert "broken.yaml: schema" in err


# ---------------------------------------------------------------- the Runs page

def _page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "ui" / "actuals_page.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [i.value for i in at.info]
    parts += [s.value for s in at.success] + [c.value for c in at.caption] + [w.value for w in at.warning]
    return "\n".join(parts).replace("\\", "")


def test_runs_page_saves_a_run_and_shows_its_error(scenario, home):
    plan = build_plan(scenario, load_inputs())
    at = _page()
    assert at.selectbox(key="act_option").value == plan.recommendation.primary  # defaults to the recommendation
    assert "No run recorded yet." in _texts(at)
    option = one_gpu_option(plan)
    at.selectbox(key="act_option").set_value(option.id)
    at.run()
    at.number_input(key="act_step").set_value(round(option.step.step_time_s * 1.25, 4))
    at.number_input(key="act_hours").set_value(round(option.hours * 0.9, 2))
    at.text_input(key="act_note").set_value("nightly job")
    at.button(key="act_save").click()
    at.run()
    assert not at.exception
    text = _texts(at)
    assert "Saved as" in text and "measured point (recorded run)" in text
    frames = [d.value for d in at.dataframe if "Step error (%)" in d.value.columns]
    assert len(frames) == 1
    row = frames[0].iloc[0]
    predicted = planjson.option_to_dict(option)
    assert row["Option"] == option.id and row["Note"] == "nightly job"
    assert row["Step error (%)"] == pytest.approx(100 * (round(option.step.step_time_s * 1.25, 4)
                                                         / predicted["step_time_s"] - 1), abs=1e-6)
    assert row["Hours error (%)"] == pytest.approx(100 * (round(option.hours * 0.9, 2) / predicted["hours"] - 1))
    assert row["Cost error (%)"] is None or math.isnan(row["Cost error (%)"])  # no cost recorded
    from tests.test_spanish_everywhere import missing_shown_as_words

    assert missing_shown_as_words(at) == []  # ... and the browser draws that missing cost as "—", not "None"
    assert row["Measured point"].startswith("recorded run: recorded-")
    runs, _ = ia.scan_actuals()
    assert len(runs) == 1 and runs[0].note == "nightly job"


def test_runs_page_takes_the_step_time_from_a_result_file_through_the_benchmarks_import(scenario, home):
    plan = build_plan(scenario, load_inputs())
    option = one_gpu_option(plan)
    file = result("resnet50", option.gpu_id, [measurement(option.precision, option.micro_batch, 0.321, None)],
                  created="2026-11-29T08:00:00Z")
    at = _page()
    at.selectbox(key="act_option").set_value(option.id)
    at.run()
    at.file_uploader(key="act_result_file").set_value(("run.json", json.dumps(file).encode(), "application/json"))
    at.run()
    at.button(key="act_save").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    runs, _ = ia.scan_actuals()
    assert runs[0].actual.step_time_s == 0.321 and runs[0].actual.step_time_from == "result_file"
    assert Path(runs[0].actual.result_file).parent == home / "results" / option.gpu_id  # imported, not copied here
    assert runs[0].not_a_point == "from_result_file"


@pytest.mark.parametrize("loc", ["es-AR", "es-MX"])
def test_runs_page_speaks_spanish_with_a_recorded_run(loc, scenario, home):
    from tests.test_spanish_everywhere import DECIMAL_COMMA, en_numbers, english_in, page_texts

    at = AppTest.from_file(str(ROOT / "ui" / "actuals_page.py"), default_timeout=120)
    at.session_state["_locale"] = loc
    at.session_state["_base"] = {**scenario_to_dict(scenario), "locale": loc}
    at.run()
    assert at.title[0].value == "Corridas: plan frente a lo real"
    assert "Todavía no hay corridas registradas." in _texts(at)
    at.number_input(key="act_step").set_value(0.1234)
    at.number_input(key="act_hours").set_value(1234.5)
    at.number_input(key="act_cost").set_value(2345.67)
    at.button(key="act_save").click()
    at.run()
    assert not at.exception and "Guardada como" in _texts(at)
    texts, tables = page_texts(at)
    problems = english_in(texts)
    if loc in DECIMAL_COMMA:
        problems += en_numbers(texts) + tables
    assert not problems, problems


def test_the_app_lists_the_runs_page_in_its_navigation(home):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    at.switch_page("ui/actuals_page.py")
    at.run()
    assert not at.exception and at.title[0].value == "Runs: plan against actual"


def test_a_recorded_step_time_is_a_calibration_point_labelled_recorded(scenario, home):
    """Issue 19: recorded runs become measured points the calibration uses, labelled as such
    (calibration/calibrate.py --include $TRAINPLAN_HOME/results); the committed fit stays the published corpus's."""
    import json

    plan = plan_now(scenario)
    option = one_gpu_option(plan)
    ia.save_run(make_run(plan, scenario, option, step_time_s=option.step.step_time_s * 1.2))
    from calibration import calibration_report as report

    results, problems = report.load_results([home / "results"])
    assert not problems
    points = report.load_points(results, report.corpus_inputs())
    recorded = [p for p in points if p.source == "recorded"]
    assert len(recorded) == 1
    p = recorded[0]
    assert (p.stack, p.gpu, p.precision, p.micro_batch, p.global_batch) == (
        "recorded", option.gpu_id, option.precision, option.micro_batch, option.micro_batch)
    assert p.published_s == pytest.approx(option.step.step_time_s * 1.2)
    assert p.optimizer == scenario.training.optimizer
    assert report.sample_of(p, report.corpus_inputs()) is not None  # the fit can read it

    from calibration import calibrate

    fitted = json.loads(calibrate.fitted_text("2026-12-02", [str(home / "results")]))
    committed = json.loads((ROOT / "planner" / "inputs" / "step_calibration.json").read_text(encoding="utf-8"))
    assert fitted["n_points"] == committed["n_points"] + 1
    assert "recorded" in fitted["sources"] and "recorded" not in committed["sources"]
    missing = report.load_results([home / "nowhere"])[1]
    assert missing and "no such file or folder" in missing[0]


# ---------------------------------------------------------------- recorded runs in the reports

def test_the_report_shows_this_models_recorded_runs_with_their_error_in_every_format(scenario, home):
    from pypdf import PdfReader

    from planner.present.report import render_report

    plan = plan_now(scenario)
    option = plan.option(plan.recommendation.primary)
    ia.save_run(make_run(plan, scenario, option, hours=option.cost.hours * 1.25, cost_usd=option.cost.usd * 0.8))
    other = replace(make_run(plan, scenario, option, hours=1.0), model=ia.RunModel("someone_elses_model", 1, None))
    runs, problems = ia.scan_actuals()
    assert not problems and len(runs) == 1
    md = render_report(plan, scenario, "markdown", locale="en", today=DAY, runs=(*runs, other))
    assert "### Plan against actual: recorded runs" in md
    assert "1 run(s) of" in md  # the other model's run is not counted
    assert "+25 %" in md and "-20 %" in md  # hours +25%, cost -20% (actual / predicted - 1)
    html = render_report(plan, scenario, "html", locale="en", today=DAY, runs=runs)
    assert 'class="recorded"' in html and "Inside the range" in html
    es = render_report(plan, scenario, "markdown", locale="es-AR", today=DAY, runs=runs)
    assert "Plan frente a lo real: corridas registradas" in es and "+25 %" in es
    pdf = render_report(plan, scenario, "pdf", locale="en", today=DAY, runs=runs)
    import io

    text = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages)
    assert "Plan against actual" in text
    # no runs (or --no-user-data): no such section
    assert "Plan against actual" not in render_report(plan, scenario, "markdown", locale="en", today=DAY)


def test_the_cli_report_reads_recorded_runs_unless_told_to_leave_user_data_out(scenario, home, capsys):
    plan = plan_now(scenario)
    option = plan.option(plan.recommendation.primary)
    ia.save_run(make_run(plan, scenario, option, hours=option.cost.hours * 1.5))
    assert cli.run([str(DEFAULT_SCENARIO), "--format", "markdown"]) == 0
    assert "Plan against actual" in capsys.readouterr().out
    assert cli.run([str(DEFAULT_SCENARIO), "--format", "markdown", "--no-user-data"]) == 0
    assert "Plan against actual" not in capsys.readouterr().out


def test_the_report_page_preview_shows_the_recorded_runs(scenario, home):
    plan = plan_now(scenario)
    option = plan.option(plan.recommendation.primary)
    ia.save_run(make_run(plan, scenario, option, hours=option.cost.hours * 1.1))
    at = AppTest.from_file(str(ROOT / "ui" / "report_page.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    html = "\n".join(str(h.proto.body) for h in at.get("html"))
    assert "Plan against actual" in html and "+10 %" in html
