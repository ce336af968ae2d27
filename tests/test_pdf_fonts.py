"""PDF text in scripts the shipped DejaVu Sans lacks (CJK): drawn with a system font found at run time, else named
on page 1 and in the CLI's warning with what to install (issue 34)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from pypdf import PdfReader

from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import dump_scenario_yaml, load_scenario_file
from planner.present.i18n import t
from planner.present.report import system_fonts
from planner.present.report.model import build_report_model
from planner.present.report.pdf import render_pdf

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "resnet50-imagenet.yaml"
TODAY = dt.date(2026, 11, 29)
CJK_NAME = "训练计划 ResNet-50 日本語 한국어"
CJK = {ord(c) for c in CJK_NAME if ord(c) > 0x2E80}


@pytest.fixture(scope="module")
def cjk():
    inputs = load_inputs(include_user_data=False)
    s = dataclasses.replace(load_scenario_file(DEFAULT, known_gpu_ids=inputs.profiles), name=CJK_NAME)
    return s, build_plan(s, inputs, today=TODAY)


def rendered(cjk, locale: str = "en", **kwargs) -> tuple[str, list[warnings.WarningMessage]]:
    s, p = cjk
    model = build_report_model(p, s, locale, today=TODAY, with_charts=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = render_pdf(model, **kwargs)
    text = "\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages)
    return text, [w for w in caught if issubclass(w.category, system_fonts.MissingGlyphs)]


def _cjk_font_listing() -> str:
    if not system_fonts.shutil.which("fc-list"):
        return "(no fc-list)"
    listed = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, check=False).stdout
    return listed.strip() or "empty"


# The README's test command (scripts/test.sh) installs fonts-wqy-microhei, so under CI the check always runs and a
# missing font fails it; a developer's machine without any CJK font skips it, as one without chromium skips the
# browser tests.
NO_CJK_FONT = bool(system_fonts.find_fonts(CJK).missing)


@pytest.mark.skipif(NO_CJK_FONT and not os.environ.get("CI"),
                    reason="no CJK font on this machine (fc-list :lang=zh is empty); scripts/test.sh installs "
                           "fonts-wqy-microhei")
def test_a_cjk_name_is_drawn_with_a_system_font(cjk):
    found = system_fonts.find_fonts(CJK)
    assert not found.missing, f"no font draws {CJK_NAME!r} (fc-list :lang=zh: {_cjk_font_listing()})"
    text, missing = rendered(cjk)
    assert "训练计划" in text and "日本語" in text and "한국어" in text
    assert not missing and t("report.pdf_fonts.title") not in text


@pytest.mark.parametrize("locale", ["en", "es"])
def test_with_no_font_found_the_pdf_and_a_warning_name_the_missing_characters(cjk, tmp_path, locale):
    text, missing = rendered(cjk, locale, font_dirs=[tmp_path])  # an empty folder: no font draws them
    assert t("report.pdf_fonts.title", locale) in text
    assert "U+5212" in text and str(tmp_path) in text.replace("\n", "")
    assert len(missing) == 1 and "fonts-noto-cjk" in str(missing[0].message)
    listed = ", ".join(f"U+{c:04X}" for c in sorted(CJK)[:8]) + "…"  # 10 characters: the first 8 named
    assert str(missing[0].message) == t("report.pdf_fonts.missing", locale, n=len(CJK), chars=listed,
                                        searched=str(tmp_path))


def test_a_latin_report_searches_no_font(cjk, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("searched for system fonts although DejaVu Sans draws every character")

    monkeypatch.setattr(system_fonts, "find_fonts", refuse)
    s, p = cjk
    model = build_report_model(p, dataclasses.replace(s, name="Plan de entrenamiento: ñandú, €, ×, ≤, Ωμ"), "es",
                               today=TODAY, with_charts=False)
    assert render_pdf(model).startswith(b"%PDF")


def test_a_font_folder_is_searched_for_the_characters(tmp_path):
    """The folder scan (no fontconfig, or $TRAINPLAN_FONT_DIRS) reads the font files it finds: DejaVu draws 'é'."""
    shipped = ROOT / "planner" / "present" / "report" / "fonts"
    found = system_fonts.find_fonts({ord("é"), ord("中")}, dirs=[shipped, tmp_path])
    assert [f.path.name for f in found.fonts] == ["DejaVuSans.ttf"] and found.fonts[0].codepoints == {ord("é")}
    assert found.missing == {ord("中")} and str(shipped) in found.searched


def test_the_cli_warns_when_a_pdf_lacks_characters(cjk, tmp_path):
    scenario = tmp_path / "cjk.yaml"
    scenario.write_text(dump_scenario_yaml(cjk[0]), encoding="utf-8")
    out = tmp_path / "cjk.pdf"
    env = {**os.environ, system_fonts.FONT_DIRS_ENV: str(tmp_path / "no-fonts"), "TRAINPLAN_HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, "-m", "planner", str(scenario), "--format", "pdf", "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"warning: {CJK_NAME}: " in run.stderr and "U+5212" in run.stderr and "fonts-noto-cjk" in run.stderr
    assert out.read_bytes().startswith(b"%PDF")
