"""The report as PDF (fpdf2): real text in a shipped Unicode font (DejaVu Sans), with system fonts found at run time
for the characters it lacks (CJK...), PNG charts, A4 or Letter."""

from __future__ import annotations

import dataclasses
import io
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from fpdf import FPDF
from fpdf.fonts import FontFace, TTFFont

from planner.present.i18n import t
from planner.present.report import fpdf_speed, system_fonts
from planner.present.report.model import ReportModel, Table
from planner.present.report.system_fonts import MissingGlyphs

fpdf_speed.install()  # fpdf2's line widths from kept sums: the same PDF, ~0.07 s sooner (fpdf_speed.py)

FONTS_DIR = Path(__file__).resolve().parent / "fonts"
FONT = "DejaVu"
ACCENT = (11, 83, 148)
MUTED = (82, 96, 109)
LINE = (217, 226, 236)
HEAD_FILL = (236, 241, 246)
PRIMARY_FILL = (227, 240, 251)
RUNNER_FILL = (242, 247, 238)
RISK_FILL = (253, 243, 236)
PX_TO_MM = 25.4 / 96  # a chart's CSS pixel at 96 dpi

# Relative widths of the options table's columns (option, precision, batch, memory, step, source, time, [local
# cost,] USD cost, price, role).
# Column widths in % of the page (Option, Precision, Batch, Memory, Step, Source, Time, [Cost local], Cost, USD/GPU-h,
# Role): wide enough that "extrapolated" in bold and the "USD/GPU-h" header do not break mid-word.
OPTION_WIDTHS = {10: (19, 9, 8, 10, 7, 12, 16, 9, 11, 15), 11: (14, 9, 8, 10, 7, 12, 14, 9, 10, 11, 13)}
PRICE_WIDTHS = (15, 9, 13, 9, 9, 11, 11, 28)
RECORDED_WIDTHS = (13, 30, 10, 13, 13, 9, 12)
WHAT_FITS_WIDTHS = (30, 12, 15, 15, 12, 16)


MAX_LISTED_GLYPHS = 8  # missing characters named in the message, then "..."


class _Pdf(FPDF):
    footer_text = ""

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(FONT, "", 7)
        self.set_text_color(*MUTED)
        self.cell(0, 5, f"{self.footer_text}  ·  {self.page_no()}/{{nb}}", align="C")
        self.set_text_color(0, 0, 0)


def render_pdf(model: ReportModel, paper: str = "A4", chart_pngs: dict[str, bytes] | None = None, *,
               font_dirs: Sequence[Path] | None = None) -> bytes:
    """The PDF. Characters DejaVu Sans lacks are drawn with fonts found on this machine (system_fonts: fontconfig,
    or the font files under `font_dirs` / the common font folders); any left undrawn are named on page 1 and in a
    MissingGlyphs warning."""
    from planner.present.report.images import PNG_SCALE, png_size, to_png

    pdf = _Pdf(format=paper.lower() if paper == "A4" else "letter", unit="mm")
    pdf.footer_text = model.footer
    pdf.add_font(FONT, "", str(FONTS_DIR / "DejaVuSans.ttf"))
    pdf.add_font(FONT, "B", str(FONTS_DIR / "DejaVuSans-Bold.ttf"))
    undrawn = _add_system_fonts(pdf, model, font_dirs)
    pdf.set_title(f"{model.title}: {model.scenario_name}")
    pdf.set_author("trainplan")
    pdf.set_creator("trainplan")
    pdf.set_lang(model.lang)
    pdf.set_margins(15, 14, 15)
    pdf.set_auto_page_break(True, margin=16)
    pdf.add_page()
    w = Writer(pdf)

    pdf.set_font(FONT, "", 9)
    pdf.set_text_color(*ACCENT)
    pdf.cell(0, 5, model.title.upper(), new_x="LMARGIN", new_y="NEXT", align="L")
    pdf.set_text_color(0, 0, 0)
    pdf.set_font(FONT, "B", 17)
    pdf.multi_cell(0, 8, model.scenario_name, new_x="LMARGIN", new_y="NEXT", align="L")
    w.small(model.generated)
    pdf.set_draw_color(*ACCENT)
    pdf.set_line_width(0.8)
    pdf.line(pdf.l_margin, pdf.get_y() + 1, pdf.w - pdf.r_margin, pdf.get_y() + 1)
    pdf.ln(3)
    if undrawn:
        w.risk(t("report.pdf_fonts.title", model.locale), undrawn)
        warnings.warn(MissingGlyphs(undrawn), stacklevel=2)

    h = model.headings
    w.heading(h["summary"])
    w.key_figures(model.key_figures)
    if model.attention:  # what to check before deciding: on page 1, not only among the risks at the end
        w.risk(model.headings["attention"], "\n".join(f"• {s}" for s in model.attention))
    for sentence in model.summary:
        w.para(sentence)

    w.heading(h["options"])
    w.para(model.options_intro, size=8.5)
    w.table(model.options, OPTION_WIDTHS.get(len(model.options.headers)), size=6.5)
    w.small(model.options_legend)
    if model.what_fits is not None:
        w.subheading(t("what_fits.title", model.locale))
        w.para(model.what_fits_intro, size=8.5)
        w.table(model.what_fits, WHAT_FITS_WIDTHS, size=6.5)

    if model.charts:
        pngs = chart_pngs or {}
        images = []
        for c in model.charts:
            png = pngs.get(c.key)
            if png is None:
                if c.spec is None:
                    continue  # a words-only chart (built for Markdown): nothing to draw
                png = to_png(c.spec)
            px_w, px_h = png_size(png)
            width = min(pdf.epw, px_w / PNG_SCALE * PX_TO_MM)
            images.append((c, png, width, width * px_h / px_w))
        if images and pdf.get_y() + 14 + images[0][3] > pdf.page_break_trigger:
            pdf.add_page()  # keep the heading with its first chart
        w.heading(h["charts"])
        for c, png, width, height in images:
            if pdf.get_y() + height + 12 > pdf.page_break_trigger:
                pdf.add_page()
            pdf.image(io.BytesIO(png), x=pdf.l_margin, w=width, h=height, alt_text=c.alt_text, title=c.title)
            w.small(c.alt_text)
            pdf.ln(2)
    else:
        w.heading(h["charts"])
        w.para(model.charts_intro)

    w.heading(h["sources"])
    w.subheading(t("report.sub.assumptions", model.locale))
    for a in model.assumptions:
        w.bullet(a)
    w.subheading(t("report.sub.exchange", model.locale))
    w.para(model.exchange)
    if model.prices.rows:
        w.subheading(t("report.sub.prices", model.locale))
        w.table(model.prices, PRICE_WIDTHS, size=6.5)
    if model.option_sources:
        w.subheading(t("report.sub.option_sources", model.locale))
        for label, lines in model.option_sources:
            w.para(label, bold=True, size=8.5)
            for line in lines:
                w.bullet(line, size=7.5)
    if model.recorded is not None:
        w.subheading(t("report.sub.recorded", model.locale))
        w.para(model.recorded_intro, size=8.5)
        w.table(model.recorded, RECORDED_WIDTHS, size=6.5)

    w.heading(h["risks"])
    if model.risks:
        for r in model.risks:
            w.risk(r.title, r.text)
    else:
        w.para(model.no_risks)

    w.heading(h["reproducibility"])
    w.pairs(model.reproducibility)
    w.subheading(t("report.sub.scenario_yaml", model.locale))
    w.code(model.scenario_yaml)
    return bytes(pdf.output())


def _add_system_fonts(pdf: FPDF, model: ReportModel, font_dirs: Sequence[Path] | None) -> str:
    """Adds fallback fonts for the report's characters that DejaVu Sans (regular or bold) lacks; returns the
    message naming those no font found draws ("" when every character is drawn). Nothing is searched when DejaVu
    draws everything (every report in Latin, Greek or Cyrillic script)."""
    shipped = [font.cmap for key in (FONT.lower(), FONT.lower() + "B") if isinstance(font := pdf.fonts[key], TTFFont)]
    used = {ord(c) for text in _texts(model) for c in text}
    lacking = system_fonts.drawable(c for c in used if not all(c in cmap for cmap in shipped))
    if not lacking:
        return ""
    found = system_fonts.find_fonts(lacking, dirs=font_dirs)
    families = []
    for i, face in enumerate(found.fonts):
        family = f"system{i}"  # lowercase letters and digits: fpdf2 strips "B" and "I" from keys to find a family
        pdf.add_font(family, "", str(face.path), collection_font_number=face.index)
        families.append(family)
    if families:  # bold text takes the regular face: a CJK face is rarely installed in bold
        pdf.set_fallback_fonts(families, exact_match=False)
    if not found.missing:
        return ""
    listed = [f"U+{c:04X}" for c in sorted(found.missing)[:MAX_LISTED_GLYPHS]]
    more = "…" if len(found.missing) > MAX_LISTED_GLYPHS else ""
    return t("report.pdf_fonts.missing", model.locale, chars=", ".join(listed) + more, n=len(found.missing),
             searched=found.searched or "-")


def _texts(value: object) -> Iterator[str]:
    """Every string the PDF may draw from the report model (chart specs are drawn into PNGs by vl-convert)."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.name != "spec":
                yield from _texts(getattr(value, f.name))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _texts(k)
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts(v)


class Writer:
    """Small layout helpers over fpdf2 (text never goes through markdown/HTML parsing: user text stays text)."""

    def __init__(self, pdf: FPDF) -> None:
        self.pdf = pdf

    def heading(self, text: str) -> None:
        pdf = self.pdf
        if pdf.get_y() > pdf.page_break_trigger - 30:
            pdf.add_page()
        pdf.ln(3)
        pdf.set_font(FONT, "B", 13)
        pdf.set_text_color(*ACCENT)
        pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.set_draw_color(*LINE)
        pdf.set_line_width(0.3)
        pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
        pdf.set_text_color(0, 0, 0)
        pdf.ln(2)

    def subheading(self, text: str) -> None:
        self.pdf.ln(1)
        self.para(text, bold=True, size=10)

    def para(self, text: str, bold: bool = False, size: float = 9.5) -> None:
        self.pdf.set_font(FONT, "B" if bold else "", size)
        self.pdf.multi_cell(0, size * 0.5, text, new_x="LMARGIN", new_y="NEXT", align="L")
        self.pdf.ln(1)

    def small(self, text: str) -> None:
        self.pdf.set_text_color(*MUTED)
        self.para(text, size=7.5)
        self.pdf.set_text_color(0, 0, 0)

    def bullet(self, text: str, size: float = 8.5) -> None:
        pdf = self.pdf
        pdf.set_font(FONT, "", size)
        pdf.cell(4, size * 0.48, "•")
        pdf.multi_cell(0, size * 0.48, text, new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.ln(0.6)

    def pairs(self, pairs) -> None:
        pdf = self.pdf
        pdf.set_font(FONT, "B", 8.5)
        key_w = min(70.0, max(pdf.get_string_width(k) for k, _ in pairs) + 4)
        for key, value in pairs:
            pdf.set_font(FONT, "B", 8.5)
            pdf.cell(key_w, 4.5, key)
            pdf.set_font(FONT, "", 8.5)
            pdf.multi_cell(0, 4.5, value, new_x="LMARGIN", new_y="NEXT", align="L")

    def key_figures(self, pairs) -> None:
        pdf = self.pdf
        pdf.set_fill_color(*HEAD_FILL)
        for key, value in pairs:
            pdf.set_font(FONT, "", 8)
            pdf.set_text_color(*MUTED)
            pdf.cell(32, 6, key.upper(), fill=True)
            pdf.set_text_color(0, 0, 0)
            pdf.set_font(FONT, "B", 10)
            pdf.multi_cell(0, 6, value, fill=True, new_x="LMARGIN", new_y="NEXT", align="L")
            pdf.ln(0.8)
        pdf.ln(1.5)

    def risk(self, title: str, text: str) -> None:
        pdf = self.pdf
        pdf.set_fill_color(*RISK_FILL)
        pdf.set_font(FONT, "B", 9)
        pdf.multi_cell(0, 5, title, fill=True, new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.set_font(FONT, "", 8.5)
        pdf.multi_cell(0, 4.4, text, fill=True, new_x="LMARGIN", new_y="NEXT", align="L")
        pdf.ln(2)

    def code(self, text: str) -> None:
        pdf = self.pdf
        pdf.set_font(FONT, "", 7)
        pdf.set_fill_color(*HEAD_FILL)
        # Leading spaces carry YAML structure: keep them as non-breaking spaces so they are not collapsed.
        lines = [line[: len(line) - len(line.lstrip(" "))].replace(" ", "\u00a0") + line.lstrip(" ")
                 for line in text.rstrip("\n").split("\n")]
        pdf.multi_cell(0, 3.4, "\n".join(lines), fill=True, new_x="LMARGIN", new_y="NEXT", align="L")

    def table(self, tbl: Table, widths: tuple[float, ...] | None, size: float = 7) -> None:
        pdf = self.pdf
        pdf.set_font(FONT, "", size)
        pdf.set_draw_color(*LINE)
        pdf.set_line_width(0.2)
        align = ["RIGHT" if n else "LEFT" for n in tbl.numeric]
        head = FontFace(emphasis="BOLD", fill_color=HEAD_FILL)
        with pdf.table(col_widths=widths, text_align=align, headings_style=head, line_height=size * 0.47,
                       borders_layout="HORIZONTAL_LINES", padding=0.8, width=pdf.epw) as table:
            row = table.row()
            for x in tbl.headers:
                row.cell(x)
            for j, cells in enumerate(tbl.rows):
                mark = tbl.marks[j] if j < len(tbl.marks) else ""
                style = None
                if mark == "primary":
                    style = FontFace(emphasis="BOLD", fill_color=PRIMARY_FILL)
                elif mark == "runner_up":
                    style = FontFace(fill_color=RUNNER_FILL)
                row = table.row()
                for x in cells:
                    row.cell(x, style=style)
        pdf.ln(1.5)
