"""Reasons in result files as data: vocab keys, the catalogs, the reader of keys and of files written before them."""

from __future__ import annotations

import copy
import json
import string
from pathlib import Path

import pytest

from planner.inputs.reasons import LEGACY_SENTENCES, legacy_parts, reason_fields
from planner.inputs.resultfile import parse_result, scan_results
from planner.present import i18n
from planner.present.result_views import measurement_rows, reason_text, unmeasured_rows
from planner.vocab import BENCH_REASONS, Reason, reason_params
from tests.fixtures.make_fixtures import measurement_v2, result_v2

ROOT = Path(__file__).resolve().parents[1]


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def _sample(key: str) -> dict[str, object]:
    """Parameters for a key: numbers where bench writes numbers, words elsewhere."""
    numbers = {"trials", "ran", "failed", "limit", "batch", "n", "processes", "nodes", "per_node", "steps", "gpu",
               "iqr_pct", "limit_pct"}
    return {p: (1024 if p in numbers else f"<{p}>") for p in reason_params(key)}


@pytest.mark.parametrize("key", sorted(BENCH_REASONS))
def test_every_reason_key_has_english_and_spanish_text_with_its_parameters(key):
    en, es = i18n.catalog("en"), i18n.catalog("es")
    assert en[f"bench_reason.{key}"] == BENCH_REASONS[key]  # the catalog says what bench writes, word for word
    assert _fields(es[f"bench_reason.{key}"]) == set(reason_params(key)), key
    if BENCH_REASONS[key] != "{error}":
        assert es[f"bench_reason.{key}"] != BENCH_REASONS[key], key


def test_the_catalogs_hold_no_reason_the_vocabulary_does_not_own():
    for lang in ("en", "es"):
        keys = {k.removeprefix("bench_reason.") for k in i18n.catalog(lang) if k.startswith("bench_reason.")}
        assert keys == set(BENCH_REASONS), lang


@pytest.mark.parametrize("key", sorted(BENCH_REASONS))
def test_the_courtesy_text_is_the_english_catalog_rendering(key):
    params = _sample(key)
    fields = reason_fields(Reason(key, **params))
    assert fields["reason_keys"] == [{"key": key, "params": params}]
    assert fields["reason"] == i18n.t(f"bench_reason.{key}", "en", **params)


def test_a_reason_refuses_an_unknown_key_and_wrong_parameters():
    with pytest.raises(ValueError):
        Reason("no_such_reason")
    with pytest.raises(ValueError):
        Reason("no_precision_peak", profile="t4-16gb")
    with pytest.raises(ValueError):
        Reason("not_measured", extra=1)


def test_the_legacy_table_names_real_keys_with_their_parameters():
    for sentence, key in LEGACY_SENTENCES.items():
        assert key in BENCH_REASONS and _fields(sentence) == set(reason_params(key)), sentence


def _file(row: dict, **top) -> dict:
    data = result_v2("resnet50", "h100-sxm-80gb", [row])
    data.update(top)
    return data


def test_keys_are_read_and_render_in_the_locale_with_its_number_format():
    row = measurement_v2("bf16", 64, 0.03, None)
    row.update(reason_fields(Reason("search_stopped", trials=12, ran=1024, failed=2048)))
    m = parse_result(_file(row), "keys.json").measurements[0]
    (part,) = m.reason_parts
    assert (part.key, dict(part.params)) == ("search_stopped", {"trials": 12, "ran": 1024, "failed": 2048})
    es = reason_text(m.reason_parts, "es")
    assert es == i18n.t("bench_reason.search_stopped", "es", trials="12", ran="1.024", failed="2.048")
    assert "1.024" in es and "2.048" in es and "1,024" in reason_text(m.reason_parts, "en")


@pytest.mark.parametrize("keys, field, words", [
    ([{"key": "no_such_reason", "params": {}}], "measurements[0].reason_keys[0].key", "reason key"),
    ([{"key": "no_precision_peak", "params": {"profile": "t4-16gb"}}], "measurements[0].reason_keys[0].params",
     "precision"),
    ([{"key": "not_measured", "params": {"extra": 1}}], "measurements[0].reason_keys[0].params", "none"),
])
def test_an_unknown_key_or_a_wrong_parameter_is_a_named_problem_and_the_text_still_shows(tmp_path, keys, field, words):
    row = measurement_v2("bf16", 64, 0.03, None)
    row.update(reason="written by a newer bench", reason_keys=keys)
    rf = parse_result(_file(row), "new.json")
    (problem,) = rf.problems
    assert "new.json" in problem and field in problem and words in problem
    m = rf.measurements[0]
    assert m.reason == "written by a newer bench" and [p.key for p in m.reason_parts] == [None]
    assert measurement_rows(rf, "es")[0]["reason"] == "written by a newer bench"
    # the folder scan keeps the file and lists its problem with the bad files'
    (tmp_path / "new.json").write_text(json.dumps(_file(row)), encoding="utf-8")
    good, problems = scan_results(tmp_path)
    assert len(good) == 1 and len(problems) == 1 and field in problems[0]


def test_an_unmeasured_key_for_a_field_with_no_reason_is_a_problem():
    row = measurement_v2("bf16", 64, 0.03, None)
    row["unmeasured_keys"] = {"power_w": [{"key": "not_measured", "params": {}}]}
    rf = parse_result(_file(row), "extra.json")
    assert len(rf.problems) == 1 and "unmeasured_keys.power_w" in rf.problems[0]


def test_a_shipped_file_without_keys_reads_and_shows_spanish_through_the_legacy_table():
    path = ROOT / "results" / "traced" / "gpt2-20261202T121636Z.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert "unmeasured_keys" not in data["measurements"][0]  # written before keys (never edited)
    rf = parse_result(copy.deepcopy(data), str(path))
    assert rf.problems == ()
    m = rf.measurements[0]
    assert {f: [p.key for p in parts] for f, parts in m.unmeasured_parts.items()} == {
        f: [LEGACY_SENTENCES[text]] for f, text in data["measurements"][0]["unmeasured"].items()}
    rows = {row["field"]: row["reason"] for row in unmeasured_rows(rf, "es-AR")}
    assert rows["step_time_s"] == i18n.t("bench_reason.no_gpu_kernels_time", "es")
    assert rows["loss_finite"] == i18n.t("bench_reason.fake_values", "es")


def test_legacy_sentences_with_fields_keep_the_values_they_filled_in():
    (part,) = legacy_parts("not measured: a run recorded by hand on 2026-11-30 gives only its step time")
    assert (part.key, dict(part.params)) == ("recorded_by_hand", {"date": "2026-11-30"})
    assert reason_text((part,), "es") == i18n.t("bench_reason.recorded_by_hand", "es", date="2026-11-30")
