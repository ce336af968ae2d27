"""Every page of the app in English and in Spanish (es-AR), 1,400 px wide, plus page 1 of the PDF report in both.

For a person to look at: test-artifacts/screens/<locale>-<page>.png (the whole page and sidebar in one picture)
and <locale>-report-page1.png (the Report page's own PDF download, page 1 at 80 dpi through poppler's pdftoppm).
Each page must render without a Streamlit exception or error box; the Spanish ones must have Spanish headings and
no label, heading, button or tab that is an English catalog text.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.browser_support import NEEDS_BROWSER, no_exception, settle

# Every page once, some cold (the first Report render draws its charts): a longer wait, and time for charts to paint.
settle_cold = partial(settle, timeout_ms=120_000, paint_ms=800)

ROOT = Path(__file__).resolve().parent.parent
SCREENS = ROOT / "test-artifacts" / "screens"
WIDTH = 1400
MAX_HEIGHT = 16_000  # chromium draws a screenshot of at most 16,384 px
LOCALES = ("en", "es-AR")

# url path -> (navigation title key, h1 key; None: the Plan page's h1 is the scenario's name). ui/app_main.py's
# list of pages is checked against this one, so a new page needs a screenshot too.
PAGES = {
    "plan": ("app.nav.plan", None),
    "compare": ("app.nav.compare", "pages.compare.title"),
    "benchmarks": ("app.nav.benchmarks", "pages.bench.title"),
    "gpus": ("app.nav.gpus", "pages.gpus.title"),
    "report": ("app.nav.report", "report.page.title"),
    "runs": ("app.nav.runs", "actuals.page.title"),
}

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]


from playwright.sync_api import Page, expect  # noqa: E402

from planner.present.i18n import catalog, t  # noqa: E402
from planner.vocab import UPLOAD_MAX_MB  # noqa: E402


@pytest.fixture(scope="module")
def app_url(fresh_app_url):
    return fresh_app_url


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _healthy(page: Page) -> None:
    no_exception(page)
    errors = page.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, errors.all_inner_texts()


def _english_only() -> set[str]:
    """Catalog texts that are English only: the Spanish catalog has another text for the same key."""
    es = catalog("es")
    return {text for key, text in catalog("en").items()
            if "{" not in text and len(text) > 3 and es.get(key) not in (None, text)}


_LABELS = ('h1, h2, h3, [data-testid="stWidgetLabel"], [data-testid="stSidebarNav"] span, button, [role="tab"], '
           '[data-testid="stExpander"] summary, [data-testid="stMetricLabel"], th')


def _english_left(page: Page) -> list[str]:
    texts = page.locator(_LABELS).evaluate_all("els => els.map(e => e.innerText.trim())")
    english = _english_only()
    return sorted({x for x in texts if x in english})


# Streamlit's own uploader words as drawn (ui/i18n_ui.file_uploader swaps them by style in Spanish), written out
# here rather than read from the catalog: the test must fail if the catalog or the style says something else.
UPLOADER_WORDS = {"en": ("Upload", f"{UPLOAD_MAX_MB}MB per file • JSON"),
                  "es-AR": ("Subir archivo", f"{UPLOAD_MAX_MB} MB por archivo • JSON")}
_LIMIT_SHOWN_JS = """box => {
  const span = box.querySelector('[data-testid="stFileUploaderDropzoneInstructions"] span');
  if (getComputedStyle(span).display !== 'none') return span.innerText.trim();
  return JSON.parse(getComputedStyle(span.parentElement, '::after').content);
}"""


def _uploader_words(page: Page, loc: str) -> None:
    """The Runs page's uploader: its button named (accessible name = what is drawn) and its size limit written in
    the interface language."""
    button, limit = UPLOADER_WORDS[loc]
    box = page.locator(".st-key-act_result_file")
    expect(box.get_by_role("button", name=button, exact=True)).to_be_visible()
    assert box.evaluate(_LIMIT_SHOWN_JS) == limit


def _shoot(page: Page, path: Path) -> None:
    """The whole page and the sidebar in one picture: the viewport is made as tall as the taller of the two."""
    measure = """() => Math.max(...['stMain', 'stSidebarContent'].map(id => {
        const el = document.querySelector(`[data-testid="${id}"]`); return el ? el.scrollHeight : 0; }))"""
    height = page.evaluate(measure)
    for _ in range(20):  # the report preview (st.html) and charts grow after the run ends: wait until it stops
        page.wait_for_timeout(400)
        now = page.evaluate(measure)
        if now == height:
            break
        height = now
    page.set_viewport_size({"width": WIDTH, "height": max(900, min(MAX_HEIGHT, height + 40))})
    settle_cold(page)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": WIDTH, "height": 1000})


def _to_spanish(page: Page) -> None:
    page.get_by_text("Español", exact=True).click()
    expect(page.get_by_text("Recomendación:").first).to_be_visible(timeout=60_000)
    settle_cold(page)
    box = page.get_by_role("combobox", name=t("app.sidebar.locale", "es"))
    box.click()
    page.get_by_role("option", name=re.compile(r"^es-AR ")).click()
    expect(box).to_have_value(re.compile(r"^es-AR\b"), timeout=60_000)
    settle_cold(page)


def _report_pdf_page1(page: Page, loc: str) -> tuple[Path, str]:
    """Download the PDF from the Report page (the button a user clicks) and draw its page 1 with pdftoppm."""
    pdf = SCREENS / f"{loc}-report.pdf"
    with page.expect_download(timeout=180_000) as info:
        page.get_by_role("button", name=t("report.page.pdf", loc)).click()
    info.value.save_as(pdf)
    assert pdf.read_bytes()[:5] == b"%PDF-", pdf
    stem = SCREENS / f"{loc}-report-page1"
    subprocess.run(["pdftoppm", "-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile", str(pdf), str(stem)],
                   check=True, timeout=120)
    text = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-layout", str(pdf), "-"], check=True,
                          capture_output=True, text=True, timeout=120).stdout
    return stem.with_suffix(".png"), text


def test_the_page_list_is_the_apps():
    source = (ROOT / "ui" / "app_main.py").read_text(encoding="utf-8")
    assert set(re.findall(r'url_path="([\w-]+)"', source)) == set(PAGES)


@pytest.mark.parametrize("loc", LOCALES)
def test_every_page_and_the_report_in(loc, browser, app_url):
    assert shutil.which("pdftoppm"), "pdftoppm not found: install Debian's poppler-utils (scripts/test.sh does)"
    SCREENS.mkdir(parents=True, exist_ok=True)
    for old in SCREENS.glob(f"{loc}-*"):
        old.unlink()
    context = browser.new_context(viewport={"width": WIDTH, "height": 1000})
    page = context.new_page()
    problems: list[str] = []
    try:
        page.goto(app_url)
        page.wait_for_selector('[data-testid="stMetric"]', timeout=90_000)
        settle_cold(page)
        if loc != "en":
            _to_spanish(page)
        nav = page.locator('[data-testid="stSidebarNav"]')
        for name, (nav_key, title_key) in PAGES.items():
            if name != "plan":
                nav.get_by_text(t(nav_key, loc), exact=True).click()
            if title_key:
                expect(page.get_by_role("heading", name=t(title_key, loc), level=1)).to_be_visible(timeout=90_000)
            else:
                expect(page.get_by_role("heading", name=t("app.chart.memory_title", loc))).to_be_visible(
                    timeout=90_000)
                expect(page.get_by_text(t("summary.headline", loc, option="")).first).to_be_visible()
                hours = page.locator('[data-testid="stMetric"]').filter(has_text=t("app.metric.hours", loc)).first
                decimal = r"\d+\.\d h" if loc == "en" else r"\d+,\d h"  # 28.7 h / 28,7 h
                expect(hours.locator('[data-testid="stMetricValue"]')).to_have_text(re.compile(f"^{decimal}$"))
            settle_cold(page)
            if name == "report" and loc != "en":  # the report's language is the scenario's: pick es-AR
                box = page.get_by_role("combobox", name=t("report.page.locale", loc))
                box.click()
                page.get_by_role("option", name=re.compile(r"· es-AR$")).click()
                expect(box).to_have_value(re.compile(r"es-AR$"), timeout=60_000)
                expect(page.get_by_text(t("report.title", loc)).first).to_be_visible(timeout=60_000)
                settle_cold(page)
            _healthy(page)
            if name == "runs":
                _uploader_words(page, loc)
            # every nav entry is in the interface language
            for key, _ in PAGES.values():
                expect(nav.get_by_text(t(key, loc), exact=True)).to_have_count(1)
            left = _english_left(page)
            if loc == "en":  # the check below reads the page: here it must find the English labels
                assert left, f"{name}: no English catalog text found on the English page"
            else:
                if title_key:
                    assert t(title_key, loc) != t(title_key, "en")
                if left:
                    problems.append(f"{name}: English text on the Spanish page: {left}")
            shot = SCREENS / f"{loc}-{name}.png"
            _shoot(page, shot)
            width, height = png_size(shot)
            assert width == WIDTH, (shot, width)
            assert height >= 900 and shot.stat().st_size > 40_000, (shot, height, shot.stat().st_size)
            if name == "report":
                png, text = _report_pdf_page1(page, loc)
                width, height = png_size(png)
                assert 600 < width < 700 and 800 < height < 950, (png, width, height)  # A4 or Letter at 80 dpi
                assert png.stat().st_size > 20_000, png
                for key in ("report.title", "report.section.summary", "report.kf.recommendation"):  # (title: caps)
                    assert t(key, loc).casefold() in text.casefold(), f"{key}: {t(key, loc)!r} not on page 1 ({loc})"
                if loc != "en":
                    assert t("report.section.summary", "en").casefold() not in text.casefold()
    finally:
        context.close()
    assert not problems, "\n".join(problems)
    written = sorted(p.name for p in SCREENS.glob(f"{loc}-*.png"))
    assert written == sorted([f"{loc}-{name}.png" for name in PAGES] + [f"{loc}-report-page1.png"])
