"""fpdf2's line breaker, measured once per character instead of once per character per character.

While it fills a line, fpdf2 (2.8.9, fpdf/line_break.py) asks `CurrentLine.width` before every character it adds,
and that property re-measures every fragment of the line from its first character (`Fragment.get_width` sums the
font's character widths): O(n²) per line. In a plan report that is ~35,000 calls and ~0.11 s of a ~0.38 s PDF
(perf/report_speed.py; measured with a timer around the property).

A line's fragments only grow at their end while it is built (`CurrentLine.add_character` appends to
`Fragment.characters`; `Fragment.trim` and every other change assign a new list), so the running sum of a
fragment's character widths is kept with the list it was summed over, and only characters appended since are
added. The sum is taken in the same order with the same operations as fpdf2's `TTFFont.get_text_width`, so every
width, every line break and every PDF byte are what fpdf2 gives (tests/test_report.py compares the PDFs of every
shipped scenario with and without this). Fragments this does not cover (text shaping, character spacing or
stretching, symbol fonts, fpdf2's subclasses, core fonts) are measured by fpdf2 itself.
"""

from __future__ import annotations

from typing import Any

import fpdf
from fpdf import line_break
from fpdf.fonts import TTFFont

FPDF_VERSION = "2.8.9"  # the version whose line_break.py this was written against (requirements pin it)
_CACHE = "_trainplan_width_sum"  # on a Fragment: (the characters list summed, its length then, the sum)

_fpdf_width = line_break.CurrentLine.width


def _fragment_width(fragment: Any, initial_cs: bool) -> float:
    """`fragment.get_width(initial_cs=...)`, from the kept sum plus the characters appended since."""
    if type(fragment) is not line_break.Fragment or fragment.text_shaping_parameters \
            or fragment.char_spacing != 0 or fragment.font_stretching != 100:
        return float(fragment.get_width(initial_cs=initial_cs))
    font = fragment.font
    if type(font) is not TTFFont or font.is_symbol:
        return float(fragment.get_width(initial_cs=initial_cs))
    chars = fragment.characters
    kept = fragment.__dict__.get(_CACHE)
    if kept is not None and kept[0] is chars and kept[1] <= len(chars):
        total, start = kept[2], kept[1]
    else:
        total, start = 0, 0
    cw = font.cw
    for c in chars[start:]:  # sum() over a generator adds left to right from 0: the same float, step by step
        total += cw[ord(c)]
    fragment.__dict__[_CACHE] = (chars, len(chars), total)
    size_pt = fragment.font_size_pt
    if size_pt > font.biggest_size_pt:  # what get_text_width records on the way
        font.biggest_size_pt = size_pt
    return float(total * size_pt * 0.001 / fragment.k)


def _width(self: Any) -> float:
    width: float = 0
    for i, fragment in enumerate(self.fragments):
        width += _fragment_width(fragment, i > 0)
    return width


def install() -> None:
    """Use the kept sums in fpdf2's CurrentLine.width; idempotent. Another fpdf2 version keeps its own (the
    internals this relies on may have changed), so an upgrade can never change a report's layout."""
    if fpdf.__version__ == FPDF_VERSION:
        line_break.CurrentLine.width = property(_width)  # type: ignore[method-assign,assignment]


def uninstall() -> None:
    """fpdf2's own CurrentLine.width again (tests compare both)."""
    line_break.CurrentLine.width = _fpdf_width  # type: ignore[method-assign]
