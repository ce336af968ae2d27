"""planner/present/report/fpdf_speed.py: fpdf2's line widths from kept sums give fpdf2's own PDFs, byte for byte."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

import fpdf
import pytest
from fpdf import FPDF, line_break

from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file
from planner.present.report import fpdf_speed, render_report
from planner.present.report.pdf import FONTS_DIR

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
TODAY = dt.date(2026, 11, 29)


@pytest.fixture
def fpdf_own():
    """fpdf2's CurrentLine.width for the body of a test, the kept sums again after it."""
    fpdf_speed.uninstall()
    yield
    fpdf_speed.install()


def _without_creation_date(pdf: bytes) -> bytes:
    """The PDF less its creation time and the file ID fpdf2 derives from it (two renders a second apart)."""
    return re.sub(rb"/ID \[<[0-9A-F]+><[0-9A-F]+>\]", b"", re.sub(rb"/CreationDate \(D:\d+Z?\)", b"", pdf))


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
@pytest.mark.parametrize("locale", ["en", "es-AR"])
def test_every_shipped_report_is_fpdf2s_own_byte_for_byte(inputs, path, locale):
    scenario = load_scenario_file(path, known_gpu_ids=inputs.profiles)
    plan = build_plan(scenario, inputs, today=TODAY)
    fpdf_speed.install()
    assert isinstance(line_break.CurrentLine.width, property) and line_break.CurrentLine.width.fget is \
        fpdf_speed._width, "the report renders with the kept sums (fpdf2 is the pinned version)"
    fast = render_report(plan, scenario, "pdf", locale=locale, all_options=locale == "en", today=TODAY)
    fpdf_speed.uninstall()
    try:
        own = render_report(plan, scenario, "pdf", locale=locale, all_options=locale == "en", today=TODAY)
    finally:
        fpdf_speed.install()
    assert isinstance(fast, bytes) and isinstance(own, bytes)
    assert _without_creation_date(fast) == _without_creation_date(own)


def _line(text: str, size: float) -> tuple[line_break.CurrentLine, line_break.Fragment]:
    pdf = FPDF(unit="mm")
    pdf.add_font("DejaVu", "", str(FONTS_DIR / "DejaVuSans.ttf"))
    pdf.add_page()
    pdf.set_font("DejaVu", "", size)
    fragment = line_break.Fragment(text, pdf._get_current_graphics_state(), pdf.k)
    return line_break.CurrentLine(max_width=1e9), fragment


def test_widths_follow_appends_and_trims_exactly():
    """Grow a line character by character, trim it as fpdf2's break hints do, grow it again: every width is
    fpdf2's own to the last bit (the kept sum is dropped when the characters list is replaced)."""
    rng = random.Random(7)
    text = "".join(rng.choice("aéñW ÁiM.,—·≈0123") for _ in range(300))
    line, source = _line(text, 9.5)
    fpdf_speed.install()
    seen = 0
    for i, ch in enumerate(text):
        line.add_character(ch, 0.0, source, 0, i, 5.0)
        if i % 37 == 36:  # trimmed to a new, shorter list, then grown past its old length before measuring
            line.fragments[-1].trim(len(line.fragments[-1].characters) - 3)
            for extra in "WWWWW":
                line.add_character(extra, 0.0, source, 0, i, 5.0)
        fast = line.width
        fpdf_speed.uninstall()
        try:
            own = line.width
        finally:
            fpdf_speed.install()
        assert fast == own, (i, fast, own)
        seen += 1
    assert seen == len(text)


def test_fragments_it_does_not_cover_are_measured_by_fpdf2(monkeypatch):
    line, source = _line("spaced out", 10)
    for i, ch in enumerate("spaced out"):
        line.add_character(ch, 0.0, source, 0, i, 5.0)
    fragment = line.fragments[0]
    calls = []
    original = line_break.Fragment.get_width
    monkeypatch.setattr(line_break.Fragment, "get_width",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    fpdf_speed.install()
    plain = line.width
    assert not calls, "plain text: from the kept sum"
    fragment.graphics_state.char_spacing = 1.5
    spaced = line.width
    assert calls and spaced > plain


def test_another_fpdf2_version_keeps_its_own_widths(fpdf_own, monkeypatch):
    monkeypatch.setattr(fpdf, "__version__", "9.9.9")
    fpdf_speed.install()
    assert line_break.CurrentLine.width is fpdf_speed._fpdf_width
