"""Say engine notes and sources in one language: each is a catalog key with raw parameters (numbers, ids, nested
notes and sources), rendered from the locale's catalog; plain strings (file problems, user text) pass through.

Nothing here reads text the engine wrote: a number is formatted from its raw value with the format spec of the
English catalog's text (`{t0:.3g}`, `{n:,}`, or a named one: `count`, `duration`), so every language shows the same
digits in its own separators, and the translations carry no specs.
"""

from __future__ import annotations

import math
import string
from functools import cache

from planner.engine.estimates import PriceChoice, Source
from planner.engine.notes import Note
from planner.present import fmt
from planner.present.i18n import catalog, language_of, t

_DETAIL = "source_detail"  # the catalog section of a source's parts (planner.engine.estimates.detail)


# ---------------------------------------------------------------- numbers

def _python_text(value: float, spec: str) -> str:
    """The number as the English catalog's spec writes it: Python's format, or a named format: "count" (grouped
    from 100 up, three significant digits below) and "duration" (seconds as "41 ms" or "2.5 s", three significant
    digits)."""
    if spec == "count":
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    if spec == "duration":
        return f"{value * 1e3:.3g} ms" if value < 1.0 else f"{value:.3g} s"
    return format(value, spec)


def number_in(value: float, spec: str, locale: str | None) -> str:
    """A raw number in the locale, with the decimals, grouping and notation the English spec gives it."""
    text = _python_text(value, spec)
    if language_of(locale) == "en" or not math.isfinite(value):
        return text
    # The English digits decide (Python rounds the binary value; babel would round the decimal one half-even).
    unit = ""
    if spec == "duration":
        text, unit = text.split(" ")
        unit = " " + unit
    elif text.endswith("%"):
        text, unit = text[:-1], "%"
    mantissa, exp_mark, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    shown = fmt.number(float(mantissa.replace(",", "")), locale, decimals)
    if "," not in mantissa:  # the English spec groups no thousands (a batch, a year): neither does the locale
        shown = shown.replace(fmt.number(1000, locale, 0)[1], "")
    return shown + (f"e{exponent}" if exp_mark else "") + unit


def _plain_number(value: float, locale: str | None) -> str:
    """A note's number with no spec: whole numbers grouped, others to 2, 1 or 0 decimals by size, trailing zeros
    dropped, in the locale's separators (es-AR 1.234,5)."""
    if isinstance(value, float) and not math.isfinite(value):
        return fmt.MISSING
    decimals = 0 if isinstance(value, int) else (2 if abs(value) < 10 else (1 if abs(value) < 100 else 0))
    if abs(value) >= fmt.SCIENTIFIC_FROM:
        return fmt.optional_decimals(value, locale, decimals)
    if locale in (None, "en"):  # English is built for every note: skip babel (fast path, same output)
        text = f"{value:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return fmt.optional_decimals(value, locale, decimals)


def _money(value: float, spec: str, locale: str | None) -> str:
    """An amount the English note writes after a dollar sign, as the locale writes USD (CLDR)."""
    if spec:
        text = _python_text(value, spec)
        digits = len(text.split(".")[1]) if "." in text else 0
    else:
        digits = 0 if abs(value) >= 100 else 2
    return fmt.money(float(value), "USD", locale, digits=digits)


# ---------------------------------------------------------------- templates

@cache
def _template(key: str, lang: str) -> tuple[tuple[str, str | None, str, bool], ...]:
    """(literal, field, English spec, money) of a catalog text: the spec is always the English text's, and a field
    the English text writes after "$" is money."""
    english_fields = {f: (spec or "", lit.endswith("$")) for lit, f, spec, _ in
                      string.Formatter().parse(catalog("en")[key]) if f}
    text = catalog(lang).get(key) or catalog("en")[key]
    return tuple((lit, f, *english_fields.get(f, ("", False))) if f else (lit, None, "", False)
                 for lit, f, _, _ in string.Formatter().parse(text))


def _param_text(value: object, spec: str, locale: str | None) -> str:
    """One parameter of a part or a note in `locale`."""
    if isinstance(value, Source):
        return _nested_source(value, locale)
    if isinstance(value, Note):
        return render_part(value, locale) if "." in value.key else render_note(value, locale)
    if isinstance(value, tuple | list):  # fragments of a detail are said as a detail is ("; "); anything else, a list
        sep = "; " if value and all(isinstance(v, Note) and v.key.startswith(_DETAIL + ".") for v in value) else ", "
        return sep.join(_param_text(v, spec, locale) for v in value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return format(value, spec) if spec else str(value)
    return number_in(value, spec, locale)


def _render(key: str, params: dict[str, object], locale: str | None, *, note: bool) -> str:
    lang = language_of(locale)
    out = []
    for literal, field, spec, money in _template(key, lang):
        out.append(literal)
        if field is None:
            continue
        value = params[field]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if money and number and lang != "en":
            out.append(_money(value, spec, locale))  # type: ignore[arg-type]
        elif note and number and not spec:
            out.append(_plain_number(value, locale))  # type: ignore[arg-type]
        else:
            out.append(_param_text(value, spec, locale))
    return "".join(out)


# ---------------------------------------------------------------- notes and sources

def render_note(note: Note | str, locale: str | None) -> str:
    """A note (catalog text note.<key>) in `locale` (None = English); plain strings (file problems, user text) are
    shown as they are."""
    if not isinstance(note, Note):
        return str(note)
    return _render(f"note.{note.key}", dict(note.items), locale, note=True)


def english(note: Note | str) -> str:
    """The English text of a note: what JSON, CSV and the CLI table carry."""
    return render_note(note, "en")


def render_part(part: Note, locale: str | None) -> str:
    """One part of a source (a fully named catalog key: source_detail.*, formula_piece.*) in `locale`."""
    return _render(part.key, dict(part.items), locale, note=False)


def _nested_source(source: Source, locale: str | None) -> str:
    """A source inside another one's detail: its kind as the engine names it (English) or the catalog's label."""
    kind = source.kind if language_of(locale) == "en" else t(f"common.source.{source.kind}", locale)
    detail = detail_text(source, locale)
    return f"{kind}: {detail}" if detail else kind


def parts_text(parts: tuple[Note, ...], locale: str | None) -> str:
    """Parts said in order, separated by '; ' (a source's detail, the recommendation's reason)."""
    return "; ".join(render_part(p, locale) for p in parts)


def price_source_text(price: PriceChoice, locale: str | None) -> str:
    """Where a price comes from: its derivation said in `locale` (on-prem), else the quote's citation as written."""
    return parts_text(price.derivation, locale) if price.derivation else price.source


def detail_text(source: Source, locale: str | None) -> str:
    """How a figure was obtained, in `locale`: its parts in order, separated by '; '."""
    return parts_text(source.parts, locale)


def source_text(source: Source) -> str:
    """'kind: detail' in English with the engine's kind names: what JSON, CSV and the CLI carry."""
    return _nested_source(source, "en")


def render_source(source: Source, locale: str | None) -> str:
    """'kind: detail' of a Source in `locale` (the kind's label from common.source.*)."""
    key = f"common.source.{source.kind}"
    label = t(key, locale) if key in catalog("en") else source.kind
    detail = detail_text(source, locale)
    return f"{label}: {detail}" if detail else label
