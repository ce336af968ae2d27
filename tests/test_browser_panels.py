"""The Plan page's lazy parts in a real browser (Debian chromium + Playwright): the "why" panels are built only when
opened and stay open across plan changes, and the options table sends its detail columns only with "Show details".

(ui/panels.py: a closed panel's body is never run; Streamlit names an expander by its label, and the label carries a
figure, so the open state is kept by panel name. AppTest cannot click an expander, hence a browser test.)
"""

from __future__ import annotations

import re

import pytest

from tests.browser_support import NEEDS_BROWSER, settle

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]

from playwright.sync_api import Page, expect  # noqa: E402

VIEWPORT = {"width": 1400, "height": 2400}
MEMORY_PANEL = re.compile(r"Why [\d.,]+ GiB of GPU memory per GPU\?")
HOURS_PANEL = re.compile(r"Why [\d.,]+ h\?")


@pytest.fixture
def page(browser, fresh_app_url) -> Page:
    context = browser.new_context(viewport=VIEWPORT)
    p = context.new_page()
    p.goto(fresh_app_url)
    p.wait_for_selector('[data-testid="stDataFrame"]', timeout=90_000)
    settle(p, stale=True)
    yield p
    context.close()


def _panel(page: Page, label: re.Pattern):
    return page.locator('[data-testid="stExpander"]').filter(
        has=page.locator("summary").filter(has_text=label)).first


def _grid(page: Page):
    return page.locator('[data-testid="stDataFrame"] table[role=grid]').first


def _heads(page: Page) -> list[str]:
    """The headers of the columns in view (the grid's accessible table holds those only)."""
    return [h.strip() for h in _grid(page).locator("thead th").all_inner_texts()]


def test_a_why_panel_is_built_when_opened_and_stays_open_across_a_plan_change(page: Page):
    hours = _panel(page, HOURS_PANEL)
    expect(hours).to_have_count(1)
    # Closed: the panel is only its label; no table was sent.
    expect(hours.locator('[data-testid="stTable"]')).to_have_count(0)
    hours.locator("summary").click()
    expect(hours.locator('[data-testid="stTable"]')).to_have_count(1, timeout=60_000)
    settle(page, stale=True)
    expect(hours.locator('[data-testid="stTable"]')).to_contain_text("Early-stop fraction")
    assert _panel(page, MEMORY_PANEL).locator('[data-testid="stTable"]').count() == 0  # the others stay closed

    # A plan change (Epochs 90 -> 45) changes this panel's label ("Why 28.7 h?"), which is how Streamlit names an
    # expander: the panel must still be open, with the new plan's table.
    label = hours.locator("summary").inner_text()
    box = page.get_by_role("spinbutton", name="Epochs")
    box.fill("45")
    box.press("Enter")
    expect(page.locator('[data-testid="stExpander"] summary').filter(has_text=label)).to_have_count(
        0, timeout=60_000)
    settle(page, stale=True)
    hours = _panel(page, HOURS_PANEL)
    expect(hours.locator('[data-testid="stTable"]')).to_have_count(1, timeout=60_000)
    expect(hours.locator('[data-testid="stTable"]')).to_contain_text("Early-stop fraction")

    # Closed again: its body is no longer sent.
    hours.locator("summary").click()
    expect(hours.locator('[data-testid="stTable"]')).to_have_count(0, timeout=60_000)


def test_the_table_sends_its_detail_columns_only_with_show_details(page: Page):
    # The 11 decision columns (aria-colcount counts every column of the grid, in view or not).
    expect(_grid(page)).to_have_attribute("aria-colcount", "11")
    assert _heads(page)[:2] == ["Pick", "GPU"], _heads(page)
    page.get_by_text("Show details", exact=False).first.click()
    expect(_grid(page)).not_to_have_attribute("aria-colcount", "11", timeout=60_000)
    settle(page, stale=True)
    assert int(_grid(page).get_attribute("aria-colcount") or 0) >= 30
    assert _heads(page)[:2] == ["Pick", "GPU"]  # the decision first, the details after
