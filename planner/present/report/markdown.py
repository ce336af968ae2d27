"""The report as Markdown: same sections as HTML/PDF; charts described in words; every text escaped."""

from __future__ import annotations

import re

from planner.present.i18n import t
from planner.present.report.model import ReportModel, Table

# CommonMark lets a backslash escape any ASCII punctuation; these are the characters that could start markup
# (emphasis, links, code, raw HTML, tables) inside a line.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|&#~!])")


def md(text: object) -> str:
    """User or catalog text as literal Markdown: `<script>` stays text, `|` cannot break a table."""
    return _SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def render_markdown(model: ReportModel) -> str:
    h = model.headings
    out = [f"# {md(model.title)}: {md(model.scenario_name)}", "", f"_{md(model.generated)}_", ""]
    out += [f"## {md(h['summary'])}", "", f"**{md(t('report.sub.key_figures', model.locale))}**", ""]
    out += [f"- **{md(k)}**: {md(v)}" for k, v in model.key_figures] + [""]
    if model.attention:
        out += [f"**{md(h['attention'])}**", ""] + [f"- {md(s)}" for s in model.attention] + [""]
    for sentence in model.summary:
        out += [md(sentence), ""]
    out += [f"## {md(h['options'])}", "", md(model.options_intro), "", table(model.options), "",
            f"_{md(model.options_legend)}_", ""]
    if model.what_fits is not None:
        out += [f"### {md(t('what_fits.title', model.locale))}", "", md(model.what_fits_intro), "",
                table(model.what_fits), ""]
    out += [f"## {md(h['charts'])}", ""]
    if not model.charts:
        out += [md(model.charts_intro), ""]
    for c in model.charts:
        out += [f"**{md(c.title)}**: {md(c.alt_text)}", ""]
    out += [f"## {md(h['sources'])}", "", f"### {md(t('report.sub.assumptions', model.locale))}", ""]
    out += [f"- {md(a)}" for a in model.assumptions] + [""]
    out += [f"### {md(t('report.sub.exchange', model.locale))}", "", md(model.exchange), ""]
    if model.prices.rows:
        out += [f"### {md(t('report.sub.prices', model.locale))}", "", table(model.prices), ""]
    if model.option_sources:
        out += [f"### {md(t('report.sub.option_sources', model.locale))}", ""]
        for label, lines in model.option_sources:
            out += [f"**{md(label)}**", ""] + [f"- {md(line)}" for line in lines] + [""]
    if model.recorded is not None:
        out += [f"### {md(t('report.sub.recorded', model.locale))}", "", md(model.recorded_intro), "",
                table(model.recorded), ""]
    out += [f"## {md(h['risks'])}", ""]
    if model.risks:
        out += [f"- **{md(r.title)}.** {md(r.text)}" for r in model.risks]
    else:
        out.append(md(model.no_risks))
    out += ["", f"## {md(h['reproducibility'])}", ""]
    out += [f"- **{md(k)}**: {md(v)}" for k, v in model.reproducibility] + [""]
    out += [f"### {md(t('report.sub.scenario_yaml', model.locale))}", "", *fenced(model.scenario_yaml, "yaml"), "",
            "---", f"_{md(model.footer)}_", ""]
    return "\n".join(out)


def fenced(text: str, lang: str = "") -> list[str]:
    """A code block whose fence is longer than any backtick run inside, so the content cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text.rstrip("\n"), fence]


def table(tbl: Table) -> str:
    def align(i: int) -> str:
        return "---:" if tbl.numeric[i] else ":---"

    lines = ["| " + " | ".join(md(x) for x in tbl.headers) + " |",
             "|" + "|".join(align(i) for i in range(len(tbl.headers))) + "|"]
    for j, row in enumerate(tbl.rows):
        bold = j < len(tbl.marks) and tbl.marks[j] == "primary"
        cells = [f"**{md(x)}**" if bold and x else md(x) for x in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
