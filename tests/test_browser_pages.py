"""Compare, Benchmarks and GPUs & prices in a real browser (Debian chromium + Playwright), with screenshots.

Serves app.py. Screenshots
go to test-artifacts/pages-*.png, for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.browser_support import NEEDS_BROWSER, no_exception, settle, streamlit_server, with_env
from tests.fixtures.make_fixtures import resnet50_h100

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1440, "height": 3600}  # tall: a whole page in one screenshot

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]


from playwright.sync_api import Page, expect  # noqa: E402


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A user folder with one teammate's result file and one saved scenario."""
    home = tmp_path_factory.mktemp("home")
    target = home / "results" / "h100-sxm-80gb" / "resnet50-20261120T100000Z.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(resnet50_h100()))
    from planner.inputs.scenario import load_scenario_file
    from planner.inputs.userdata import SHIPPED_SCENARIOS_DIR
    from planner.present.compare import save_scenario

    os.environ["TRAINPLAN_HOME"] = str(home)
    try:
        save_scenario(load_scenario_file(SHIPPED_SCENARIOS_DIR / "bert-base-finetune.yaml"), "BERT fine-tune")
    finally:
        del os.environ["TRAINPLAN_HOME"]
    return home


@pytest.fixture(scope="module")
def app_url(home):
    with streamlit_server(with_env(TRAINPLAN_HOME=str(home), TRAINPLAN_BENCH_PYTHON=None)) as url:
        yield url


@pytest.fixture
def page(browser) -> Page:
    context = browser.new_context(viewport=VIEWPORT)
    p = context.new_page()
    yield p
    context.close()


def _open(page: Page, url: str, heading: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name=heading, level=1)).to_be_visible(timeout=60_000)


def _shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"pages-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_compare_page(page, app_url):
    _open(page, f"{app_url}/compare", "Compare scenarios")
    settle(page)
    expect(page.get_by_role("heading", name="Side by side")).to_be_visible()
    # the saved scenario is compared with the current one: two columns in the side-by-side table
    expect(page.locator('[data-testid="stMultiSelect"]').get_by_text("BERT fine-tune")).to_be_visible()
    expect(page.locator(".vega-embed")).to_have_count(2, timeout=30_000)
    expect(page.get_by_text(re.compile(r"options are on their scenario's frontier"))).to_be_visible()
    no_exception(page)
    _shot(page, "compare")


def test_gpus_page_and_a_price_override(page, app_url, home):
    _open(page, f"{app_url}/gpus", "GPUs & prices")
    settle(page)
    expect(page.get_by_text(re.compile(r"\d+ GPUs\. \d+ have a price older than 180 days"))).to_be_visible()
    _shot(page, "gpus")
    price = page.get_by_role("spinbutton", name="USD per GPU-hour")
    price.fill("0.11")
    price.press("Tab")
    page.get_by_role("button", name="Save my price").click()
    expect(page.get_by_text(re.compile("Saved your price for"))).to_be_visible(timeout=30_000)
    settle(page)
    assert (home / "price_overrides.yaml").exists()
    expect(page.get_by_text(re.compile(r"Recommended for the current scenario: .* \(price: your price override"))
           ).to_be_visible()
    no_exception(page)
    _shot(page, "gpus-override")


def test_benchmarks_browse_run_here_and_import(page, app_url, home, tmp_path):
    _open(page, f"{app_url}/benchmarks", "Benchmarks")
    settle(page)
    # the shipped results/ are listed too: pick this test's file by GPU and model
    for box, option in (("GPU", re.compile(r"h100-sxm-80gb")), ("Model", "resnet50")):
        page.get_by_role("combobox", name=box).click()
        page.get_by_role("option", name=option).first.click()
        settle(page)
    expect(page.get_by_text(re.compile(r"resnet50 on .*h100.*, measured"))).to_be_visible(timeout=30_000)
    expect(page.locator(".vega-embed")).not_to_have_count(0, timeout=30_000)
    no_exception(page)
    _shot(page, "benchmarks-browse")

    page.get_by_role("tab", name="Run a benchmark here").click()
    expect(page.get_by_text(re.compile(r"No CUDA GPU here|GPU\(s\) found"))).to_be_visible(timeout=90_000)
    batches = page.get_by_role("textbox", name="Batch sizes")
    batches.fill("4,8,16")
    batches.press("Enter")
    for label, value in (("Timed steps", "3"), ("Warm-up steps", "1")):
        box = page.get_by_role("spinbutton", name=label)
        box.fill(value)
        box.press("Enter")
    settle(page)
    start = page.get_by_role("button", name="Run the benchmark")
    expect(start).to_be_enabled(timeout=30_000)
    start.click()
    expect(page.locator('[data-testid="stProgress"], [data-testid="stAlertContentError"]').first).to_be_visible(
        timeout=30_000)
    errors = page.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, errors.all_inner_texts()
    # In the progress bar's text: once the file lands, the Browse tab's summary of it says "3 of 3 configurations
    # measured" too (a fast run made the page-wide match ambiguous).
    expect(page.get_by_test_id("stProgress").get_by_text(re.compile(r"[1-3] of 3 configurations measured"))
           ).to_be_visible(timeout=180_000)
    _shot(page, "benchmarks-run-progress")
    expect(page.get_by_text(re.compile(r"Done: 3 configuration\(s\) measured"))).to_be_visible(timeout=180_000)
    settle(page)
    no_exception(page)
    _shot(page, "benchmarks-run-done")
    [landed] = list((home / "results" / "cpu").glob("mlp-*.json"))

    page.get_by_role("tab", name="Browse result files").click()
    picked = page.get_by_role("combobox", name=re.compile(r"Result file \(\d+\)"))
    expect(picked).to_have_value(re.compile(r"^mlp · CPU: .* UTC · yours$"), timeout=30_000)
    expect(page.get_by_text(f"File: {landed}")).to_be_visible()
    _shot(page, "benchmarks-browse-new-file")

    page.get_by_role("tab", name="Import a result file").click()
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps({**resnet50_h100(), "schema": "trainplan.bench/0"}))
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(bad))
    expect(page.get_by_text(re.compile(r"Not imported: broken\.json: schema"))).to_be_visible(timeout=30_000)
    settle(page)
    no_exception(page)
    _shot(page, "benchmarks-import-bad")
    before = sorted(p.name for p in (home / "results").rglob("*.json"))
    good = resnet50_h100()
    good["created_utc"] = "2026-11-21T08:00:00Z"
    (tmp_path / "teammate.json").write_text(json.dumps(good))
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(tmp_path / "teammate.json"))
    expect(page.get_by_text(re.compile(r"Imported teammate\.json as .*resnet50-20261121T080000Z\.json"))).to_be_visible(
        timeout=30_000)
    assert sorted(p.name for p in (home / "results").rglob("*.json")) == sorted(
        [*before, "resnet50-20261121T080000Z.json"])
    settle(page)
    _shot(page, "benchmarks-import-good")


def test_benchmarks_trace_memory_without_a_gpu(page, app_url, home):
    _open(page, f"{app_url}/benchmarks", "Benchmarks")
    settle(page)
    page.get_by_role("tab", name="Trace memory without a GPU").click()
    panel = page.get_by_role("tabpanel", name="Trace memory without a GPU")
    panel.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name="mlp · mlp").click()
    settle(page)
    batches = panel.get_by_role("textbox", name="Batch sizes")
    batches.fill("4,8")
    batches.press("Enter")
    settle(page)
    panel.get_by_role("button", name="Trace", exact=True).click()
    expect(page.get_by_text(re.compile(r"Traced in [0-9.]+ s and saved to .*traced/mlp-"))).to_be_visible(
        timeout=120_000)
    settle(page)
    errors = page.locator('[data-testid="stAlertContentError"]')
    assert errors.count() == 0, errors.all_inner_texts()
    no_exception(page)
    _shot(page, "benchmarks-trace")
    [landed] = list((home / "results" / "traced").glob("mlp-*.json"))
    page.get_by_role("tab", name="Browse result files").click()
    picked = page.get_by_role("combobox", name=re.compile(r"Result file \(\d+\)"))
    expect(picked).to_have_value(re.compile(r"^mlp · traced without a GPU \(as on cuda\) · .* UTC · yours$"),
                                 timeout=30_000)
    expect(page.get_by_text(f"File: {landed}")).to_be_visible()
    _shot(page, "benchmarks-trace-browse")


def test_pages_in_spanish(page, app_url):
    _open(page, app_url, "ResNet-50 on ImageNet-1k (90 epochs)")
    settle(page)
    page.get_by_text("Español", exact=True).click()
    expect(page.get_by_text("Recomendación:").first).to_be_visible(timeout=30_000)
    settle(page)
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Comparar").click()
    expect(page.get_by_role("heading", name="Comparar escenarios", level=1)).to_be_visible(timeout=60_000)
    settle(page)
    expect(page.get_by_role("heading", name="Lado a lado")).to_be_visible()
    no_exception(page)
    _shot(page, "compare-es")
    page.locator('[data-testid="stSidebarNav"]').get_by_text("GPUs y precios").click()
    expect(page.get_by_role("heading", name="GPUs y precios", level=1)).to_be_visible(timeout=60_000)
    settle(page)
    _shot(page, "gpus-es")
