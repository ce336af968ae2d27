"""One table of scenario fields (planner/inputs/fields.py): the sidebar's widgets and the scenario reader take every
bound from it, every widget is one of its rows, and every row's catalog keys exist in both languages."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from planner.inputs.errors import InputError
from planner.inputs.fields import AT_PATH, BY_KEY, FIELDS, SECTION_LABELS, SECTIONS, Field
from planner.inputs.scenario import SECTION_TYPES, parse_scenario
from planner.present import i18n
from ui import panels, sidebar

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

# Three sidebars that between them draw every widget: rows that exclude each other (spot / on-prem settings,
# epochs / tokens / reference runs) are split over them; the rest (a transformer with attention, an adapter, a local
# currency, a mean length without packing) is drawn in both.
SETUPS: dict[str, dict[str, Any]] = {
    "spot, epochs": {"tier": "spot", "work_kind": "epochs"},
    "on-prem, tokens": {"tier": "on_prem", "work_kind": "tokens"},
    "reference runs": {"work_kind": "reference_points"},
}
COMMON = {"model_name": "gpt2", "model_transformer": True, "adapter_kind": "lora", "currency": "EUR",
          "mean_tokens_per_sample": 100.0, "packing": False, "gpus_all": False}


def _walk(node: Any):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


@pytest.fixture(scope="module")
def sidebars() -> dict[str, AppTest]:
    out = {}
    for name, values in SETUPS.items():
        at = AppTest.from_file(APP, default_timeout=90)
        panels.open_panels(at.session_state, sidebar.FILE_PANEL)  # the "Scenario file" section's widgets too
        at.run()
        for key, value in {**COMMON, **values}.items():
            at.session_state[key] = value
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        out[name] = at
    return out


@pytest.fixture(scope="module")
def number_widgets(sidebars) -> dict[str, tuple[float, float]]:
    """Every number widget the sidebars drew: key -> (min, max) as Streamlit holds them."""
    out: dict[str, tuple[float, float]] = {}
    for at in sidebars.values():
        for w in at.sidebar.number_input:
            assert out.get(w.key, (w.min, w.max)) == (w.min, w.max), w.key
            out[w.key] = (w.min, w.max)
    return out


def test_the_setups_draw_every_number_row(number_widgets):
    rows = {f.key for f in FIELDS if f.widget == "number"}
    assert set(number_widgets) == rows, set(number_widgets) ^ rows


@pytest.mark.parametrize("key", sorted(f.key for f in FIELDS if f.widget == "number"))
def test_the_widget_shows_its_rows_bounds(number_widgets, key):
    row = BY_KEY[key]
    assert number_widgets[key] == (row.minimum, row.maximum)


def test_every_sidebar_widget_comes_from_a_table_row(sidebars):
    drawn = {el.key for at in sidebars.values() for el in _walk(at.sidebar) if getattr(el, "key", None)}
    assert drawn - set(sidebar.UI_WIDGETS) == set(BY_KEY), (drawn - set(sidebar.UI_WIDGETS)) ^ set(BY_KEY)
    assert set(sidebar.UI_WIDGETS) <= drawn  # the allowance names widgets that exist, not stale keys


# ---------------------------------------------------------------- the reader at each bound

BASE = {"schema": "trainplan.scenario/1", "model": {"name": "gpt2"}, "training": {"global_batch": 64},
        "workload": {"dataset_samples": 1000, "epochs": 1}}
SHAPE = {"layers": 1, "hidden": 1, "heads": 1, "seq_len": 1, "vocab": 1}
# What a field needs around it to be read at all (the reader's cross-field rules), by path.
CONTEXT: dict[str, dict[str, Any]] = {
    # heads and key/value heads up to 10,000 must divide the hidden size and the heads
    "model.transformer.heads": {"model.transformer": {**SHAPE, "hidden": 1_000_000}},
    "model.transformer.kv_heads": {"model.transformer": {**SHAPE, "hidden": 1_000_000, "heads": 10_000}},
    "training.micro_batch": {"training.global_batch": 10**9},  # a micro-batch divides the batch
    "training.frozen_fraction": {"training.adapter": {"kind": "lora"}},  # all frozen: an adapter trains
    "workload.tokens": {"workload.epochs": None},  # one of epochs or tokens
    "workload.padded_tokens_per_sample": {"workload.mean_tokens_per_sample": 1.0},  # padding needs a mean
    "hardware.gpu_counts": {"training.global_batch": 100_000},  # the batch splits over every count
    "pricing.exchange_rate": {"pricing.currency": "EUR"},  # USD per USD is 1
}


def _put(d: dict, path: str, value: Any) -> None:
    *parents, name = path.split(".")
    for part in parents:
        d = d.setdefault(part, {})
    if value is None:
        d.pop(name, None)
    else:
        d[name] = value


def _scenario(f: Field, value: float) -> dict:
    d = copy.deepcopy(BASE)
    if f.path.startswith("model.transformer."):
        _put(d, "model.transformer", dict(SHAPE))
    if f.path.startswith("training.adapter."):
        _put(d, "training.adapter", {"kind": "lora"})
    for path, v in CONTEXT.get(f.path, {}).items():
        _put(d, path, copy.deepcopy(v))
    _put(d, f.path, [value] if f.many else value)
    return d


def _beyond(f: Field, x: float, direction: float) -> float:
    """The nearest value past bound x: the next integer, or the next float."""
    return x + direction if f.type is int else math.nextafter(x, direction * math.inf)


NUMBERS = [f for f in FIELDS if f.type in (int, float) and not f.switch]


def test_every_number_row_has_both_bounds():
    assert [f.path for f in NUMBERS if f.minimum is None or f.maximum is None] == []
    assert len(NUMBERS) >= 40  # the table's numbers, not an empty list


@pytest.mark.parametrize("f", NUMBERS, ids=[f.path for f in NUMBERS])
def test_the_reader_takes_each_bound_and_refuses_just_beyond(f):
    assert f.minimum is not None and f.maximum is not None
    for value in (f.minimum, f.maximum):
        parse_scenario(_scenario(f, value))  # accepted
    for value in (_beyond(f, f.minimum, -1), _beyond(f, f.maximum, +1)):
        with pytest.raises(InputError) as err:
            parse_scenario(_scenario(f, value))
        assert err.value.field == (f"{f.path}[0]" if f.many else f.path), (value, str(err.value))


def test_the_issue_s_two_disagreements_are_one_bound_now():
    """early_stop_fraction was (0.01, 1) in the widget and (0, 1] in the reader; onprem_years (0.1, 50) vs (0, 50]."""
    assert (AT_PATH["workload.early_stop_fraction"].minimum, AT_PATH["workload.early_stop_fraction"].maximum) \
        == (0.01, 1.0)
    assert (AT_PATH["pricing.on_prem.lifetime_years"].minimum, AT_PATH["pricing.on_prem.lifetime_years"].maximum) \
        == (0.1, 50.0)
    with pytest.raises(InputError):
        parse_scenario(_scenario(AT_PATH["workload.early_stop_fraction"], 0.005))


def test_each_bound_moved_off_an_exclusive_zero_says_why():
    """Rows whose smallest value was "> 0" start at a sensible inclusive value, and the row says which and why."""
    moved = {f.path for f in FIELDS if f.bound_note}
    assert "workload.early_stop_fraction" in moved and "pricing.on_prem.lifetime_years" in moved
    for f in FIELDS:
        if f.bound_note:
            assert f.bound_note.startswith("was > 0: ") and f.minimum and f.minimum > 0, f.path


# Scenario fields without a row of their own: sub-sections and lists (their reader names their parts), and
# data_location (a provider id or "local": a pattern, not a choice list).
STRUCTURED = {"model", "training", "workload", "hardware", "pricing", "constraints", "model.transformer",
              "training.adapter", "workload.reference_points", "workload.data_location", "hardware.gpus",
              "pricing.regions", "pricing.spot", "pricing.on_prem"}


def test_every_scenario_dataclass_field_has_a_row():
    """The reader reads a section's rows without naming them: a dataclass field without a row would be accepted
    in a file (its key is known) and silently left at its default."""
    rows = {f.path for f in FIELDS}
    missing = [path for section, cls in SECTION_TYPES.items() for name in cls.__dataclass_fields__
               if (path := f"{section}.{name}" if section else name) not in rows | STRUCTURED]
    assert missing == []
    assert {p for p in STRUCTURED if "." in p} <= {f"{s}.{n}" for s, c in SECTION_TYPES.items() if s
                                                    for n in c.__dataclass_fields__}


# ---------------------------------------------------------------- catalog keys

def _catalog_keys(f: Field) -> list[str]:
    keys = [k for k in (f.label_key, f.help, f.placeholder) if k]
    if f.choice_labels:
        keys += [f"{f.choice_labels}.{v}" for v in f.choices or f.offered]
    return keys


@pytest.mark.parametrize("lang", ["en", "es"])
def test_every_rows_label_and_help_keys_exist_in_the_catalog(lang):
    catalog = i18n.catalog(lang)
    widgets = [f for f in FIELDS if f.key]
    assert all(f.label_key for f in widgets)
    missing = [(f.path, k) for f in widgets for k in _catalog_keys(f) if k not in catalog]
    missing += [(section, k) for section, k in SECTION_LABELS.items() if k not in catalog]
    assert missing == []
    assert set(SECTION_LABELS) == set(SECTIONS) - {"top"}


def test_a_row_with_a_help_key_shows_it(sidebars):
    """The help text reaches the widget: the global batch's help, in the sidebar, is the catalog's."""
    at = next(iter(sidebars.values()))
    assert at.number_input(key="global_batch").help == i18n.catalog("en")["app.sidebar.global_batch_help"]
