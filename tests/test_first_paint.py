"""ui/plan_headline.let_the_browser_paint: the Plan page's first run in a session pauses once after the headline,
so a browser paints the decision's numbers before the rest of the page arrives (issue 19: cold load; measured by
perf/app_speed.py --browser); later runs, and runs with no browser behind them (AppTest), never pause. And the order
of a run: the first draws the plan before the sidebar, a rerun (a what-if) the sidebar before the plan, so the
browser re-renders the widgets while the server plans (issue 19: widget change)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from ui import plan_headline, sidebar

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def slept(monkeypatch):
    calls: list[float] = []
    monkeypatch.setattr(plan_headline, "time", SimpleNamespace(sleep=calls.append))
    return calls


def test_a_browser_session_pauses_once(monkeypatch, slept):
    monkeypatch.setattr(plan_headline.st, "context", SimpleNamespace(headers={"User-Agent": "Mozilla/5.0"}))
    session: dict = {}
    for _ in range(3):  # the first run, then widget changes
        plan_headline.let_the_browser_paint(session)
    assert slept == [plan_headline.FIRST_PAINT_PAUSE_S]


def test_no_browser_no_pause(monkeypatch, slept):
    monkeypatch.setattr(plan_headline.st, "context", SimpleNamespace(headers={}))
    session: dict = {}
    plan_headline.let_the_browser_paint(session)
    assert slept == []
    assert session[plan_headline.PAINTED_KEY]


def test_the_first_run_draws_the_plan_first_and_a_rerun_the_sidebar_first(monkeypatch):
    drawn: list[str] = []
    real_sidebar, real_headline = sidebar.render_sidebar, plan_headline.headline

    def sidebar_spy(*args, **kwargs):
        drawn.append("sidebar")
        return real_sidebar(*args, **kwargs)

    def headline_spy(*args, **kwargs):
        drawn.append("plan")
        return real_headline(*args, **kwargs)

    monkeypatch.setattr(sidebar, "render_sidebar", sidebar_spy)
    monkeypatch.setattr(plan_headline, "headline", headline_spy)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert drawn == ["plan", "sidebar"]
    drawn.clear()
    at.number_input(key="epochs").set_value(45).run()
    assert not at.exception, [e.value for e in at.exception]
    assert drawn == ["sidebar", "plan"]
