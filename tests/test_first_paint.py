"""ui/plan_headline.let_the_browser_paint: the Plan page's first run in a session pauses once after the headline,
so a browser paints the decision's numbers before the rest of the page arrives (issue 19: cold load; measured by
perf/app_speed.py --browser); later runs, and runs with no browser behind them (AppTest), never pause."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ui import plan_headline


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
