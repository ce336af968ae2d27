"""Issue 33's memory answers in a real browser (Debian chromium + Playwright): the sidebar's LoRA/QLoRA switch moves
the base weights to 4-bit and the memory down, and a fixed micro-batch that does not fit is planned with a smaller
one and says so on the page (the AppTest versions: tests/test_app_plan.py
test_the_lora_qlora_switch_moves_the_base_and_the_plan and
test_a_micro_batch_that_does_not_fit_is_planned_with_a_smaller_one_and_says_so).

Each page opens on a scenario link (?s=…, ui/url_codec.py) narrowed to one GPU, one count and one precision, so
the option the metrics show is known."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from tests.browser_support import NEEDS_BROWSER, no_exception, settle

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]

from playwright.sync_api import Page, expect  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1400, "height": 2400}
FITS = "Fits in GPU memory?"


def _link(base_url: str, path: Path, *, gpu: str, precision: str, **training: Any) -> str:
    from planner.inputs.scenario import parse_scenario
    from ui import url_codec

    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["training"] = {**raw["training"], "precisions": [precision], **training}
    raw["hardware"] = {**raw["hardware"], "gpus": [gpu], "gpu_counts": [1]}
    scenario = parse_scenario(raw, str(path))
    return f"{base_url}/?{url_codec.URL_PARAM}={quote(url_codec.encode_scenario(scenario))}"


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport=VIEWPORT)
    yield ctx
    ctx.close()


def _open(context, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector('[data-testid="stMetric"]', timeout=90_000)
    settle(page, stale=True)
    return page


def _needed_gib(page: Page) -> float:
    """The memory the page shows for the option it headlines: the fits metric's "{total} of {capacity}"."""
    box = page.locator('[data-testid="stMetric"]').filter(has_text=FITS).first
    text = box.locator('[data-testid="stMetricDelta"]').inner_text().strip()
    found = re.match(r"([\d.,]+)\s*GiB of", text)
    assert found, f"{FITS}: {text!r}"
    return float(found.group(1).replace(",", ""))


def _choose(page: Page, box: str, option: str) -> None:
    """Pick `option` in the sidebar select `box`; a click that lands while the page is still re-rendering may not
    open the list, so it is opened again (three tries)."""
    combo = page.locator('[data-testid="stSidebar"]').get_by_role("combobox", name=box)
    choice = page.get_by_role("option", name=option, exact=True)
    for _ in range(3):
        combo.scroll_into_view_if_needed()
        combo.click()
        try:
            choice.wait_for(state="visible", timeout=10_000)
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: open it again
            page.keyboard.press("Escape")
            settle(page, stale=True)
            continue
        choice.click()
        return
    raise AssertionError(f"the {box!r} select did not offer {option!r}")


def test_switching_lora_to_qlora_in_the_sidebar_moves_the_base_to_nf4_and_the_memory_down(context, fresh_app_url):
    preset = ROOT / "scenarios" / "presets" / "llama2-7b-lora-24gb.yaml"
    # A fixed micro-batch, so the base's bytes are all that moves (an automatic one grows into the room freed).
    page = _open(context, _link(fresh_app_url, preset, gpu="rtx4090-24gb", precision="bf16", micro_batch=2))
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_role("combobox", name="Adapters")).to_have_value(re.compile(r"^LoRA"))
    expect(sidebar.get_by_role("combobox", name="Base weights stored as")).to_have_value("bf16")
    lora_gib = _needed_gib(page)

    _choose(page, "Adapters", "QLoRA (adapters on a 4-bit base)")
    expect(sidebar.get_by_role("combobox", name="Base weights stored as")).to_have_value("nf4", timeout=60_000)
    settle(page, stale=True)
    no_exception(page)
    qlora_gib = _needed_gib(page)
    # 6.74e9 weights at 4 bits (+ nf4's block constants) instead of 16 on one GPU: 12.6 GiB of base becomes ~3.5.
    assert qlora_gib < lora_gib - 6, (lora_gib, qlora_gib)

    _choose(page, "Adapters", "LoRA (low-rank adapters)")
    expect(sidebar.get_by_role("combobox", name="Base weights stored as")).to_have_value("bf16", timeout=60_000)
    settle(page, stale=True)
    assert _needed_gib(page) == pytest.approx(lora_gib)


def test_a_fixed_micro_batch_that_does_not_fit_is_planned_smaller_and_the_page_says_so(context, fresh_app_url):
    from planner.inputs.userdata import DEFAULT_SCENARIO

    page = _open(context, _link(fresh_app_url, DEFAULT_SCENARIO, gpu="t4-16gb", precision="fp32", micro_batch=256))
    no_exception(page)
    main = page.locator('[data-testid="stMain"], section.main').first
    expect(main).to_contain_text(
        re.compile(r"Does not fit as given \(needs \d+(\.\d)? of \d+(\.\d)? GiB\); planned with micro-batch \d+"),
        timeout=60_000)
    said = re.search(r"planned with micro-batch (\d+)", main.inner_text())
    assert said and 1 <= int(said.group(1)) < 256, said
    box = page.locator('[data-testid="stMetric"]').filter(has_text=FITS).first
    expect(box.locator('[data-testid="stMetricValue"]')).to_have_text("With the change above")
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()  # the plan, timed and priced
