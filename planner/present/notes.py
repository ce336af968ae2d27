"""Render engine notes (catalog key + parameters) and source details in one language; plain strings (file problems)
pass through."""

from __future__ import annotations

import math
import re
import string
from functools import cache, lru_cache

from planner.engine.notes import Note
from planner.present import fmt
from planner.present.i18n import catalog, language_of, t

# A number as the engine writes it into a string (Python's format: 1,281,167 / 0.57 / 2.46e+10).
_EN_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?")


def _localise(value: object, locale: str | None) -> object:
    """Numbers take the locale's separators (es-AR 1.234,5); nested notes render in the same language."""
    if isinstance(value, Note):
        return render_note(value, locale)
    if isinstance(value, str) and locale not in (None, "en"):
        return _text_param(value, locale)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "—"
    decimals = 0 if isinstance(value, int) else (2 if abs(value) < 10 else (1 if abs(value) < 100 else 0))
    if abs(value) >= fmt.SCIENTIFIC_FROM:
        return fmt.optional_decimals(value, locale, decimals)
    if locale in (None, "en"):  # English is built for every note: skip babel (fast path, same output)
        text = f"{value:,.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return fmt.optional_decimals(value, locale, decimals)


def number_text(text: str, locale: str | None) -> str:
    """A number the engine wrote in English ("1,281,167", "0.57", "2.46e+10") in the locale, same decimals."""
    m = _EN_NUMBER.fullmatch(text)
    if m is None or locale in (None, "en"):
        return text
    mantissa = text.split("e")[0].split("E")[0]
    shown = fmt.number(float(mantissa.replace(",", "")), locale, len(m.group(1) or ""))
    if "," not in mantissa:  # the engine wrote it without grouping (a batch, a year): so does the locale
        shown = shown.replace(fmt.number(1000, locale, 0)[1], "")
    return shown + (f"e{m.group(2)}" if m.group(2) else "")


# A duration or size the engine wrote with its unit ("12.4 ms", "0.5 GiB").
_WITH_UNIT = re.compile(r"(?P<n>" + _EN_NUMBER.pattern + r")(?P<unit>\s?(?:ms|s|h|µs|GiB|GB|MiB|MB|×|%))")


def _text_param(value: str, locale: str) -> str:
    """A text parameter of a note: a number or a number with its unit in the locale's format; a source sentence
    of the planner's in the locale's language (source_detail); anything else (names, files, citations) as is."""
    if _EN_NUMBER.fullmatch(value):
        return number_text(value, locale)
    m = _WITH_UNIT.fullmatch(value)
    if m:
        return number_text(m.group("n"), locale) + m.group("unit")
    return source_detail(value, locale)


@cache
def _money_fields(key: str) -> frozenset[str]:
    """Parameters the English note writes after a dollar sign ("${usd}"): money, shown per CLDR elsewhere."""
    text = catalog("en").get(f"note.{key}", "")
    return frozenset(field for lit, field, _, _ in string.Formatter().parse(text) if field and lit.endswith("$"))


def _money(value: object, locale: str | None) -> object:
    try:
        amount = float(str(value).replace(",", "")) if not isinstance(value, int | float) else float(value)
    except ValueError:
        return value
    text = str(value)
    digits = len(text.split(".")[1]) if isinstance(value, str) and "." in text else (0 if abs(amount) >= 100 else 2)
    return fmt.money(amount, "USD", locale, digits=digits)


def render_note(note: Note | str, locale: str | None) -> str:
    """A note in `locale` (None = English); plain strings (file problems, user text) are shown as they are."""
    if not isinstance(note, Note):
        return str(note)
    money = _money_fields(note.key) if language_of(locale) != "en" else frozenset()
    params = {k: (_money(v, locale) if k in money else _localise(v, locale)) for k, v in note.items}
    return t(f"note.{note.key}", locale, **params)


def english(note: Note | str) -> str:
    """The English text of a note: what JSON, CSV and the CLI table carry."""
    return render_note(note, "en")


# ---------------------------------------------------------------- source details

# Parameters of source_detail.* and formula_piece.* that are always numbers (a number pattern keeps a match from
# straying).
_NUMERIC = frozenset("epochs samples batch tokens seq_len n t0 c ratio limit largest smallest b1 pct ms tflops factor us "
                     "passes params bytes bw traffic flops peak eff f a mfu mb mib busbw exposed total per_direction "
                     "bidirectional nodes nic stage gather scatter layers weight p".split())
# versions, names, files (cc: a compute capability, "8.6")
_VERBATIM = frozenset({"cuda", "torch", "date", "labels", "files", "gpu", "model", "gen", "assumed", "cc"})
# one word: nvlink4, pcie4_x8, bf16, extrapolated, sdpa
_WORDS = frozenset({"kind", "precision", "used", "stage", "attention"})
# Parameters that are a comma-separated list of pieces, each said by a formula_piece.* template (the transformer
# formula's set-up, knob by knob: "torch AMP, sdpa attention (...), rmsnorm, dropout 0, checkpointing").
_LISTS = frozenset({"what"})
_DETAIL = "source_detail"  # the catalog section of whole fragments
_PIECE = "formula_piece"  # the catalog section of the pieces of a _LISTS parameter
_WORD_RX = r"[\w.-]+"
_NUMBER_RX = r"-?[\d.,]+(?:[eE][+-]?\d+)?"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if depth < 0:
            return False
    return depth == 0


@cache
def _detail_templates(section: str = _DETAIL) -> tuple[tuple[re.Pattern, str], ...]:
    """(regex of the English wording, catalog key) of one catalog section, most specific first (the longest fixed
    text)."""
    out = []
    for key, text in catalog("en").items():
        if not key.startswith(section + "."):
            continue
        parts, fixed = [], 0
        for lit, field, _, _ in string.Formatter().parse(text):
            parts.append(re.escape(lit))
            fixed += len(lit)
            if field is not None:
                parts.append(f"(?P<{field}>{_NUMBER_RX if field in _NUMERIC else _WORD_RX if field in _WORDS else '.+?'})")
        out.append((fixed, re.compile("".join(parts) + r"\Z", re.S), key))
    return tuple((rx, key) for _, rx, key in sorted(out, key=lambda x: -x[0]))


def _fragments(text: str, sep: str = "; ") -> list[str]:
    """`text` split at the `sep` ("; " or ", ") that are outside parentheses and brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == sep[0] and depth == 0 and text.startswith(sep, i):
            out.append(text[start:i])
            start = i + len(sep)
    out.append(text[start:])
    return out


def _param(name: str, value: str, locale: str, depth: int, section: str) -> str:
    if name == "kind":
        return t(f"common.source.{value}", locale) if f"common.source.{value}" in catalog("en") else value
    if name in _VERBATIM:
        return value
    if _EN_NUMBER.fullmatch(value):
        return number_text(value, locale)
    m = _WITH_UNIT.fullmatch(value)
    if m:
        return number_text(m.group("n"), locale) + m.group("unit")
    if name in _LISTS:  # each piece by itself; a piece's own parameters (the attention's why) are pieces too
        return ", ".join(_translate(piece, locale, depth + 1, _PIECE) for piece in _fragments(value, ", "))
    return _translate(value, locale, depth + 1, section)


def _fragment(text: str, locale: str, depth: int, section: str) -> str:
    for rx, key in _detail_templates(section):
        m = rx.match(text)
        if m and all(_balanced(v) for v in m.groupdict().values()) and (
                key != "source_detail.source_str" or f"common.source.{m['kind']}" in catalog("en")):
            return t(key, locale, **{k: _param(k, v, locale, depth, section) for k, v in m.groupdict().items()})
    return text


def _translate(text: str, locale: str, depth: int = 0, section: str = _DETAIL) -> str:
    if depth > 4 or not text:
        return text
    return "; ".join(_fragment(f, locale, depth, section) for f in _fragments(text))


@lru_cache(maxsize=8192)
def source_detail(detail: str, locale: str | None) -> str:
    """A Source.detail in `locale`: each fragment in the planner's wording is said in that language, its numbers in
    the locale's format; file names, citations and unknown wording stay as written. English: unchanged."""
    if language_of(locale) == "en" or not detail:
        return detail
    return _translate(detail, locale or "en")


def render_source(source: object, locale: str | None) -> str:
    """'kind: detail' of a Source in `locale` (the kind from common.source.*)."""
    kind = getattr(source, "kind", "") or ""
    detail = getattr(source, "detail", "") or ""
    key = f"common.source.{kind}"
    label = t(key, locale) if key in catalog("en") else kind
    return f"{label}: {source_detail(detail, locale)}" if detail else label
