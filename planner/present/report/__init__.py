"""Plan reports a manager can read: render_report(plan, scenario, 'html'|'pdf'|'markdown', locale=...)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from planner.engine.estimates import Plan
    from planner.engine.what_fits import WhatFits
    from planner.inputs.actuals import RecordedRun
    from planner.inputs.scenario import Scenario

FORMATS = ("html", "pdf", "markdown")
PAPERS = ("A4", "Letter")


def render_report(plan: Plan, scenario: Scenario, fmt: str, locale: str | None = None, all_options: bool = False,
                  paper: str = "A4", today: dt.date | None = None, runs: Sequence[RecordedRun] = (),
                  what_fits: Sequence[WhatFits] = ()) -> str | bytes:
    """The report in one format: HTML and Markdown as str, PDF as bytes. One builder (model.py) serves all three.
    `runs`: recorded runs (planner.inputs.actuals.scan_actuals); the report shows those of the plan's model.
    `what_fits`: planner.engine.what_fits.what_fits_all's answers, shown under the options when given."""
    from planner.present.report.model import build_report_model

    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if paper not in PAPERS:
        raise ValueError(f"unknown paper size {paper!r}; expected one of {', '.join(PAPERS)}")
    model = build_report_model(plan, scenario, locale, all_options=all_options, today=today,
                               with_charts=fmt != "markdown", runs=runs, what_fits=what_fits)
    if fmt == "html":
        from planner.present.report.html import render_html
        return render_html(model)
    if fmt == "pdf":
        from planner.present.report.pdf import render_pdf
        return render_pdf(model, paper=paper)
    from planner.present.report.markdown import render_markdown
    return render_markdown(model)


def options_csv(plan: Plan) -> str:
    """The options as CSV, locale-neutral (dot decimals, ISO dates): planjson's option rows, flattened."""
    import csv
    import io
    import json

    from planner.present.planjson import option_to_dict

    rows = [_flatten(option_to_dict(o)) for o in plan.options]
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    # An option without (say) memory has memory_gib = null; other rows spread it over memory_gib.* columns.
    columns = [c for c in columns if not any(other.startswith(c + ".") for other in columns)]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v
                         for k, v in row.items() if k in columns})
    return buf.getvalue()


def _flatten(d: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out
