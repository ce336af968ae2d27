"""AppTest of one rule for a bad scenario from any source (link, file, sidebar): the message naming the field by its
sidebar label, and under it the last valid plan, or on a first visit the default scenario's, with a line saying
which (issue 34); and the app's one upload limit on every uploader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from planner.inputs.scenario import load_scenario_file, load_scenario_text
from planner.inputs.userdata import DEFAULT_SCENARIO
from planner.present.i18n import t
from planner.vocab import UPLOAD_MAX_MB
from ui import panels, sidebar, url_codec

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


@pytest.fixture(autouse=True)
def _no_user_data(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))


def tokens_on_cnn_yaml() -> str:
    """The default ResNet-50 scenario trained for `tokens`: valid to the reader, refused by the planner (a CNN has
    no sequence length to turn tokens into steps)."""
    d = yaml.safe_load(DEFAULT_SCENARIO.read_text(encoding="utf-8"))
    del d["workload"]["epochs"]
    d["workload"]["tokens"] = 1.0e10
    d["name"] = "ResNet-50 by tokens"
    return yaml.safe_dump(d, sort_keys=False)


def tokens_on_cnn_link() -> str:
    return url_codec.encode_scenario(load_scenario_text(tokens_on_cnn_yaml(), "test"))


def opened(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    panels.open_panels(at.session_state, sidebar.FILE_PANEL)
    if query:
        at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error).replace("\\", "")


def captions(at: AppTest) -> list[str]:
    return [c.value.replace("\\", "") for c in at.caption]


def default_name() -> str:
    return load_scenario_file(DEFAULT_SCENARIO).name


def test_a_tokens_on_cnn_link_on_a_first_visit_shows_the_message_and_the_default_plan():
    link = tokens_on_cnn_link()
    at = opened({url_codec.URL_PARAM: link})
    text = errors(at)
    assert f"**{t('app.sidebar.tokens')}**" in text  # the field by its sidebar label ("Tokens")
    assert "link (URL parameter s): workload.tokens" in text and "sequence length" in text
    assert t("app.error.showing_default", name=default_name()) in captions(at)
    assert at.metric and at.dataframe  # a drawn plan under the message, not an empty page
    # the widgets and the link keep what was loaded, so it can be fixed where it is
    assert at.radio(key="work_kind").value == "tokens"
    assert at.query_params[url_codec.URL_PARAM] == link
    at.radio(key="work_kind").set_value("epochs").run()
    assert not at.error and not any("The plan below" in c for c in captions(at))
    assert at.query_params[url_codec.URL_PARAM] != link


def test_a_tokens_on_cnn_file_after_a_valid_plan_shows_the_last_valid_plan():
    at = opened()
    before = at.query_params[url_codec.URL_PARAM]
    at.file_uploader(key="upload").set_value(("tokens.yaml", tokens_on_cnn_yaml().encode(), "application/x-yaml"))
    at.run()
    text = errors(at)
    assert f"**{t('app.sidebar.tokens')}**" in text and "tokens.yaml: workload.tokens" in text
    assert t("app.error.showing_last") in captions(at)
    assert at.metric and at.dataframe
    assert at.title[0].value == "ResNet-50 by tokens"  # the sidebar holds the file's scenario, to fix it there
    assert at.query_params[url_codec.URL_PARAM] == before  # the link stays the last valid plan's


def test_a_bad_sidebar_value_names_its_label_and_keeps_the_last_plan():
    at = opened()
    at.number_input(key="global_batch").set_value(100).run()  # not a multiple of 8 GPUs
    text = errors(at)
    assert f"**{t('app.sidebar.global_batch')}**" in text and "sidebar: training.global_batch" in text
    assert t("app.error.showing_last") in captions(at)
    assert at.metric and at.dataframe


def test_a_file_that_cannot_be_read_says_the_plan_below_is_the_one_before():
    at = opened()
    bad = DEFAULT_SCENARIO.read_text(encoding="utf-8").replace("global_batch: 256", "global_batch: -5")
    at.file_uploader(key="upload").set_value(("bad.yaml", bad.encode(), "application/x-yaml")).run()
    text = errors(at)
    assert f"**{t('app.sidebar.global_batch')}**" in text and "bad.yaml: training.global_batch" in text
    assert t("app.error.showing_last") in captions(at)
    assert at.metric


def test_the_rule_speaks_spanish():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["ui_lang"] = "es"
    at.query_params.update({url_codec.URL_PARAM: tokens_on_cnn_link()})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"**{t('app.sidebar.tokens', 'es')}**" in errors(at)  # "Tokens a procesar"
    assert t("app.error.showing_default", "es", name=default_name()) in captions(at)
    assert at.metric


def test_the_uploader_says_the_one_limit_and_that_uploads_are_held_in_memory():
    at = opened()
    up = at.file_uploader(key="upload")
    assert up.proto.max_upload_size_mb == UPLOAD_MAX_MB
    assert t("app.uploader.memory", mb=str(UPLOAD_MAX_MB)) in up.help
    at.radio(key="ui_lang").set_value("es").run()
    up = at.file_uploader(key="upload")
    assert t("app.uploader.memory", "es", mb=str(UPLOAD_MAX_MB)) in up.help
    assert "memoria del servidor" in up.help and f"{UPLOAD_MAX_MB} MB" in up.help
