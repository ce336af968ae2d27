"""The app and the report say the same thing in the same words: one plan view-model (planner/present/viewmodel.py)
feeds both. Checked on every shipped scenario, in English and Spanish, on the rendered app (AppTest) and the
rendered report (Markdown and HTML)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file
from planner.present.report import render_report
from planner.present.viewmodel import plan_view
from ui import url_codec

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _no_user_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))


def _unescape_markdown(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text).replace("**", "")


def _app_text(scenario) -> str:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.query_params["s"] = url_codec.encode_scenario(scenario)
    at.session_state["_locale"] = scenario.locale  # the user's UI language: a link no longer sets it
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    parts = [m.value for m in at.markdown] + [s.value for s in at.subheader] + [e.value for e in at.error]
    parts += [w.value for w in at.warning] + [i.value for i in at.info]
    return _unescape_markdown("\n".join(parts))


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_app_and_report_carry_the_same_decision_sentences(path, lang):
    inputs = load_inputs(include_user_data=False)
    scenario = dataclasses.replace(load_scenario_file(path, known_gpu_ids=inputs.profiles), locale=lang)
    today = dt.date.today()  # the app plans with today's date: stale-price notes must agree
    plan = build_plan(scenario, inputs, today=today)
    view = plan_view(plan, scenario, lang)
    sentences = [view.headline, view.setting, view.deadline, view.budget, view.reason, view.runner]
    sentences = [s for s in sentences if s]
    assert len(sentences) == 6, "every shipped scenario has a recommendation"
    app = _app_text(scenario)
    markdown = _unescape_markdown(str(render_report(plan, scenario, "markdown", locale=lang, today=today)))
    report_html = html.unescape(re.sub(r"<[^>]+>", "", str(render_report(plan, scenario, "html", locale=lang,
                                                                          today=today))))
    for sentence in sentences[1:]:  # the headline is the app's title; the report leads with the setting sentence
        assert sentence in app, f"app lacks: {sentence}"
        assert sentence in markdown, f"markdown report lacks: {sentence}"
        assert sentence in report_html, f"HTML report lacks: {sentence}"
    assert view.headline in app
    if view.runner_up is not None:  # the trade-off inside the runner-up sentence, worded once
        trade = re.search(r"[0-9][0-9.,]*× [^(]+ [0-9][0-9.,]*× [^(,]+", view.runner)
        assert trade and trade.group(0) in app and trade.group(0) in markdown
