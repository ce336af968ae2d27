"""Locale-aware formatting of numbers, money, dates and durations (babel/CLDR): es-MX 1,234.5; es-AR 1.234,5."""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from functools import cache

from babel import Locale
from babel.dates import format_date
from babel.numbers import NumberPattern, format_scientific, parse_pattern

MISSING = "—"  # a figure there is none of (no price, no memory estimate): never 0, never "None" or "nan"

# At or beyond this size a figure prints in scientific notation: a plan can multiply large inputs (years of
# training, a weak currency, many runs) into numbers whose hundreds of digits say nothing and break layouts.
SCIENTIFIC_FROM = 1e12


def _huge(x: float) -> bool:
    return abs(x) >= SCIENTIFIC_FROM


def _scientific(x: float, locale: str | None) -> str:
    """'3.84E17' in the locale's decimal separator ('3,84E17' in es-AR)."""
    return format_scientific(x, format="0.##E0", locale=babel_locale(locale))


def babel_locale(locale: str | None) -> str:
    """'es-AR' -> 'es_AR'; bare 'en' -> 'en_US' and bare 'es' -> 'es_ES' (CLDR's defaults)."""
    loc = (locale or "en").replace("-", "_")
    return {"en": "en_US", "es": "es_ES"}.get(loc, loc)


def number(x: float | None, locale: str | None = "en", digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return MISSING
    if _huge(x):
        return _scientific(x, locale)
    pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "")
    return _decimal(x, pattern, babel_locale(locale))


# babel's format_decimal and format_currency parse the locale and the pattern on every call; a plan's tables format
# thousands of numbers, so both are parsed once here and babel's own pattern.apply does the rest (the same text).
@cache
def _babel(bl: str) -> Locale:
    return Locale.parse(bl)


@cache
def _pattern(pattern: str) -> NumberPattern:
    return parse_pattern(pattern)


def _decimal(x: float, pattern: str, bl: str) -> str:
    """babel.numbers.format_decimal(x, format=pattern, locale=bl)."""
    fast = _applied(x, pattern, bl, None)
    if fast is not None:
        return fast
    return _pattern(pattern).apply(x, _babel(bl), decimal_quantization=True, group_separator=True,
                                   numbering_system="latn")


# babel's NumberPattern.apply, for the plain patterns of this module ("#,##0.00", "¤#,##0.00;¤-#,##0.00"...), with the
# locale's symbols and the pattern's affixes looked up once instead of on every call (and the currency's plural name,
# which apply works out for every figure whether the pattern shows it or not): the options table formats ~700 numbers
# per widget change. Same decimal steps as apply (str -> Decimal, normalize, quantize half-even in the default
# context, group by 3); tests/test_fmt_fast.py compares the two on every locale, pattern and a grid of values.
@cache
def _affixes(pattern: str, bl: str, currency: str | None) -> tuple[tuple[str, str], tuple[str, str], str, str] | None:
    """((positive, negative) prefixes, suffixes, decimal symbol, group symbol); None: the pattern needs babel."""
    from babel.numbers import get_currency_symbol, get_decimal_symbol, get_group_symbol

    p = _pattern(pattern)
    if p.grouping != (3, 3) or p.scale or p.exp_prec or "@" in p.pattern or p.int_prec[0] != 1 or not p.number_pattern:
        return None
    affixes = (*p.prefix, *p.suffix)
    if any("¤¤" in a for a in affixes) or (currency is None and any("¤" in a for a in affixes)):
        return None
    symbol = get_currency_symbol(currency, _babel(bl)) if currency else ""

    def text(affix: str) -> str:
        return re.sub(r"'([^']*)'", lambda m: m.group(1) or "'", affix.replace("¤", symbol))

    return ((text(p.prefix[0]), text(p.prefix[1])), (text(p.suffix[0]), text(p.suffix[1])),
            get_decimal_symbol(_babel(bl), numbering_system="latn"), get_group_symbol(_babel(bl), numbering_system="latn"))


@cache
def _quantum(digits: int) -> Decimal:
    return Decimal(10) ** -digits


def _applied(x: float, pattern: str, bl: str, currency: str | None) -> str | None:
    """NumberPattern.apply(x, locale, currency=currency, currency_digits=False) for finite x, or None (use babel)."""
    affixes = _affixes(pattern, bl, currency)
    if affixes is None or isinstance(x, bool) or not isinstance(x, int | float):
        return None
    (prefixes, suffixes, decimal_symbol, group_symbol), (low, high) = affixes, _pattern(pattern).frac_prec
    value = Decimal(str(x))
    negative = int(value.is_signed())
    try:
        rounded = abs(value).normalize().quantize(_quantum(high))
    except InvalidOperation:  # more digits than the context holds: babel says what it does
        return None
    whole, _, frac = f"{rounded:f}".partition(".")
    grouped = whole[-3:]
    whole = whole[:-3]
    while whole:
        grouped = whole[-3:] + group_symbol + grouped
        whole = whole[:-3]
    frac = (frac or "0").ljust(low, "0")
    if high == 0 or (low == 0 and int(frac) == 0):
        frac = ""
    else:
        frac = decimal_symbol + (frac.rstrip("0").ljust(low, "0") if len(frac) > low else frac)
    return prefixes[negative] + grouped + frac + suffixes[negative]


def optional_decimals(x: float, locale: str | None = "en", decimals: int = 2) -> str:
    """Up to `decimals` decimals, trailing zeros dropped: 1.3, 1.25, 12 (for numbers inside sentences)."""
    if not math.isfinite(x):
        return MISSING
    if _huge(x):
        return _scientific(x, locale)
    pattern = "#,##0" + ("." + "#" * decimals if decimals > 0 else "")
    return _decimal(x, pattern, babel_locale(locale))


def sig(x: float | None, locale: str | None = "en", figures: int = 3) -> str:
    """A number with about `figures` significant figures (step times, ratios)."""
    if x is None or not math.isfinite(x):
        return MISSING
    if x == 0:
        return number(0, locale, 0)
    digits = max(0, figures - 1 - int(math.floor(math.log10(abs(x)))))
    return number(x, locale, min(digits, 6))


def money(x: float | None, currency: str = "USD", locale: str | None = "en", digits: int | None = None) -> str:
    """Money in the locale's own CLDR pattern: es-ES "9,52 US$", es-AR "US$9,52", es-MX "USD 9.52", en "$9.52"."""
    if x is None or not math.isfinite(x):
        return MISSING
    if digits is None:
        digits = 0 if abs(x) >= 100 else 2
    bl = babel_locale(locale)
    pattern = _currency_pattern(bl, digits)
    symbol = _babel(bl).currency_symbols.get(currency, currency)  # babel.numbers.get_currency_symbol
    if _huge(x):
        grouped = "#,##0" + ("." + "0" * digits if digits else "")
        text = pattern.split(";")[0].replace(grouped, "\x00").replace("¤", symbol)
        return _spaced(text.replace("\x00", _scientific(x, locale)), symbol)
    # babel.numbers.format_currency(x, currency, format=pattern, locale=bl, currency_digits=False)
    fast = _applied(x, pattern, bl, currency)
    text = fast if fast is not None else _pattern(pattern).apply(
        x, _babel(bl), currency=currency, currency_digits=False, decimal_quantization=True, group_separator=True,
        numbering_system="latn")
    return _spaced(text, symbol)


@cache
def _currency_pattern(bl: str, digits: int) -> str:
    """The locale's standard currency pattern with `digits` decimals ("#,##0.00 ¤" -> "#,##0 ¤" for 0)."""
    standard = Locale.parse(bl).currency_formats["standard"].pattern
    return re.sub(r"#,##0(\.0+)?", "#,##0" + ("." + "0" * digits if digits else ""), standard)


def _spaced(text: str, symbol: str) -> str:
    """CLDR currencySpacing (root, the rule of every locale here): a symbol ending or starting with a letter takes a
    no-break space next to a digit ("USD 9.52", "9,52 US$"); "$" and "US$" do not. Babel leaves this rule out."""
    at = text.find(symbol)
    if at < 0 or not symbol:
        return text
    end = at + len(symbol)
    if symbol[-1].isalpha() and end < len(text) and text[end].isdigit():
        text = text[:end] + "\u00a0" + text[end:]
    if symbol[0].isalpha() and at > 0 and text[at - 1].isdigit():
        text = text[:at] + "\u00a0" + text[at:]
    return text


def date(d: dt.date | str | None, locale: str | None = "en") -> str:
    if d is None:
        return MISSING
    if isinstance(d, str):
        d = dt.date.fromisoformat(d[:10])
    return format_date(d, format="medium", locale=babel_locale(locale))


def hours(x: float | None, locale: str | None = "en") -> str:
    if x is None or not math.isfinite(x):
        return MISSING
    return number(x, locale, 1 if x < 100 else 0) + " h"


def percent(x: float | None, locale: str | None = "en", digits: int = 0) -> str:
    if x is None or not math.isfinite(x):
        return MISSING
    return number(100 * x, locale, digits) + " %"


def offer(provider: str, instance: str, region: str | None = None) -> str:
    """Where a price comes from, the same everywhere: "aws · p5.48xlarge · us-east-1" (no region: the first two)."""
    return " · ".join(x for x in (provider, instance, region) if x)


# Product-line words a GPU's name carries besides its maker and model ("NVIDIA GeForce RTX 4090 24GB"): the options
# table's GPU column is ~24 characters wide at 1,400 px, so it shows "NVIDIA RTX 4090 24GB" (the full name is in the
# plan, the reports and the memory chart).
_PRODUCT_LINES = ("GeForce ", "Tesla ", "Instinct ")


def gpu_short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090 24GB' -> 'NVIDIA RTX 4090 24GB'; 'AMD Instinct MI300X 192GB' -> 'AMD MI300X 192GB'."""
    for word in _PRODUCT_LINES:
        name = name.replace(word, "")
    return name
