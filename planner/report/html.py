"""The report as one self-contained HTML file: inline CSS, charts as embedded SVG images, no scripts, no links out."""

from __future__ import annotations

import base64
from html import escape

from planner.report.model import ReportModel, Table

# No script may run and nothing may load from outside, even if some text escaped our escaping.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
:root { --ink: #1f2933; --muted: #52606d; --line: #d9e2ec; --accent: #0b5394; --warn: #b44d12; --bg: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; color: var(--ink);
       background: #fff; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 32px 48px; }
header { border-bottom: 3px solid var(--accent); padding-bottom: 10px; margin-bottom: 8px; }
.kicker { text-transform: uppercase; letter-spacing: .08em; color: var(--accent); font-size: 13px; margin: 0; }
h1 { font-size: 28px; margin: 2px 0 4px; overflow-wrap: anywhere; }
.meta { color: var(--muted); margin: 0; font-size: 13px; }
h2 { font-size: 20px; margin: 30px 0 10px; color: var(--accent); border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 18px 0 6px; }
.kf { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0 14px; padding: 0; }
.kf div { background: var(--bg); border-left: 4px solid var(--accent); padding: 8px 12px; min-width: 150px; }
.kf dt { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.kf dd { margin: 0; font-weight: bold; font-size: 15px; }
.summary p { margin: 6px 0; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 7px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: bold; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.primary td { background: #e3f0fb; font-weight: bold; }
tr.runner_up td { background: #f2f7ee; }
.legend, .note { color: var(--muted); font-size: 12.5px; }
figure { margin: 18px 0; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 4px; }
ul { padding-left: 22px; }
li { margin: 3px 0; }
.sources li, .prices td { overflow-wrap: anywhere; }
.risks li { list-style: none; margin: 8px 0; padding: 8px 12px; border-left: 4px solid var(--warn);
            background: #fdf3ec; }
.risks { padding-left: 0; }
.repro dt { font-weight: bold; float: left; clear: left; width: 190px; }
.repro dd { margin: 0 0 4px 200px; overflow-wrap: anywhere; }
pre { background: var(--bg); padding: 12px; font-size: 12px; overflow-x: auto; white-space: pre-wrap; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
         padding-top: 8px; }
@media print { main { padding: 0; max-width: none; } h2 { page-break-after: avoid; } table { font-size: 10px; } }
"""


def e(text: object) -> str:
    return escape(str(text), quote=True)


def render_html(model: ReportModel, chart_svgs: dict[str, str] | None = None) -> str:
    """The whole report; `chart_svgs` (key -> SVG text) skips the conversion when the caller has them already."""
    from planner.report.images import to_svg

    h = model.headings
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{e(model.lang)}"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(model.title)} — {e(model.scenario_name)}</title>",
        f"<style>{CSS}</style></head><body><main>",
        f'<header><p class="kicker">{e(model.title)}</p><h1>{e(model.scenario_name)}</h1>'
        f'<p class="meta">{e(model.generated)}</p></header>',
        f'<section id="summary" class="summary"><h2>{e(h["summary"])}</h2>',
        '<dl class="kf">' + "".join(f"<div><dt>{e(k)}</dt><dd>{e(v)}</dd></div>" for k, v in model.key_figures)
        + "</dl>",
        "".join(f"<p>{e(s)}</p>" for s in model.summary),
        "</section>",
        f'<section id="options"><h2>{e(h["options"])}</h2><p>{e(model.options_intro)}</p>',
        table(model.options),
        f'<p class="legend">{e(model.options_legend)}</p></section>',
    ]
    if model.charts:
        svgs = chart_svgs or {}
        parts.append(f'<section id="charts"><h2>{e(h["charts"])}</h2><p class="note">{e(model.charts_intro)}</p>')
        for c in model.charts:
            svg = svgs.get(c.key) or to_svg(c.spec)
            data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            parts.append(f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{e(c.alt_text)}">'
                         f"<figcaption>{e(c.alt_text)}</figcaption></figure>")
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
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _sub(model: ReportModel, key: str) -> str:
    from planner.i18n import t

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
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
