"""The Plan page and the report as engineers and managers use them (issue 19): the scenario gallery and its presets,
the warnings that bear on the decision (one owner: the view-model), the options table's decision-first layout and
filters, upload and clamping messages at the top of the page."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file, scenario_to_dict
from planner.inputs.userdata import DEFAULT_SCENARIO, SHIPPED_SCENARIOS_DIR
from planner.present.report.markdown import render_markdown
from planner.present.report.model import build_report_model
from planner.present.viewmodel import plan_view
from ui import panels, scenario_files, sidebar, state, url_codec

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PRESETS = sorted((ROOT / "scenarios" / "presets").glob("*.yaml"))
TODAY = dt.date(2026, 12, 1)


@pytest.fixture(autouse=True)
def _no_user_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


def fresh(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    panels.open_panels(at.session_state, sidebar.FILE_PANEL)  # the "Scenario file" section, for its uploader
    if query:
        at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    parts += [s.value for s in at.success] + [c.value for c in at.caption]
    return "\n".join(parts).replace("\\", "")


# ---------------------------------------------------------------- presets and the gallery

def test_the_issue_asks_for_these_presets():
    stems = {p.stem for p in PRESETS}
    assert {"llama3-8b-full-finetune-zero3-8gpu", "llama2-7b-lora-24gb", "vit-b16-imagenet"} <= stems


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.name)
def test_every_preset_plans_and_cites_its_figures(path, inputs):
    s = load_scenario_file(path, list(inputs.profiles))
    plan = build_plan(s, inputs, today=TODAY)
    assert plan.recommendation.primary is not None, f"{path.name}: nothing recommended"
    assert plan_view(plan, s, "en", TODAY).headline and plan_view(plan, s, "es", TODAY).headline
    comments = [line for line in path.read_text(encoding="utf-8").splitlines() if "#" in line]
    assert len(comments) >= 4, f"{path.name}: cite every figure in comments, as the shipped scenarios do"


def test_presets_are_what_they_say(inputs):
    by = {p.stem: load_scenario_file(p, list(inputs.profiles)) for p in PRESETS}
    full = by["llama3-8b-full-finetune-zero3-8gpu"]
    assert (full.model.name, full.training.sharding, full.hardware.gpu_counts) == ("llama3_8b", "zero3", (8,))
    lora = by["llama2-7b-lora-24gb"]
    assert lora.training.adapter is not None and lora.training.adapter.kind == "lora"
    qlora = load_scenario_file(SHIPPED_SCENARIOS_DIR / "llama7b-qlora-24gb.yaml")
    assert scenario_to_dict(lora)["workload"] == scenario_to_dict(qlora)["workload"]  # the same Alpaca block
    assert by["vit-b16-imagenet"].model.name == "vit_b16"


def test_gallery_lists_shipped_scenarios_and_presets_llms_first():
    items = scenario_files.gallery(SHIPPED_SCENARIOS_DIR)
    paths = {Path(e.path) for e in items}
    assert set(SHIPPED_SCENARIOS_DIR.glob("*.yaml")) | set(PRESETS) == paths
    assert Path(items[0].path).stem == "llama3-8b-full-finetune-zero3-8gpu"
    assert {e.kind for e in items} == {"shipped", "preset"}
    assert scenario_files.example_names(SHIPPED_SCENARIOS_DIR) == {e.path: e.name for e in items}


def test_one_click_in_the_gallery_loads_a_preset():
    at = fresh()
    lora = str(ROOT / "scenarios" / "presets" / "llama2-7b-lora-24gb.yaml")
    at.pills(key="gallery").set_value(lora).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="model_name").value == "llama2_7b"
    assert at.selectbox(key="adapter_kind").value == "lora"
    assert at.pills(key="gallery").value is None  # a start, not a lasting choice
    assert "Loaded the example" in _text(at)


# ---------------------------------------------------------------- warnings where decisions are made

def _missed(inputs):
    base = load_scenario_file(DEFAULT_SCENARIO)
    s = dataclasses.replace(base, constraints=dataclasses.replace(base.constraints, deadline_hours=0.5,
                                                                  budget_usd=1.0))
    return s, build_plan(s, inputs, today=TODAY)


def test_missed_deadline_and_budget_are_warnings_in_both_languages(inputs):
    s, plan = _missed(inputs)
    en = plan_view(plan, s, "en", TODAY).warnings
    assert any(w.startswith("Deadline missed") for w in en) and any(w.startswith("Over budget") for w in en)
    es = plan_view(plan, s, "es-AR", TODAY).warnings
    assert any(w.startswith("Plazo incumplido") for w in es) and any(w.startswith("Fuera de presupuesto") for w in es)


def test_plan_page_never_says_nothing_to_warn_about_when_the_deadline_and_budget_are_missed(inputs):
    s, _ = _missed(inputs)
    at = fresh({url_codec.URL_PARAM: url_codec.encode_scenario(s)})
    box = next(w.value for w in at.warning if "Check before deciding" in w.value).replace("\\", "")
    assert "Deadline missed" in box and "Over budget" in box
    assert "Nothing to warn about" not in _text(at)


def test_formula_only_caveat_and_stale_quote_are_on_page_one(inputs):
    """The LLM scenario's step time is a formula: the caveat sits under the key figures, before the options."""
    s = load_scenario_file(SHIPPED_SCENARIOS_DIR / "llama7b-full-finetune.yaml")
    plan = build_plan(s, inputs, today=TODAY)
    model = build_report_model(plan, s, "en", today=TODAY, with_charts=False)
    assert model.attention == plan_view(plan, s, "en", TODAY).warnings  # one owner for app and report
    assert any("from a formula only" in w for w in model.attention)
    text = render_markdown(model)
    assert text.index("Check before deciding") < text.index("## 2. Options")
    later = dt.date(2028, 1, 1)  # every published quote is then over 180 days old
    stale = build_report_model(plan, s, "es", today=later, with_charts=False)
    assert any(w.startswith("Precio viejo") for w in stale.attention)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils' pdftotext")
def test_pdf_page_one_carries_the_warnings(inputs, tmp_path):
    from planner.present.report import render_report

    s = load_scenario_file(SHIPPED_SCENARIOS_DIR / "llama7b-full-finetune.yaml")
    plan = build_plan(s, inputs, today=TODAY)
    pdf = tmp_path / "r.pdf"
    data = render_report(plan, s, "pdf", locale="en", today=TODAY)
    pdf.write_bytes(data if isinstance(data, bytes) else data.encode())
    first = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"], capture_output=True, text=True,
                           check=True).stdout
    assert "Check before deciding" in first and "formula only" in re.sub(r"\s+", " ", first)


# ---------------------------------------------------------------- the options table

def test_table_puts_the_decision_first_and_pins_the_picks():
    at = fresh()
    df = at.dataframe[0].value
    assert list(df.columns[:11]) == ["Pick", "GPU", "GPUs (count)", "Precision", "Fits", "Hours (h)",
                                     "Hours range (h)", "Cost (USD)", "Cost range (USD)", "GPU-hours (GPU·h)",
                                     "Sources"]
    assert all(len(x) < 40 for x in df["Sources"])  # compact labels; the full text is in the details
    picks = list(df["Pick"][:2])
    assert picks == ["recommended", "runner-up"]
    at.multiselect(key="table_families").set_value(["T4"]).run()
    narrowed = at.dataframe[0].value
    assert list(narrowed["Pick"][:2]) == picks  # pinned whatever the filters
    assert set(narrowed["GPU"][2:]) <= {"NVIDIA T4 16GB"} and len(narrowed) < len(df)


def test_within_deadline_and_budget_filters(inputs):
    at = fresh()
    every = at.dataframe[0].value
    at.checkbox(key="table_within_budget").check().run()
    cheap = at.dataframe[0].value
    assert len(cheap) < len(every) and (cheap["Cost (USD)"][2:] <= 1000).all()
    at.checkbox(key="table_within_deadline").check().run()
    assert not at.exception and len(at.dataframe[0].value) <= len(cheap)


# ---------------------------------------------------------------- uploads, links and clamped values

def test_a_large_upload_is_an_error_box_at_the_top():
    at = fresh()
    at.file_uploader(key="upload").set_value(("big.yaml", b"#" * (5 * 1024 * 1024), "application/x-yaml")).run()
    [box] = at.main.error
    assert "could not be used" in box.value and "big.yaml" in box.value.replace("\\", "")


def test_a_file_value_outside_a_field_is_refused_not_clamped():
    """The file and the field have one bound (planner/inputs/fields.py): 0.005 epochs, once read and clamped to the
    field's 0.01, is refused with the bound, and the scenario stays as it was."""
    text = DEFAULT_SCENARIO.read_text().replace("epochs: 90", "epochs: 0.005")
    at = fresh()
    at.file_uploader(key="upload").set_value(("far.yaml", text.encode(), "application/x-yaml")).run()
    [box] = at.main.error
    error = box.value.replace("\\", "")
    assert "far.yaml" in error and "workload.epochs" in error and "between 0.01 and 1e6" in error, error
    assert at.number_input(key="epochs").value == 90
    assert not at.warning or "outside what the app's fields accept" not in " ".join(w.value for w in at.warning)


def test_clamped_values_are_named_in_the_page_in_english_and_spanish():
    """A scenario mapping outside a field's bounds (a caller of to_widgets that did not read it through the
    parser) is clamped to the field's bound and named on the page in the interface's language."""
    clamped: list = []
    d = scenario_to_dict(load_scenario_file(DEFAULT_SCENARIO))
    d["constraints"] = {"deadline_hours": 5e7}
    values = state.to_widgets(d, clamped)
    assert values["deadline_hours"] == state.BOUNDS["deadline_hours"][1] == 1e7
    assert clamped == [("deadline_hours", 5e7, 1e7)]
    for lang, words in (("en", "outside what the app's fields accept"), ("es", "fuera de lo que aceptan")):
        at = fresh()
        at.radio(key="ui_lang").set_value(lang).run()
        at.session_state[state.CLAMPED_KEY] = clamped
        at.run()
        warned = " ".join(w.value for w in at.warning).replace("\\", "")
        assert words in warned and "(deadline_hours)" in warned, warned


def test_the_plan_page_says_which_stack_it_plans_for_and_the_rate_per_gpu_in_english_and_spanish():
    """Issue 32 b: 'planned for: <stack>' near the headline, with the recommended option's samples (or tokens) per
    second per GPU and MFU; choosing a stack in the sidebar names it and drops 'the default for ...'."""
    at = fresh()
    text = _text(at)
    assert "Planned for: PyTorch, eager (plain training loop) — the default for this model family" in text, text
    assert "samples/s at" in text and "MFU" in text
    at.selectbox(key="stack").set_value("torch_compile").run()
    assert not at.exception
    text = _text(at)
    assert "Planned for: PyTorch with torch.compile." in text and "the default for this model family" not in text
    at.radio(key="ui_lang").set_value("es").run()
    text = _text(at)
    assert "Planificado para: PyTorch con torch.compile." in text, text
    assert "ejemplos/s con un MFU de" in text
