"""Spanish everywhere: every app page and every report format, in each Spanish locale, shows no English catalog text
and no en-US number; money follows CLDR (hard-coded expectations, not the formatter that makes them)."""

from __future__ import annotations

import datetime as dt
import html
import io
import json
import re
import string
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict

from planner.present import fmt, i18n

ROOT = Path(__file__).resolve().parent.parent
SPANISH = ("es", "es-MX", "es-AR", "es-CO", "es-CL", "es-PE", "es-ES")
# Locales whose numbers are written 1.234,5 (CLDR); es-MX and es-PE write 1,234.5 like en-US.
DECIMAL_COMMA = {"es", "es-AR", "es-CO", "es-CL", "es-ES"}
PAGES = ("plan", "compare", "benchmarks", "gpus", "report", "actuals")
TODAY = dt.date(2026, 12, 1)

# Money per CLDR (babel 2.18's data, checked against CLDR 47 currencyFormats + currencySpacing): the symbol and
# its place are the locale's; a letter symbol next to a digit takes a no-break space (CLDR currencySpacing).
NBSP = "\u00a0"
MONEY = {
    "en": ("$9.52", "$12,346"),
    "es": (f"9,52{NBSP}US$", f"12.346{NBSP}US$"),
    "es-ES": (f"9,52{NBSP}US$", f"12.346{NBSP}US$"),
    "es-MX": (f"USD{NBSP}9.52", f"USD{NBSP}12,346"),
    "es-AR": ("US$9,52", "US$12.346"),
    "es-CO": ("US$9,52", "US$12.346"),
    "es-CL": ("US$9,52", "US$12.346"),
    "es-PE": (f"USD{NBSP}9.52", f"USD{NBSP}12,346"),
}

# English catalog values that are also right in a Spanish text (names, units, shared terms).
ALLOWED = {"GPU", "GPUs", "MFU", "ZeRO", "PDF", "HTML", "CSV", "YAML", "Markdown", "ok", "id", "total", "Total"}


# ---------------------------------------------------------------- what counts as English

@cache
def english_patterns() -> tuple[frozenset[str], re.Pattern, dict[str, list[re.Pattern]]]:
    """For catalog values whose English differs from their Spanish: (whole texts, a regex of the sentences' longest
    fixed pieces, piece -> the sentences' own regexes). The pieces find candidates fast; the sentence confirms."""
    en, es = i18n.catalog("en"), i18n.catalog("es")
    whole: set[str] = set()
    by_anchor: dict[str, list[re.Pattern]] = {}
    for key, value in en.items():
        if es.get(key) == value or value.strip() in ALLOWED:
            continue
        parsed = list(string.Formatter().parse(value))
        literal = "".join(lit for lit, *_ in parsed)
        if all(field is None for _, field, _, _ in parsed):
            whole.add(value.strip())
        if len(re.findall(r"[A-Za-z]{2,}", literal)) >= 4 and len(literal) >= 24:  # unmistakably English in a paragraph
            rx = "".join(re.escape(lit) + (r".{0,300}?" if field is not None else "") for lit, field, _, _ in parsed)
            anchor = max((lit for lit, *_ in parsed), key=len)
            by_anchor.setdefault(anchor, []).append(re.compile(rx, re.S))
    anchors = re.compile("|".join(re.escape(a) for a in sorted(by_anchor, key=len, reverse=True)))
    return frozenset(whole), anchors, by_anchor


def english_in(texts: list[str]) -> list[str]:
    whole, anchors, by_anchor = english_patterns()
    found = []
    for text in dict.fromkeys(t.replace("\\", "").strip() for t in texts):
        if text in whole:
            found.append(text)
            continue
        for anchor in dict.fromkeys(m.group(0) for m in anchors.finditer(text)):
            hit = next((m for rx in by_anchor[anchor] if (m := rx.search(text))), None)
            if hit is not None:
                found.append(f"{hit.group(0)[:120]!r} in {text[:200]!r}")
                break
    return found


# en-US numbers a decimal-comma locale must not show: grouped with commas, or with decimals and a unit or currency.
EN_NUMBER = re.compile(r"(?<![\w.,/-])(?:\d{1,3}(?:,\d{3})+\.\d+|\d{1,3}(?:,\d{3}){2,}|\$\d+\.\d+"
                       r"|\d+\.(?!\d{3}(?!\d))\d+\s?(?:h|GiB|GB|%|ms|s|kWh|×)(?!\w))")


LOCALE_SAMPLE = re.compile(r"\b(?:es|en)-[A-Z]{2}\b")


@cache
def citations() -> tuple[str, ...]:
    """Cited text shown as its source wrote it (a price page's own "$0.07/GB/month"): not the app's numbers."""
    import yaml

    data = yaml.safe_load((ROOT / "gpu_profiles" / "catalog" / "storage.yaml").read_text(encoding="utf-8"))
    return tuple(sorted(set(_values_of(data, "source")), key=len, reverse=True))


def _values_of(data: object, key: str) -> Iterator[str]:
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key and isinstance(v, str):
                yield v
            else:
                yield from _values_of(v, key)
    elif isinstance(data, list):
        for v in data:
            yield from _values_of(v, key)


def en_numbers(texts: list[str]) -> list[str]:
    out = []
    for text in dict.fromkeys(texts):
        text = text.replace("\\", "")
        for cited in citations():
            text = text.replace(cited, "")
        if LOCALE_SAMPLE.search(text):  # the locale picker shows each locale's own format on purpose
            continue
        for m in EN_NUMBER.finditer(text):
            out.append(f"{m.group(0)!r} in {text[max(0, m.start() - 60):m.end() + 40]!r}")
    return out


# ---------------------------------------------------------------- what a page shows

def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in {"id", "formId", "key", "icon", "type", "format", "data", "spec", "arrowData", "body"}:
                yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _raw_columns() -> set[str]:
    """Columns that show data as it is, in every language: ids (the API's keys) and a file's own keys and values."""
    es = i18n.catalog("es")
    return {v for k, v in es.items() if "(id)" in v or k.endswith((".col.option_id", ".col.id"))} | {
        es["pages.bench.col.key"], es["pages.bench.col.value"]}


def _frame_strings(raw: bytes) -> Iterator[str]:
    import pyarrow as pa

    table = pa.ipc.open_stream(raw).read_all()
    yield from (str(n) for n in table.schema.names if not str(n).startswith("__index_level"))
    for name, column in zip(table.schema.names, table.columns, strict=True):
        if name in _raw_columns():
            continue
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            yield from (v for v in column.to_pylist() if isinstance(v, str))


def _frame_numbers(proto) -> list[str]:
    """Number cells a browser would draw in its own (en-US) format: a float with a fraction, no display text."""
    import pyarrow as pa

    if proto.arrow_data.styler.display_values:
        return []
    out = []
    table = pa.ipc.open_stream(proto.arrow_data.data).read_all()
    config = json.loads(getattr(proto, "columns", "") or "{}")
    for name, column in zip(table.schema.names, table.columns, strict=True):
        if name.startswith("__index_level") or not pa.types.is_floating(column.type):
            continue
        if "format" in json.dumps(config.get(name, {})) and "localized" not in json.dumps(config.get(name, {})):
            out.append(f"column {name!r} has a printf number format: {config[name]}")
            continue
        if any(v is not None and v == v and v != int(v) for v in column.to_pylist()):
            out.append(f"column {name!r} holds raw floats")
    return out


def page_texts(at) -> tuple[list[str], list[str]]:
    """(every visible string of the page, number-format problems of its tables)."""
    texts: list[str] = []
    problems: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            kind = type(proto).__name__
            if hasattr(proto, "arrow_data"):
                texts.extend(_strings(json.loads(getattr(proto, "columns", "") or "{}")))
                shown = proto.arrow_data.styler.display_values or proto.arrow_data.data
                texts.extend(_frame_strings(shown))
                problems.extend(_frame_numbers(proto))
            elif kind == "Html":
                texts.append(_html_text(proto.body))
            elif kind == "ArrowVegaLiteChart":
                spec = json.loads(proto.spec)
                texts.extend(s for s in _titles(spec))
            else:
                texts.extend(_strings(MessageToDict(proto)))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return [t for t in texts if t.strip()], problems


# What a table shows for a missing value: "—" in every language (fmt.MISSING), never Python's or pandas' words.
DASH = "—"
NULL_WORDS = {"None", "nan", "NaN", "NaT", "<NA>", "null"}  # "none" is a value (sharding: none)


def missing_shown_as_words(at) -> list[str]:
    """Table cells a browser would draw as "None"/"nan": a null the table does not draw as "—" (Streamlit draws a
    null cell as its placeholder, "None" by default, whatever the styler's display text says), or the text of one
    (str(None), str(float("nan"))) in a cell."""
    import pyarrow as pa

    found: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "arrow_data"):
            kind = type(proto).__name__
            raw = pa.ipc.open_stream(proto.arrow_data.data).read_all()
            config = json.loads(getattr(proto, "columns", "") or "{}")
            drawn = getattr(proto, "placeholder", "") or "None"
            for name, column in zip(raw.schema.names, raw.columns, strict=True):
                shown = not str(name).startswith("__index_level") and not config.get(name, {}).get("hidden")
                if shown and column.null_count and drawn != DASH:
                    found.append(f"{kind} column {name!r}: {column.null_count} missing value(s) drawn as {drawn!r}")
            tables = [raw]
            if proto.arrow_data.styler.display_values:
                tables.append(pa.ipc.open_stream(proto.arrow_data.styler.display_values).read_all())
            for table in tables:
                for name, column in zip(table.schema.names, table.columns, strict=True):
                    words = {v for v in column.to_pylist() if isinstance(v, str) and v.strip() in NULL_WORDS}
                    if words:
                        found.append(f"{kind} column {name!r} shows {sorted(words)}")
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return list(dict.fromkeys(found))


def _html_text(doc: str) -> str:
    doc = re.sub(r"<style.*?</style>", "", doc, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", doc))


def _titles(spec: object) -> Iterator[str]:
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k in {"title", "text"} and isinstance(v, str | list):
                yield from ([v] if isinstance(v, str) else [x for x in v if isinstance(x, str)])
            else:
                yield from _titles(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from _titles(v)


# ---------------------------------------------------------------- the tests

def _open(name: str, loc: str):
    from streamlit.testing.v1 import AppTest

    from planner.inputs.scenario import load_scenario_file, scenario_to_dict
    from planner.inputs.userdata import DEFAULT_SCENARIO

    at = AppTest.from_file(str(ROOT / "ui" / f"{name}_page.py"), default_timeout=120)
    at.session_state["_locale"] = loc
    at.session_state["_base"] = {**scenario_to_dict(load_scenario_file(DEFAULT_SCENARIO)), "locale": loc}
    if name == "plan":  # every text the page can show: the detail columns and every panel open
        from ui import panels, plan_notes, plan_why

        at.session_state["table_details"] = True
        panels.open_panels(at.session_state, *plan_why.PANELS, *plan_notes.PANELS, "table_sources")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@cache
def _planned():
    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import load_scenario_file
    from planner.inputs.userdata import DEFAULT_SCENARIO

    inputs = load_inputs()
    scenario = load_scenario_file(DEFAULT_SCENARIO, list(inputs.profiles))
    return build_plan(scenario, inputs, today=TODAY), scenario


def _report_texts(loc: str) -> list[str]:
    from pypdf import PdfReader

    from planner.present.report import render_report

    plan, scenario = _planned()
    out = []
    for kind in ("markdown", "html"):
        doc = str(render_report(plan, scenario, kind, locale=loc, all_options=True, today=TODAY))
        text = _html_text(doc) if kind == "html" else doc
        out += [line for line in text.splitlines() if line.strip() and not line.startswith(("schema:", "  "))]
    pdf = bytes(render_report(plan, scenario, "pdf", locale=loc, today=TODAY))  # top options: same texts, 10× faster
    # one text: a PDF breaks sentences (and citations) across lines
    out.append(" ".join(" ".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages).split()))
    return out


@pytest.mark.parametrize("loc", SPANISH)
def test_every_page_and_report_is_spanish(loc):
    # One $TRAINPLAN_HOME for all locales (conftest's): the pages' cached inputs and plans are shared.
    problems: list[str] = []
    for name in PAGES:
        texts, tables = page_texts(_open(name, loc))
        problems += [f"{name}: English: {x}" for x in english_in(texts)]
        if loc in DECIMAL_COMMA:
            problems += [f"{name}: en-US number: {x}" for x in en_numbers(texts)]
            problems += [f"{name}: table: {x}" for x in tables]
    report = _report_texts(loc)
    problems += [f"report: English: {x}" for x in english_in(report)]
    if loc in DECIMAL_COMMA:
        problems += [f"report: en-US number: {x}" for x in en_numbers(report)]
    assert not problems, "\n".join(dict.fromkeys(problems))


@pytest.mark.parametrize("loc", ["en", "es-AR"])
@pytest.mark.parametrize("name", PAGES)
def test_no_table_shows_none_or_nan_for_a_missing_value(name, loc):
    # A GPU without a price, an unpublished peak, a figure a result file left null: "—" in every language.
    problems = missing_shown_as_words(_open(name, loc))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("loc", sorted(MONEY))
def test_money_follows_cldr(loc):
    small, large = MONEY[loc]
    assert fmt.money(9.52, "USD", loc) == small
    assert fmt.money(12345.6, "USD", loc) == large


def test_one_word_for_the_report():
    es = i18n.catalog("es")
    assert es["app.nav.report"] == es["report.page.title"] == "Informe"
    assert not [k for k, v in es.items() if "reporte" in v.lower()]
