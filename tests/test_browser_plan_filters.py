"""The Plan page's options table and scenario gallery in a real browser (Debian chromium + Playwright).

The table is read from the DOM: Streamlit's dataframe (glide-data-grid) draws on a canvas and keeps an accessible
<table role="grid"> of the rows in view, so the grid is opened full screen and scrolled from top to bottom and every
row is collected. (That table holds the raw cell values: number columns read 28.71 in every locale, so the number
format is checked on the text columns, the hours and cost ranges.) Each filter is checked against the unfiltered
table: what it keeps is exactly the rows that pass it (plus the pinned picks), and what it drops all fail it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from planner.present import fmt
from tests.browser_support import NEEDS_BROWSER, no_exception, settle

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1400, "height": 2400}

# The shipped default scenario (scenarios/resnet50-imagenet.yaml): every GPU x {1, 8} x 4 precisions,
# a 48 h deadline (checked at p90: the range's high end) and a 1,000 USD budget.
DEADLINE_H = 48.0
BUDGET_USD = 1000.0
LORA_PRESET = "7B decoder LoRA on one 24 GB card"      # scenarios/presets/llama2-7b-lora-24gb.yaml (locale: en)
QLORA_ES_AR = "7B decoder QLoRA on one 24 GB card"     # scenarios/llama7b-qlora-24gb.yaml (locale: es-AR)
DEFAULT_TITLE = "ResNet-50 on ImageNet-1k (90 epochs)"

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]


from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture(scope="module")
def app_url(fresh_app_url):
    return fresh_app_url


@pytest.fixture
def page(browser) -> Page:
    context = browser.new_context(viewport=VIEWPORT)
    p = context.new_page()
    yield p
    context.close()


@pytest.fixture(scope="module")
def default_page(browser, app_url) -> Page:
    """One session on the default scenario, shared by the table tests (each leaves the filters as it found them)."""
    context = browser.new_context(viewport=VIEWPORT)
    p = context.new_page()
    _open(p, app_url)
    yield p
    context.close()


@pytest.fixture(scope="module")
def everything(default_page) -> list:
    """The unfiltered options table of the default scenario, every row."""
    return table_rows(default_page)


@pytest.fixture
def table_page(default_page, app_url, everything) -> Page:
    """The shared session with no filter on; a test that failed half-way gets a fresh session for the next."""
    if shown_of_total(default_page) != (len(everything), len(everything)):
        _open(default_page, app_url)
    assert shown_of_total(default_page) == (len(everything), len(everything))
    return default_page


# ---------------------------------------------------------------- reading the page

# Scroll the grid from top to bottom; after each step wait until the accessible table shows other rows.
_READ_GRID = """async (el) => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const sc = el.querySelector('.dvn-scroller');
  const first = () => { const tr = el.querySelector('table[role=grid] tbody tr[role=row]');
                        return tr ? tr.getAttribute('aria-rowindex') : null; };
  const rows = {};
  const grab = () => { for (const tr of el.querySelectorAll('table[role=grid] tbody tr[role=row]'))
      rows[tr.getAttribute('aria-rowindex')] = Array.from(tr.querySelectorAll('td')).map(td => td.textContent); };
  const go = async (top) => { const was = first(); sc.scrollTop = top;
      for (let i = 0; i < 80 && first() === was; i++) await sleep(50);
      await sleep(60); };
  if (sc.scrollTop !== 0) await go(0);
  grab();
  while (sc.scrollTop + sc.clientHeight < sc.scrollHeight - 1) {
    const before = sc.scrollTop;
    await go(sc.scrollTop + Math.max(35, sc.clientHeight - 80));
    grab();
    if (sc.scrollTop === before) break;
  }
  if (sc.scrollTop !== 0) await go(0);
  const grid = el.querySelector('table[role=grid]');
  return {heads: Array.from(grid.querySelectorAll('thead th')).map(th => th.textContent),
          count: Number(grid.getAttribute('aria-rowcount')) - 1, rows};
}"""


@dataclass(frozen=True)
class Row:
    role: str
    gpu: str
    n_gpus: str
    precision: str
    fits: str        # 'true' / 'false' (the checkbox column's accessible text)
    hours: str
    hours_range: str
    cost: str
    cost_range: str
    gpu_hours: str
    sources: str

    @property
    def option(self) -> tuple[str, str, str]:
        return (self.gpu, self.n_gpus, self.precision)


def _number(text: str, loc: str = "en") -> float | None:
    """'1,234.56' (en) or '1.234,56' (es-AR) -> 1234.56; '', '—' -> None."""
    text = text.strip().lstrip("$").replace("US$", "").strip()
    if not text or text == "—":
        return None
    if loc == "en":
        return float(text.replace(",", ""))
    return float(text.replace(".", "").replace(",", "."))


def _high_hours(r: Row, loc: str = "en") -> float | None:
    """The high end of the row's hours range ('25.0 – 39.2' -> 39.2)."""
    if "–" not in r.hours_range:
        return None
    return _number(r.hours_range.split("–")[1], loc)


def table_rows(page: Page) -> list[Row]:
    """Every row of the options table, top to bottom (the grid is scrolled to collect them all)."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid.locator("table[role=grid]")).to_have_count(1, timeout=60_000)
    # Full screen shows ~65 rows at a time (the page's grid shows 11): far fewer scroll steps.
    # (The toolbar shows on hover only; a dispatched click does not depend on where the mouse is.)
    grid.get_by_role("button", name="Fullscreen", exact=True).dispatch_event("click")
    close = page.get_by_role("button", name="Close fullscreen", exact=True)
    expect(close).to_have_count(1, timeout=30_000)
    page.wait_for_timeout(300)
    try:
        got = grid.evaluate(_READ_GRID)
    finally:
        close.dispatch_event("click")
    expect(close).to_have_count(0, timeout=30_000)
    assert len(got["heads"]) == len(Row.__dataclass_fields__), got["heads"]
    rows = [Row(*got["rows"][k]) for k in sorted(got["rows"], key=int)]
    assert len(rows) == got["count"], f"read {len(rows)} rows of {got['count']}"
    return rows


_CAPTION = re.compile(r"^(\d+) (?:of|de) (\d+) (?:options|opciones)")


def shown_of_total(page: Page) -> tuple[int, int]:
    """The table's caption: '200 of 200 options, the picks first, ...'."""
    text = page.locator('[data-testid="stCaptionContainer"]').filter(has_text=_CAPTION).first.inner_text()
    m = _CAPTION.match(text.strip())
    assert m, text
    return int(m.group(1)), int(m.group(2))


def _open(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=90_000)
    settle(page)


def _after(page: Page, action) -> list[Row]:
    """Do `action`, wait until the caption's count changes and the grid holds that many rows; return the rows."""
    before = page.locator('[data-testid="stCaptionContainer"]').filter(has_text=_CAPTION).first.inner_text()
    action()
    expect(page.locator('[data-testid="stCaptionContainer"]').filter(has_text=_CAPTION).first).not_to_have_text(
        before, timeout=60_000)
    settle(page)
    shown, _total = shown_of_total(page)
    expect(page.locator('[data-testid="stDataFrame"] table[role=grid]').first).to_have_attribute(
        "aria-rowcount", str(shown + 1), timeout=30_000)
    rows = table_rows(page)
    assert len(rows) == shown
    return rows


def _tick(page: Page, label: str):
    return lambda: page.get_by_text(label, exact=True).click()


def _pick_family(page: Page, label: str, family: str):
    def act() -> None:
        box = page.get_by_role("combobox", name=label)
        # Centred first: at the viewport's bottom edge its list opens off screen and no option can be clicked
        # (the cost caption above the table moved it there, issue 35).
        box.evaluate("el => el.scrollIntoView({block: 'center'})")
        box.click()
        page.get_by_role("option", name=family, exact=True).click()
        page.keyboard.press("Escape")
    return act


def _picks(rows: list[Row]) -> list[Row]:
    """The pinned rows: the recommended option and, when the plan has one, its runner-up."""
    picks = [r for r in rows if r.role]
    assert 1 <= len(picks) <= 2 and rows[:len(picks)] == picks, [(i, r) for i, r in enumerate(rows) if r.role]
    return picks


def _assert_picks_on_top(rows: list[Row], picks: list[Row]) -> None:
    assert rows[:len(picks)] == picks, (rows[:len(picks)], picks)
    assert all(r.role == "" for r in rows[len(picks):]), [r for r in rows[len(picks):] if r.role][:3]


def _kept_and_dropped(all_rows: list[Row], filtered: list[Row]) -> tuple[Counter, Counter]:
    """The unpinned rows a filter kept and dropped, as multisets of whole rows (kept must be a subset)."""
    n = len(_picks(all_rows))
    everything, kept = Counter(all_rows[n:]), Counter(filtered[n:])
    assert not kept - everything, f"rows that were not in the unfiltered table: {list(kept - everything)[:3]}"
    return kept, everything - kept


def _profiles() -> dict:
    from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles

    profiles, _problems = load_profiles(DEFAULT_PROFILES_DIR)
    return profiles


def _families() -> dict[str, str]:
    """GPU name (as the table shows it) -> family (as the filter names it): 'h100-sxm-80gb' -> 'H100'."""
    return {fmt.gpu_short_name(p.name): gpu_id.split("-")[0].upper() for gpu_id, p in _profiles().items()}


def _full_name(table_name: str) -> str:
    """The profile's name, as the headline writes it, of a GPU the table names (fmt.gpu_short_name)."""
    return next(p.name for p in _profiles().values() if fmt.gpu_short_name(p.name) == table_name)


# ---------------------------------------------------------------- the options table

def test_picks_are_pinned_on_top_then_the_cheapest_that_fit(table_page, everything):
    page, rows = table_page, everything
    assert shown_of_total(page) == (len(rows), len(rows))
    rec, runner = rows[0], rows[1]
    assert (rec.role, runner.role) == ("recommended", "runner-up")
    # the pinned rows are the headline's picks
    expect(page.get_by_role("heading", name=f"Recommended: {rec.n_gpus} × {_full_name(rec.gpu)} · {rec.precision}")
           ).to_be_visible()
    expect(page.get_by_text(f"Runner-up: {runner.n_gpus} × {_full_name(runner.gpu)} · {runner.precision}",
                            exact=False)).to_be_visible()
    assert len({r.option for r in rows}) == len(rows), "an option is listed twice"
    # then: what fits, priced, from cheapest; then unpriced; then what does not fit
    rest = rows[2:]
    keys = [({"true": 0, "": 1, "false": 2}[r.fits], _number(r.cost) is None, _number(r.cost) or 0.0)
            for r in rest]
    out_of_order = [(rest[i], rest[i + 1]) for i in range(len(keys) - 1) if keys[i] > keys[i + 1]]
    assert not out_of_order, out_of_order[:2]
    assert {r.fits for r in rest} >= {"true", "false"}, "the default scenario should have rows that do not fit"
    no_exception(page)


def test_fits_only_drops_every_row_that_does_not_fit(table_page, everything):
    page = table_page
    picks = _picks(everything)
    assert [r.role for r in picks] == ["recommended", "runner-up"]
    does_not_fit = [r for r in everything[2:] if r.fits == "false"]
    assert does_not_fit, "the default scenario should have rows that do not fit"

    rows = _after(page, _tick(page, "Fits only"))
    _assert_picks_on_top(rows, picks)
    assert [r for r in rows if r.fits == "false"] == [], "a row that does not fit is still shown"
    kept, dropped = _kept_and_dropped(everything, rows)
    assert dropped == Counter(does_not_fit)
    assert len(rows) == len(everything) - len(does_not_fit)
    assert shown_of_total(page) == (len(rows), len(everything))
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator('[data-testid="stDataFrame"]').first.screenshot(path=str(ARTIFACTS / "plan_table_fits_only.png"))

    _after(page, _tick(page, "Fits only"))  # unticked: every row is back
    assert shown_of_total(page) == (len(everything), len(everything))
    no_exception(page)


def test_gpu_family_filter_leaves_only_that_family(table_page, everything):
    page = table_page
    picks = _picks(everything)
    assert [r.role for r in picks] == ["recommended", "runner-up"]
    family = _families()
    assert not any(family[p.gpu] == "H100" for p in picks), "the picks should be of another family, to show they stay"

    rows = _after(page, _pick_family(page, "GPU family", "H100"))
    _assert_picks_on_top(rows, picks)  # pinned whatever the filters, although not H100
    assert rows[2:], "no H100 row"
    assert all("H100" in r.gpu for r in rows[2:]), [r.gpu for r in rows[2:] if "H100" not in r.gpu]
    kept, dropped = _kept_and_dropped(everything, rows)
    assert kept == Counter(r for r in everything[2:] if family[r.gpu] == "H100")
    assert len({r.gpu for r in rows[2:]}) >= 2  # SXM, PCIe, NVL: a family, not one profile

    # A second family, one with options that do not fit: the table shows the union of the two.
    other = sorted({family[r.gpu] for r in everything[2:] if r.fits == "false"})[0]
    chosen = {"H100", other}
    rows = _after(page, _pick_family(page, "GPU family", other))
    _assert_picks_on_top(rows, picks)
    kept, _ = _kept_and_dropped(everything, rows)
    assert kept == Counter(r for r in everything[2:] if family[r.gpu] in chosen)

    rows = _after(page, _tick(page, "Fits only"))  # with fits only: both filters at once
    _assert_picks_on_top(rows, picks)
    kept, _ = _kept_and_dropped(everything, rows)
    assert kept == Counter(r for r in everything[2:] if family[r.gpu] in chosen and r.fits == "true")
    no_exception(page)

    _after(page, _tick(page, "Fits only"))
    _after(page, lambda: page.locator('[data-testid="stMultiSelect"]').filter(has_text="GPU family").get_by_role(
        "button", name="Clear all").click())
    assert shown_of_total(page) == (len(everything), len(everything))


def test_within_deadline_and_within_budget_drop_the_rows_that_miss(table_page, everything):
    page = table_page
    picks = _picks(everything)
    assert [r.role for r in picks] == ["recommended", "runner-up"]

    # Within the deadline (p90): the high end of the hours range is at most 48 h; the range is shown to 0.1 h.
    rows = _after(page, _tick(page, "Within the deadline"))
    _assert_picks_on_top(rows, picks)
    kept, dropped = _kept_and_dropped(everything, rows)
    assert kept and dropped
    late = [r for r in kept if _high_hours(r) is None or _high_hours(r) > DEADLINE_H + 0.05]
    assert not late, late[:3]
    on_time = [r for r in dropped if _high_hours(r) is not None and _high_hours(r) < DEADLINE_H - 0.05]
    assert not on_time, f"dropped although within the deadline: {on_time[:3]}"
    _after(page, _tick(page, "Within the deadline"))
    assert shown_of_total(page) == (len(everything), len(everything))

    # Within the budget: the cost (USD, 2 decimals) is at most 1,000; rows without a price are dropped.
    rows = _after(page, _tick(page, "Within the budget"))
    _assert_picks_on_top(rows, picks)
    kept, dropped = _kept_and_dropped(everything, rows)
    assert kept and dropped
    over = [r for r in kept if _number(r.cost) is None or _number(r.cost) > BUDGET_USD + 0.005]
    assert not over, over[:3]
    cheap = [r for r in dropped if _number(r.cost) is not None and _number(r.cost) < BUDGET_USD - 0.005]
    assert not cheap, f"dropped although within the budget: {cheap[:3]}"
    assert any(_number(r.cost) is not None for r in dropped), "no priced row is over the budget: a weak check"

    # Both: the rows that pass both.
    rows = _after(page, _tick(page, "Within the deadline"))
    _assert_picks_on_top(rows, picks)
    both, _ = _kept_and_dropped(everything, rows)
    assert both <= kept
    assert all(_high_hours(r) is not None and _high_hours(r) <= DEADLINE_H + 0.05 for r in both)
    no_exception(page)
    _after(page, _tick(page, "Within the deadline"))
    _after(page, _tick(page, "Within the budget"))
    assert shown_of_total(page) == (len(everything), len(everything))


# ---------------------------------------------------------------- the gallery

def _gallery_pick(page: Page, name: str) -> None:
    page.locator('[data-testid="stButtonGroup"]').get_by_text(name, exact=True).click()
    expect(page.get_by_role("heading", name=name, level=1)).to_be_visible(timeout=60_000)
    settle(page)


def _gpu_names(ids: list[str]) -> set[str]:
    """The GPU column's names (the table drops product-line words: fmt.gpu_short_name)."""
    profiles = _profiles()
    return {fmt.gpu_short_name(profiles[i].name) for i in ids}


def test_gallery_loads_a_preset_and_a_spanish_scenario_and_the_ui_stays_english(page, app_url):
    from planner.inputs.scenario import load_scenario_file

    _open(page, app_url)
    expect(page.get_by_role("heading", name=DEFAULT_TITLE, level=1)).to_be_visible()
    _, total_before = shown_of_total(page)

    # The Llama 2 7B LoRA preset: the title, the sidebar's model and the table's GPUs are the preset's.
    preset = load_scenario_file(ROOT / "scenarios" / "presets" / "llama2-7b-lora-24gb.yaml")
    _gallery_pick(page, LORA_PRESET)
    expect(page.get_by_text(f"Loaded the example “{LORA_PRESET}”.")).to_be_visible()
    expect(page.get_by_role("combobox", name="Model")).to_have_value("llama2_7b")
    rows = table_rows(page)
    assert {r.gpu for r in rows} == _gpu_names(list(preset.hardware.gpus))
    assert {r.precision for r in rows} == set(preset.training.precisions)
    assert len(rows) != total_before
    _assert_english(page)
    no_exception(page)

    # A shipped scenario written for es-AR readers: it loads, and the interface stays English (and en numbers).
    qlora = load_scenario_file(ROOT / "scenarios" / "llama7b-qlora-24gb.yaml")
    assert qlora.locale == "es-AR"
    _gallery_pick(page, QLORA_ES_AR)
    rows = table_rows(page)
    assert {r.gpu for r in rows} == _gpu_names(list(qlora.hardware.gpus))
    _assert_english(page)
    # en numbers (1,234.5), not the scenario's es-AR ones. The number columns' accessible text is the raw value,
    # so the format is read from the text columns: the hours and cost ranges.
    ranges = [r.hours_range for r in rows if r.hours_range != "—"]
    assert ranges and all(re.fullmatch(r"[\d,]+\.\d – [\d,]+\.\d", x) for x in ranges), ranges[:5]
    costs = [r.cost_range for r in rows if r.cost_range != "—"]  # 'ARS\xa0867 – ARS\xa02,269': the file's currency
    money = r"(?:\$|[A-Z]{3}\xa0)[\d,]+(?:\.\d\d)?"
    assert costs and all(re.fullmatch(f"{money} – {money}", x) for x in costs), costs[:5]
    assert any(re.search(r"\d,\d\d\d", x) for x in costs), f"no en thousands separator in {costs[:5]}"
    assert "?s=" in page.url
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "plan_gallery_qlora_en.png"))
    no_exception(page)


def _assert_english(page: Page) -> None:
    expect(page.get_by_role("radio", name="English")).to_be_checked()
    expect(page.get_by_role("combobox", name="Number and date format")).to_have_value(re.compile(r"^en\b"))
    expect(page.get_by_text("Recommended:").first).to_be_visible()
    expect(page.get_by_text("Recomendación:")).to_have_count(0)
    expect(page.get_by_role("heading", name="All options")).to_be_visible()
    expect(page.get_by_text("Fits only", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stSidebarNav"]').get_by_text("GPUs & prices", exact=True)).to_be_visible()


def _to_es_ar(page: Page) -> None:
    page.get_by_text("Español", exact=True).click()
    expect(page.get_by_text("Recomendación:").first).to_be_visible(timeout=60_000)
    settle(page)
    page.get_by_role("combobox", name="Formato de números y fechas").click()
    page.get_by_role("option", name=re.compile(r"^es-AR ")).click()
    expect(page.get_by_role("combobox", name="Formato de números y fechas")).to_have_value(re.compile(r"^es-AR\b"),
                                                                                        timeout=60_000)
    settle(page)


def _assert_spanish_es_ar(page: Page) -> None:
    expect(page.get_by_role("radio", name="Español")).to_be_checked()
    expect(page.get_by_role("combobox", name="Formato de números y fechas")).to_have_value(re.compile(r"^es-AR\b"))
    expect(page.get_by_text("Recomendación:").first).to_be_visible()
    expect(page.get_by_text("Recommended:")).to_have_count(0)
    expect(page.get_by_role("heading", name="Todas las opciones")).to_be_visible()
    expect(page.get_by_text("Solo si cabe", exact=True)).to_be_visible()


def test_in_es_ar_the_gallery_keeps_spanish_and_the_filters_work(page, app_url):
    from planner.inputs.scenario import load_scenario_file
    from planner.present.i18n import t

    _open(page, app_url)
    _to_es_ar(page)
    _assert_spanish_es_ar(page)

    preset = load_scenario_file(ROOT / "scenarios" / "presets" / "llama2-7b-lora-24gb.yaml")
    assert preset.locale == "en"
    _gallery_pick(page, LORA_PRESET)  # an English scenario: the interface stays Spanish, numbers es-AR
    expect(page.get_by_text(t("plan_page.gallery.loaded", "es-AR", name=LORA_PRESET))).to_be_visible()
    _assert_spanish_es_ar(page)
    everything = table_rows(page)
    assert {r.gpu for r in everything} == _gpu_names(list(preset.hardware.gpus))
    picks = _picks(everything)
    assert picks[0].role == t("app.role.recommended", "es-AR")
    assert all(r.role in (t("app.role.recommended", "es-AR"), t("app.role.runner_up", "es-AR")) for r in picks)
    ranges = [r.hours_range for r in everything if r.hours_range != "—"]
    assert ranges and all(re.fullmatch(r"[\d.]+,\d – [\d.]+,\d", x) for x in ranges), ranges[:5]
    costs = [r.cost_range for r in everything if r.cost_range != "—"]
    assert costs and all(re.fullmatch(r"US\$[\d.]+,\d\d – US\$[\d.]+,\d\d", x) for x in costs), costs[:5]
    assert shown_of_total(page) == (len(everything), len(everything))

    # The family filter, in Spanish: only L4 rows after the two picks.
    rows = _after(page, _pick_family(page, "Familia de GPU", "L4"))
    _assert_picks_on_top(rows, picks)
    assert rows[len(picks):] and all(r.gpu.startswith("NVIDIA L4 ") for r in rows[len(picks):])
    kept, _ = _kept_and_dropped(everything, rows)
    assert kept == Counter(r for r in everything[len(picks):] if _families()[r.gpu] == "L4")
    assert shown_of_total(page) == (len(rows), len(everything))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "plan_gallery_filters_es_ar.png"))
    no_exception(page)
