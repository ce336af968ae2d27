"""Locale-aware formatting of numbers, money, dates and durations (babel/CLDR): es-MX 1,234.5; es-AR 1.234,5."""

from __future__ import annotations

import datetime as dt
import math
import re
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
    return _pattern(pattern).apply(x, _babel(bl), decimal_quantization=True, group_separator=True,
                                   numbering_system="latn")


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
    text = _pattern(pattern).apply(x, _babel(bl), currency=currency, currency_digits=False, decimal_quantization=True,
                                   group_separator=True, numbering_system="latn")
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
