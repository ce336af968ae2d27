"""The report as one self-contained HTML file: inline CSS, charts as embedded SVG images, no scripts, no links out."""

from __future__ import annotations

import base64
from html import escape

from planner.present.i18n import t
from planner.present.report.model import ReportModel, Table

# No script may run and nothing may load from outside, even if some text escaped our escaping.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

# Selectors start with %R, the root: :root in the standalone file, .tp-report in the app's preview (so the
# report's styles never leak into the page around it).
# The price table: only the source column (URLs, repository paths) breaks anywhere, at 12em or more; provider and
# tier keep one line; the GPU wraps at words from 9em (a word broken mid-way read "hypersta ck", "on-dem and").
CSS = """
%R { --ink: #1f2933; --muted: #52606d; --line: #d9e2ec; --accent: #0b5394; --warn: #b44d12; --bg: #f5f7fa;
     color: var(--ink); font: 15px/1.5 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
%R * { box-sizing: border-box; }
%R main { max-width: 1080px; margin: 0 auto; padding: 28px 32px 48px; }
%R header { border-bottom: 3px solid var(--accent); padding-bottom: 10px; margin-bottom: 8px; }
%R .kicker { text-transform: uppercase; letter-spacing: .08em; color: var(--accent); font-size: 13px; margin: 0; }
%R h1 { font-size: 28px; margin: 2px 0 4px; overflow-wrap: anywhere; }
%R .meta { color: var(--muted); margin: 0; font-size: 13px; }
%R h2 { font-size: 20px; margin: 30px 0 10px; color: var(--accent); border-bottom: 1px solid var(--line); }
%R h3 { font-size: 16px; margin: 18px 0 6px; }
%R .kf { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0 14px; padding: 0; }
%R .kf div { background: var(--bg); border-left: 4px solid var(--accent); padding: 8px 12px; min-width: 150px; }
%R .kf dt { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
%R .kf dd { margin: 0; font-weight: bold; font-size: 15px; }
%R .summary p { margin: 6px 0; }
%R .tw { overflow-x: auto; }
%R table { border-collapse: collapse; width: 100%; font-size: 12.5px; margin: 8px 0; }
%R th, %R td { border-bottom: 1px solid var(--line); padding: 5px 7px; text-align: left; vertical-align: top; }
%R th { background: var(--bg); font-weight: bold; }
%R td.num, %R th.num { text-align: right; white-space: nowrap; }
%R td:first-child { min-width: 180px; }
%R tr.primary td { background: #e3f0fb; font-weight: bold; }
%R tr.runner_up td { background: #f2f7ee; }
%R .legend, %R .note { color: var(--muted); font-size: 12.5px; }
%R figure { margin: 18px 0; page-break-inside: avoid; }
%R figure img { max-width: 100%; height: auto; display: block; }
%R figcaption { color: var(--muted); font-size: 12.5px; margin-top: 4px; }
%R ul { padding-left: 22px; }
%R li { margin: 3px 0; }
%R .sources li { overflow-wrap: anywhere; }
%R .prices td:last-child { overflow-wrap: anywhere; min-width: 12em; }
%R .prices td:first-child { min-width: 9em; }
%R .prices td:nth-child(2), %R .prices td:nth-child(4) { white-space: nowrap; }
%R .risks { padding-left: 0; }
%R .risks li { list-style: none; margin: 8px 0; padding: 8px 12px; border-left: 4px solid var(--warn);
               background: #fdf3ec; }
%R .repro { display: grid; grid-template-columns: minmax(120px, max-content) 1fr; gap: 4px 18px; }
%R .repro dt { font-weight: bold; }
%R .repro dd { margin: 0; overflow-wrap: anywhere; }
%R pre { background: var(--bg); padding: 12px; font-size: 12px; overflow-x: auto; white-space: pre-wrap; }
%R footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
            padding-top: 8px; }
@media print { %R main { padding: 0; max-width: none; } %R h2 { page-break-after: avoid; }
               %R table { font-size: 10px; } }
"""


def e(text: object) -> str:
    return escape(str(text), quote=True)


def render_html(model: ReportModel, chart_svgs: dict[str, str] | None = None) -> str:
    """The whole report as one file; `chart_svgs` (key -> SVG text) skips the conversion when the caller has them."""
    return "\n".join([
        "<!DOCTYPE html>",
        f'<html lang="{e(model.lang)}"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(model.title)} — {e(model.scenario_name)}</title>",
        f"<style>{CSS.replace('%R ', ':root ').replace('%R', ':root')}</style></head>",
        f"<body style=\"margin:0\"><main>{body(model, chart_svgs)}</main></body></html>",
    ]) + "\n"


def render_fragment(model: ReportModel, chart_svgs: dict[str, str] | None = None) -> str:
    """The report as a <div> with styles scoped to it, for previewing inside another page (the app)."""
    css = CSS.replace("%R", ".tp-report") + ".tp-report main { padding: 4px 8px 16px; }"
    return f'<div class="tp-report" lang="{e(model.lang)}"><style>{css}</style><main>{body(model, chart_svgs)}</main></div>'


def body(model: ReportModel, chart_svgs: dict[str, str] | None = None) -> str:
    from planner.present.report.images import to_svg

    h = model.headings
    parts = [
        f'<header><p class="kicker">{e(model.title)}</p><h1>{e(model.scenario_name)}</h1>'
        f'<p class="meta">{e(model.generated)}</p></header>',
        f'<section id="summary" class="summary"><h2>{e(h["summary"])}</h2>',
        '<dl class="kf">' + "".join(f"<div><dt>{e(k)}</dt><dd>{e(v)}</dd></div>" for k, v in model.key_figures)
        + "</dl>",
        (f'<div class="attention"><h3>{e(model.headings["attention"])}</h3><ul class="risks">'
         + "".join(f"<li>{e(s)}</li>" for s in model.attention) + "</ul></div>") if model.attention else "",
        "".join(f"<p>{e(s)}</p>" for s in model.summary),
        "</section>",
        f'<section id="options"><h2>{e(h["options"])}</h2><p>{e(model.options_intro)}</p>',
        table(model.options),
        f'<p class="legend">{e(model.options_legend)}</p>'
        + (f'<h3>{e(t("what_fits.title", model.locale))}</h3><p>{e(model.what_fits_intro)}</p>'
           f'<div class="what-fits">{table(model.what_fits)}</div>' if model.what_fits is not None else "")
        + "</section>",
    ]
    svgs = chart_svgs or {}
    parts.append(f'<section id="charts"><h2>{e(h["charts"])}</h2><p class="note">{e(model.charts_intro)}</p>')
    for c in model.charts:
        svg = svgs.get(c.key) or (to_svg(c.spec) if c.spec else None)
        if svg:
            data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            parts.append(f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{e(c.alt_text)}">'
                         f"<figcaption>{e(c.alt_text)}</figcaption></figure>")
        else:
            parts.append(f"<p><strong>{e(c.title)}</strong>: {e(c.alt_text)}</p>")
    parts.append("</section>")
    parts += [
        f'<section id="sources"><h2>{e(h["sources"])}</h2>',
        f"<h3>{e(_sub(model, 'assumptions'))}</h3><ul>" + "".join(f"<li>{e(a)}</li>" for a in model.assumptions)
        + "</ul>",
        f"<h3>{e(_sub(model, 'exchange'))}</h3><p>{e(model.exchange)}</p>",
    ]
    if model.prices.rows:
        parts.append(f'<h3>{e(_sub(model, "prices"))}</h3><div class="prices">{table(model.prices)}</div>')
    if model.option_sources:
        parts.append(f"<h3>{e(_sub(model, 'option_sources'))}</h3>")
        for label, lines in model.option_sources:
            parts.append(f'<p><strong>{e(label)}</strong></p><ul class="sources">'
                         + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>")
    if model.recorded is not None:
        parts.append(f'<h3>{e(_sub(model, "recorded"))}</h3><p>{e(model.recorded_intro)}</p>'
                     f'<div class="recorded">{table(model.recorded)}</div>')
    parts.append("</section>")
    parts.append(f'<section id="risks"><h2>{e(h["risks"])}</h2>')
    if model.risks:
        parts.append('<ul class="risks">' + "".join(
            f'<li data-risk="{e(r.key)}"><strong>{e(r.title)}.</strong> {e(r.text)}</li>' for r in model.risks)
            + "</ul>")
    else:
        parts.append(f"<p>{e(model.no_risks)}</p>")
    parts.append("</section>")
    parts += [
        f'<section id="reproducibility"><h2>{e(h["reproducibility"])}</h2><dl class="repro">',
        "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in model.reproducibility),
        f"</dl><h3>{e(_sub(model, 'scenario_yaml'))}</h3><pre>{e(model.scenario_yaml)}</pre></section>",
        f"<footer>{e(model.footer)}</footer>",
    ]
    return "\n".join(parts)


def _sub(model: ReportModel, key: str) -> str:
    from planner.present.i18n import t

    return t(f"report.sub.{key}", model.locale)


def table(tbl: Table) -> str:
    def cls(i: int) -> str:
        return ' class="num"' if tbl.numeric[i] else ""

    head = "".join(f"<th{cls(i)}>{e(x)}</th>" for i, x in enumerate(tbl.headers))
    body = []
    for j, row in enumerate(tbl.rows):
        mark = tbl.marks[j] if j < len(tbl.marks) and tbl.marks[j] else ""
        tr = f'<tr class="{e(mark)}">' if mark else "<tr>"
        body.append(tr + "".join(f"<td{cls(i)}>{e(x)}</td>" for i, x in enumerate(row)) + "</tr>")
    return f'<div class="tw"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
