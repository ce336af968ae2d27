"""The real app in a real browser: `streamlit run app.py` on a free port, driven by Playwright + Debian chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser_support import NEEDS_BROWSER, settle, streamlit_server, with_env

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1440, "height": 4200}  # tall: the whole page and sidebar in one screenshot

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]


from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with streamlit_server(with_env(TRAINPLAN_HOME=str(tmp_path_factory.mktemp("home"))), "app.py") as url:
        yield url


def _open(browser, url: str) -> Page:
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    # The first render arrives over the websocket: wait for the plan, not for the HTML.
    page.wait_for_selector('[data-testid="stMetric"]', timeout=60_000)
    page.wait_for_selector('[data-testid="stVegaLiteChart"]', timeout=60_000)
    return page


def _metric(page: Page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _hours(text: str) -> float:
    return float(text.replace(",", "").split()[0])


def test_plan_page_renders_updates_and_shares(app_url, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = _open(browser, app_url)
    expect(page.get_by_text("Recommended:").first).to_be_visible()
    expect(page.get_by_text("Memory per GPU against its capacity")).to_be_visible()
    settle(page)
    assert "?s=" in page.url  # the scenario is in the address
    hours_before = _metric(page, "Time to train")
    page.screenshot(path=str(ARTIFACTS / "plan_en.png"), full_page=True)

    # "Why this number": the memory and cost expanders show their inputs, formula and source.
    page.get_by_text(re.compile(r"^Why .* of GPU memory per GPU\?$")).click()
    page.get_by_text(re.compile(r"^Why \$[\d.,]+\?$")).click()
    expect(page.get_by_text("Required = weights + gradients", exact=False)).to_be_visible()
    expect(page.get_by_text("Price source", exact=True).first).to_be_visible()
    settle(page)
    page.locator('[data-testid="stExpander"]').filter(has_text="Required = weights").screenshot(
        path=str(ARTIFACTS / "plan_why_memory.png"))
    # the cost "why" expander (the options table's sources expander also names the price source)
    page.locator('[data-testid="stExpander"]').filter(has_text=re.compile(r"Why \$[\d.,]+\?")).screenshot(
        path=str(ARTIFACTS / "plan_why_cost.png"))

    # One widget: a third of the epochs -> about a third of the hours, a new plan and a new link.
    url_before = page.url
    box = page.get_by_role("spinbutton", name="Epochs")
    box.fill("30")
    box.press("Enter")
    page.wait_for_function("u => window.location.href !== u", arg=url_before, timeout=30_000)
    settle(page)
    hours_after = _metric(page, "Time to train")
    assert _hours(hours_after) < 0.5 * _hours(hours_before), (hours_before, hours_after)
    shared = page.url
    page.screenshot(path=str(ARTIFACTS / "plan_en_30_epochs.png"), full_page=True)

    # The copied link reproduces the plan in a fresh session.
    other = _open(browser, shared)
    settle(other)
    assert _metric(other, "Time to train") == hours_after
    assert other.get_by_role("spinbutton", name="Epochs").input_value() == "30"
    other.close()

    # Language switch: labels and the number format follow.
    page.get_by_text("Español", exact=True).click()
    expect(page.get_by_text("Recomendación:").first).to_be_visible(timeout=30_000)
    settle(page)
    expect(page.get_by_text("Tiempo de entrenamiento", exact=True)).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "plan_es.png"), full_page=True)
    page.close()


def test_bad_upload_shows_a_message_not_a_traceback(app_url, browser, tmp_path):
    page = _open(browser, app_url)
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "scenarios" / "resnet50-imagenet.yaml").read_text().replace("epochs: 90", "epochs: -1"))
    page.get_by_text("Scenario file", exact=True).click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(bad))
    expect(page.get_by_text("This file could not be loaded")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("workload.epochs", exact=False).first).to_be_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
    settle(page)
    page.screenshot(path=str(ARTIFACTS / "plan_bad_upload.png"), full_page=True)
    page.close()


def test_a_link_to_an_impossible_plan_says_does_not_fit(app_url, browser):
    from dataclasses import replace

    from planner.inputs.scenario import load_scenario_file
    from ui.url_codec import URL_PARAM, encode_scenario

    base = load_scenario_file(ROOT / "scenarios" / "resnet50-imagenet.yaml")
    impossible = replace(base, name="ResNet-50, micro-batch 256 in fp32 on a T4",
                         training=replace(base.training, precisions=("fp32",), micro_batch=256),
                         hardware=replace(base.hardware, gpus=("t4-16gb",), gpu_counts=(1,)))
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{app_url}/?{URL_PARAM}={encode_scenario(impossible)}")
    expect(page.get_by_text("Does not fit:").first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("needs", exact=False).first).to_be_visible()
    settle(page)
    page.screenshot(path=str(ARTIFACTS / "plan_does_not_fit.png"), full_page=True)
    page.close()
