"""planner/present/fmt.py formats numbers and money without babel's per-call work (_applied); it must print exactly
what babel's NumberPattern.apply prints, for every locale the app offers, every pattern fmt builds and values that
round half-even, carry into a new group, are negative, tiny or large."""

from __future__ import annotations

import random

import pytest
from babel.numbers import format_currency, format_decimal

from planner.present import fmt
from ui.i18n_ui import LOCALES

APP_LOCALES = sorted({fmt.babel_locale(loc) for group in LOCALES.values() for loc in group})
CURRENCIES = ("USD", "MXN", "ARS", "EUR", "BRL", "CLP", "COP", "PEN", "UYU", "GBP")


def values() -> list[float]:
    fixed = [0, 0.0, -0.0, 1, -1, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1.005, 2.675, 999.5, 999.95, 999.995, 1234.5,
             -1234.5, 99999.5, 999999.999, 1e-7, -1e-7, 0.0049, 0.005, 0.05, 123456789.123, 987654321987.5, 7, 12345]
    rng = random.Random(19)
    drawn = [rng.uniform(-1, 1) * 10 ** rng.uniform(-6, 11.9) for _ in range(400)]
    return fixed + drawn + [round(v, rng.randint(0, 4)) for v in drawn[:100]]


VALUES = values()
DECIMAL_PATTERNS = ["#,##0"] + ["#,##0." + "0" * d for d in range(1, 7)] + ["#,##0." + "#" * d for d in range(1, 5)]


@pytest.mark.parametrize("bl", APP_LOCALES)
def test_numbers_print_as_babel_prints_them(bl):
    for pattern in DECIMAL_PATTERNS:
        for x in VALUES:
            got = fmt._applied(x, pattern, bl, None)
            assert got == format_decimal(x, format=pattern, locale=bl), (bl, pattern, x)


@pytest.mark.parametrize("bl", APP_LOCALES)
def test_money_prints_as_babel_prints_it(bl):
    for digits in range(4):
        pattern = fmt._currency_pattern(bl, digits)
        for currency in CURRENCIES:
            for x in VALUES[::3]:
                got = fmt._applied(x, pattern, bl, currency)
                want = format_currency(x, currency, format=pattern, locale=bl, currency_digits=False)
                assert got == want, (bl, pattern, currency, x)


def test_what_the_fast_path_leaves_to_babel():
    assert fmt._applied(1.5, "#,##0.0", "en_US", None) == "1.5"
    assert fmt._applied(1.5, "¤#,##0.00", "en_US", None) is None  # a currency pattern without a currency
    assert fmt._applied(1.5, "#,##,##0.0", "en_US", None) is None  # Indian grouping
    assert fmt._applied(1.5, "0.##E0", "en_US", None) is None  # scientific
    assert fmt._applied(True, "#,##0", "en_US", None) is None


def test_cldr_money_strings_unchanged():
    """The issue's hard-coded CLDR strings, through the public functions that now take the fast path."""
    assert fmt.money(9.52, "USD", "es-ES") == "9,52\u00a0US$"
    assert fmt.money(9.52, "USD", "es-AR") == "US$9,52"
    assert fmt.money(9.52, "USD", "es-MX") == "USD\u00a09.52"
    assert fmt.money(9.52, "USD", "en") == "$9.52"
    assert fmt.money(-1234.5, "USD", "es-CL", 2) == "US$-1.234,50"
    assert fmt.number(1234567.125, "es-AR", 2) == "1.234.567,12"


def test_gpu_short_names_keep_maker_model_and_memory():
    """The options table's GPU column (fmt.gpu_short_name): product-line words out, nothing else."""
    assert fmt.gpu_short_name("NVIDIA GeForce RTX 4090 24GB") == "NVIDIA RTX 4090 24GB"
    assert fmt.gpu_short_name("NVIDIA Tesla P100 PCIe 16GB") == "NVIDIA P100 PCIe 16GB"
    assert fmt.gpu_short_name("AMD Instinct MI300X 192GB") == "AMD MI300X 192GB"
    assert fmt.gpu_short_name("NVIDIA H100 SXM5 80GB") == "NVIDIA H100 SXM5 80GB"
