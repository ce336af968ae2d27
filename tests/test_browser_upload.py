"""Issue 34 in a real browser (Debian chromium + Playwright): an upload above the old 1 MB server cap goes through
(the one limit, planner/vocab.py UPLOAD_MAX_MB, in .streamlit/config.toml), and a link that trains a CNN for
tokens shows its message with a drawn plan under it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from planner.inputs.scenario import load_scenario_file, load_scenario_text
from planner.inputs.userdata import DEFAULT_SCENARIO
from planner.present.i18n import t
from tests.browser_support import NEEDS_BROWSER, no_exception, settle, streamlit_server, with_env
from tests.fixtures.make_fixtures import measurement, result
from ui import url_codec

pytestmark = [pytest.mark.browser, NEEDS_BROWSER]

from playwright.sync_api import Page, expect  # noqa: E402

VIEWPORT = {"width": 1400, "height": 2400}
UPLOAD_BYTES = 2 * 10**6  # 2 MB: twice the server's old cap of 1 MiB


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


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


def big_result_file(folder: Path) -> Path:
    """A valid resnet50-on-H100 result file (test fixture helpers: not real measurements) of just over 2 MB."""
    ms = [measurement("bf16", b, 0.004 + 0.00042 * b, 0.6 * 2**30 + 0.06 * 2**30 * b) for b in range(1, 3200)]
    data = result("resnet50", "h100-sxm-80gb", ms, created="2026-11-22T09:00:00Z")
    path = folder / "big.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert path.stat().st_size > UPLOAD_BYTES
    return path


def test_a_2_mb_result_file_is_uploaded_and_imported(page, app_url, home, tmp_path):
    big = big_result_file(tmp_path)
    page.goto(f"{app_url}/benchmarks")
    page.get_by_role("tab", name=t("pages.bench.tab_import")).click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(big))
    expect(page.get_by_text(re.compile(r"Imported big\.json as .*resnet50-20261122T090000Z\.json"))).to_be_visible(
        timeout=60_000)
    settle(page)
    no_exception(page)
    assert "AxiosError" not in page.content() and "413" not in page.locator("body").inner_text()
    imported = list((home / "results").rglob("resnet50-20261122T090000Z.json"))
    assert len(imported) == 1  # every measurement of the file arrived (the import writes it again, its own way)
    assert len(json.loads(imported[0].read_text(encoding="utf-8"))["measurements"]) == 3199


def test_a_tokens_on_cnn_link_shows_the_message_and_a_drawn_plan(page, app_url):
    d = yaml.safe_load(DEFAULT_SCENARIO.read_text(encoding="utf-8"))
    del d["workload"]["epochs"]
    d["workload"]["tokens"] = 1.0e10
    link = url_codec.encode_scenario(load_scenario_text(yaml.safe_dump(d), "test"))
    page.goto(f"{app_url}/?{url_codec.URL_PARAM}={link}")
    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=90_000)
    settle(page)
    no_exception(page)
    error = page.locator('[data-testid="stAlertContentError"]')
    expect(error).to_have_count(1)
    expect(error).to_contain_text(t("app.sidebar.tokens"))
    expect(error).to_contain_text("workload.tokens")
    default = load_scenario_file(DEFAULT_SCENARIO).name
    expect(page.get_by_text(t("app.error.showing_default", name=default))).to_be_visible()
    # the plan drawn under it: headline figures, the memory chart and the options table
    expect(page.locator('[data-testid="stMetric"]').first).to_be_visible()
    assert page.locator('[data-testid="stMetric"]').count() >= 3
    expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_be_visible()
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
