"""Plan reports: numbers equal the plan's in every language, escaping, risk triggers, PDF text, offline HTML, CLI."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import html
import io
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from pypdf import PdfReader

from planner import __version__
from planner.engine.estimates import Recommendation, Source, detail
from planner.engine.plan import build_plan
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import load_scenario_file, load_scenario_text
from planner.present import fmt
from planner.present.charts import cost_time_spec, gpu_count_spec, memory_spec, option_label, top_options
from planner.present.i18n import catalog, missing_keys
from planner.present.report import options_csv, render_report
from planner.present.report.model import build_report_model
from planner.present.report.risks import KEYS
from planner.vocab import GIB

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "scenarios" / "resnet50-imagenet.yaml"
TODAY = dt.date(2026, 11, 29)
XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def inputs():
    return load_inputs(include_user_data=False)


@pytest.fixture(scope="module")
def scenario(inputs):
    return load_scenario_file(DEFAULT, known_gpu_ids=inputs.profiles)


@pytest.fixture(scope="module")
def plan(scenario, inputs):
    return build_plan(scenario, inputs, today=TODAY)


@pytest.fixture(scope="module")
def eur(scenario, inputs):
    """The default scenario priced in euros at a dated exchange rate."""
    pricing = dataclasses.replace(scenario.pricing, currency="EUR", exchange_rate=0.92,
                                  exchange_rate_as_of=dt.date(2026, 11, 2))
    s = dataclasses.replace(scenario, pricing=pricing)
    return s, build_plan(s, inputs, today=TODAY)


def flat(text: str) -> str:
    """Whitespace (line breaks, non-breaking spaces) collapsed: numbers split across PDF lines still match."""
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ").replace("\u202f", " "))


def pdf_text(data: bytes) -> str:
    return flat("\n".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages))


def html_text(doc: str) -> str:
    return flat(html.unescape(re.sub(r"<[^>]+>", " ", doc)))


def md_text(doc: str) -> str:
    return flat(re.sub(r"\\(.)", r"\1", doc))


def key_numbers(plan, scenario, locale: str) -> list[str]:
    """The plan's headline numbers, formatted by planner.present.fmt in `locale`: the report must show exactly these."""
    o = plan.option(plan.recommendation.primary)
    c = o.cost
    out = [fmt.hours(c.hours, locale), fmt.hours(c.hours_range[0], locale), fmt.hours(c.hours_range[1], locale),
           fmt.money(c.usd, "USD", locale), fmt.money(c.usd_range[0], "USD", locale),
           fmt.money(c.usd_range[1], "USD", locale), fmt.number(o.convergence.steps, locale, 0),
           fmt.number(scenario.training.global_batch, locale, 0), fmt.sig(o.step.step_time_s, locale),
           fmt.number(o.memory.total / GIB, locale), option_label(o)]
    if c.currency != "USD":
        out += [fmt.money(c.amount_in_currency, c.currency, locale)]
    if scenario.constraints.deadline_hours:
        out.append(fmt.hours(scenario.constraints.deadline_hours, locale))
    if scenario.constraints.budget_usd:
        out.append(fmt.money(scenario.constraints.budget_usd, "USD", locale))
    runner = plan.option(plan.recommendation.runner_up)
    if runner is not None:
        out += [fmt.hours(runner.cost.hours, locale), option_label(runner)]
    return out


# ---------------------------------------------------------------- key numbers, both languages

@pytest.mark.parametrize("locale", ["en", "es", "es-MX", "es-AR"])
def test_key_numbers_equal_the_plans_in_html_and_markdown(plan, scenario, locale):
    assert plan.recommendation.primary is not None
    doc_html = html_text(render_report(plan, scenario, "html", locale=locale, today=TODAY))
    doc_md = md_text(render_report(plan, scenario, "markdown", locale=locale, today=TODAY))
    for number in key_numbers(plan, scenario, locale):
        assert flat(number) in doc_html, number  # money may hold a no-break space (CLDR)
        assert flat(number) in doc_md, number


@pytest.mark.parametrize("locale", ["en", "es"])
def test_key_numbers_equal_the_plans_in_pdf_text(plan, scenario, locale):
    text = pdf_text(render_report(plan, scenario, "pdf", locale=locale, today=TODAY))
    for number in key_numbers(plan, scenario, locale):
        assert flat(number) in text, number


@pytest.mark.parametrize(("locale", "planned", "rate"), [("en", "Planned for:", "samples/s"),
                                                          ("es", "Planificado para:", "ejemplos/s")])
def test_the_report_says_the_stack_and_the_rate_and_mfu_per_gpu(plan, scenario, locale, planned, rate):
    """Issue 32 b: 'planned for: <stack>' and, for the recommended option, samples (ResNet-50: not tokens) per second
    per GPU and MFU, the numbers the plan holds, in every format."""
    o = plan.option(plan.recommendation.primary)
    stack = catalog(locale)[f"common.stack.{plan.stack}"]
    numbers = [fmt.sig(o.throughput.samples_per_s_per_gpu, locale), fmt.percent(o.throughput.mfu, locale)]
    docs = {"html": html_text(render_report(plan, scenario, "html", locale=locale, today=TODAY)),
            "markdown": md_text(render_report(plan, scenario, "markdown", locale=locale, today=TODAY)),
            "pdf": pdf_text(render_report(plan, scenario, "pdf", locale=locale, today=TODAY))}
    for name, doc in docs.items():
        assert f"{planned} {flat(stack)}" in doc, name
        assert "MFU" in doc and rate in doc and "tokens/s" not in doc, name
        for number in numbers:
            assert flat(number) in doc, (name, number)


def test_region_decides_the_separators(plan, scenario):
    steps = plan.option(plan.recommendation.primary).convergence.steps
    assert steps >= 1000
    mx = render_report(plan, scenario, "markdown", locale="es-MX", today=TODAY)
    ar = render_report(plan, scenario, "markdown", locale="es-AR", today=TODAY)
    assert fmt.number(steps, "es-MX", 0) in mx and "," in fmt.number(steps, "es-MX", 0)
    assert fmt.number(steps, "es-AR", 0) in ar and "." in fmt.number(steps, "es-AR", 0)


def test_spanish_report_is_in_spanish(plan, scenario):
    doc = html_text(render_report(plan, scenario, "html", locale="es", today=TODAY))
    for words in ("Resumen ejecutivo", "Opciones", "Gráficos", "Supuestos y fuentes", "Riesgos",
                  "Reproducibilidad", "Recomendación"):
        assert words in doc
    assert "Executive summary" not in doc


def test_foreign_currency_and_exchange_rate_are_shown(eur):
    s, p = eur
    o = p.option(p.recommendation.primary)
    doc = md_text(render_report(p, s, "markdown", locale="es-ES", today=TODAY))
    assert flat(fmt.money(o.cost.amount_in_currency, "EUR", "es-ES")) in doc
    assert flat(fmt.money(o.cost.usd, "USD", "es-ES")) in doc
    assert fmt.date(dt.date(2026, 11, 2), "es-ES") in doc and fmt.sig(0.92, "es-ES", 4) in doc


# ---------------------------------------------------------------- contents and order

def test_sections_in_order(plan, scenario):
    doc = render_report(plan, scenario, "html", locale="en", today=TODAY)
    ids = re.findall(r'<section id="(\w+)"', doc)
    assert ids == ["summary", "options", "charts", "sources", "risks", "reproducibility"]
    md = render_report(plan, scenario, "markdown", locale="es", today=TODAY)
    heads = re.findall(r"^## (\d)\\?\. ", md, flags=re.M)
    assert heads == ["1", "2", "3", "4", "5", "6"]


def test_top_options_and_all_options(plan, scenario):
    top = build_report_model(plan, scenario, "en", today=TODAY)
    every = build_report_model(plan, scenario, "en", all_options=True, today=TODAY)
    assert 1 <= len(top.options.rows) <= 10 + 4  # picks and frontier always shown
    assert len(every.options.rows) == len(plan.options)
    assert top.options.marks.count("primary") == 1
    assert "(h)" in " ".join(top.options.headers) and "GiB" in " ".join(top.options.headers)
    shown = {o.id for o in top_options(plan, 10)}
    r = plan.recommendation
    assert {x for x in (r.primary, r.runner_up) if x} <= shown


def test_sources_and_reproducibility(plan, scenario):
    m = build_report_model(plan, scenario, "en", today=TODAY)
    primary = plan.option(plan.recommendation.primary)
    lines = [line for _, group in m.option_sources for line in group]
    assert any(line.startswith(f"step time: {primary.step.source.kind}") for line in lines)
    assert m.option_sources[0][0] == "Every option above"  # lines true of all options, said once
    assert m.prices.rows and any(primary.cost.price.provider in row for row in m.prices.rows)
    assert any(fmt.date(primary.cost.price.as_of, "en") in row for row in m.prices.rows)
    assert "US dollars" in m.exchange
    assert (m.reproducibility[0][1]) == f"trainplan {__version__}"
    assert load_scenario_text(m.scenario_yaml, known_gpu_ids=None) == scenario


def test_markdown_yaml_block_round_trips(plan, scenario):
    doc = render_report(plan, scenario, "markdown", locale="en", today=TODAY)
    block = re.search(r"^(`{3,})yaml\n(.*?)\n\1$", doc, flags=re.S | re.M).group(2)
    assert load_scenario_text(block) == scenario


def test_csv_is_locale_neutral(plan):
    text = options_csv(plan)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(plan.options)
    primary = plan.option(plan.recommendation.primary)
    row = next(r for r in rows if r["id"] == primary.id)
    assert float(row["hours"]) == pytest.approx(primary.cost.hours, rel=1e-3)
    assert float(row["cost_usd"]) == pytest.approx(primary.cost.usd, rel=1e-5)
    assert "," not in row["hours"] and row["price.as_of"] == primary.cost.price.as_of


def test_charts_are_locale_aware_vega_lite(plan):
    for spec in (cost_time_spec(plan, "es-AR"), memory_spec(plan, "es-AR"), gpu_count_spec(plan, "es-AR")):
        assert spec["config"]["locale"]["number"]["decimal"] == ","
        assert spec["$schema"].endswith("v6.json")
    assert "Costo" in str(cost_time_spec(plan, "es"))
    values = cost_time_spec(plan, "en")["data"]["values"]
    assert len(values) == sum(1 for o in plan.options if o.fits and o.cost is not None and o.cost.price is not None)


def test_report_catalog_is_complete():
    assert not missing_keys()
    assert sum(k.startswith(("report.", "summary.")) for k in catalog("es")) >= 150


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_reports_in_every_format(inputs, path):
    s = load_scenario_file(path, known_gpu_ids=inputs.profiles)
    p = build_plan(s, inputs, today=TODAY)
    md = render_report(p, s, "markdown", locale="es", today=TODAY)
    assert re.findall(r"^## (\d)", md, flags=re.M) == ["1", "2", "3", "4", "5", "6"]
    assert "<section id=\"reproducibility\">" in render_report(p, s, "html", locale="en", today=TODAY)
    assert "Reproducibilidad" in pdf_text(render_report(p, s, "pdf", locale="es", today=TODAY))


def test_a_plan_where_nothing_fits_still_reports(inputs):
    s = load_scenario_file(ROOT / "scenarios" / "llama7b-full-finetune.yaml", known_gpu_ids=inputs.profiles)
    s = dataclasses.replace(s, hardware=dataclasses.replace(s.hardware, gpus=("t4-16gb",), gpu_counts=(1,)),
                            training=dataclasses.replace(s.training, precisions=("fp16", "bf16")))
    p = build_plan(s, inputs, today=TODAY)
    assert p.recommendation.primary is None
    m = build_report_model(p, s, "es", today=TODAY)
    assert m.summary[0].startswith("No se puede recomendar")
    assert [c.key for c in m.charts] == ["memory"]  # how far the sized option is from fitting
    assert m.options.rows[0][-1] == "no cabe"  # fp16 was sized and does not fit
    assert "bf16" in m.options.rows[1][-1]  # bf16 could not be sized: the planner's reason is shown
    doc = render_report(p, s, "html", locale="es", today=TODAY)
    assert re.findall(r'<section id="(\w+)"', doc) == ["summary", "options", "charts", "sources", "risks",
                                                       "reproducibility"]
    assert render_report(p, s, "pdf", locale="es", today=TODAY).startswith(b"%PDF")


# ---------------------------------------------------------------- escaping

@pytest.fixture(scope="module")
def hostile(plan, scenario):
    """A scenario named like a script, an option note and a price source that try to become markup."""
    s = dataclasses.replace(scenario, name=XSS)
    primary = plan.option(plan.recommendation.primary)
    price = dataclasses.replace(primary.cost.price, source='"><img src=x onerror=alert(2)> http://evil.example/x')
    o = dataclasses.replace(primary, notes=("<b>bold</b> | pipe [link](http://evil.example) `code`",),
                            cost=dataclasses.replace(primary.cost, price=price))
    p = dataclasses.replace(plan, scenario_name=XSS,
                            options=tuple(o if x.id == o.id else x for x in plan.options))
    return s, p


def test_html_escapes_user_text(hostile):
    s, p = hostile
    doc = render_report(p, s, "html", locale="en", today=TODAY)
    assert "<script" not in doc.lower() and "<img src=x" not in doc and "<b>bold" not in doc
    parser = Collector()
    parser.feed(doc)
    assert parser.h1 == XSS  # shown as text
    assert "script" not in parser.tags and "b" not in parser.tags


def test_markdown_escapes_user_text(hostile):
    s, p = hostile
    doc = render_report(p, s, "markdown", locale="en", today=TODAY)
    # A fenced code block is literal text in CommonMark: the scenario YAML may hold the name as it is.
    fence = re.search(r"^(`{3,})yaml\n.*?\n\1$", doc, flags=re.S | re.M)
    assert XSS in fence.group(0)
    doc = doc.replace(fence.group(0), "")
    assert not re.search(r"(?<!\\)<", doc), "every < outside code is escaped"
    assert not re.search(r"(?<!\\)\]\(", doc) and not re.search(r"(?<!\\)`", doc)
    assert "\\<script\\>alert(1)\\</script\\>" in doc
    assert md_text(doc).count(XSS) >= 1


def test_pdf_shows_user_text_as_text(hostile):
    s, p = hostile
    text = pdf_text(render_report(p, s, "pdf", locale="en", today=TODAY))
    assert XSS in text


# ---------------------------------------------------------------- offline HTML

class Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.urls: list[str] = []
        self.h1 = ""
        self._in_h1 = False
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self._in_h1 = tag == "h1"
        self._in_style = tag == "style"
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "poster", "data", "formaction", "background"):
                self.urls.append(value or "")
            if name.startswith("on"):
                self.urls.append(f"handler:{name}")

    def handle_endtag(self, tag):
        self._in_h1 = self._in_h1 and tag != "h1"
        self._in_style = self._in_style and tag != "style"

    def handle_data(self, data):
        if self._in_h1:
            self.h1 += data
        if self._in_style:
            self.style += data


@pytest.mark.parametrize("locale", ["en", "es-CO"])
def test_html_is_one_offline_file(plan, scenario, locale):
    doc = render_report(plan, scenario, "html", locale=locale, today=TODAY)
    parser = Collector()
    parser.feed(doc)
    assert not parser.tags & {"script", "link", "iframe", "object", "embed", "base", "form"}
    assert parser.urls and all(u.startswith("data:image/") for u in parser.urls), parser.urls[:3]
    assert "url(" not in parser.style and "@import" not in parser.style
    assert "Content-Security-Policy" in doc and "default-src 'none'" in doc
    assert len([u for u in parser.urls if u.startswith("data:image/svg+xml;base64,")]) == 3


def test_app_preview_fragment_scopes_its_styles(plan, scenario):
    from planner.present.report.html import render_fragment

    frag = render_fragment(build_report_model(plan, scenario, "es", today=TODAY))
    assert frag.startswith('<div class="tp-report"')
    css = re.search(r"<style>(.*?)</style>", frag, flags=re.S).group(1)
    selectors = [sel.strip() for block in re.findall(r"([^{}]+)\{", css) for sel in block.split(",")]
    assert all(sel.startswith(".tp-report") or sel.startswith("@media") for sel in selectors), selectors


# ---------------------------------------------------------------- PDF

def test_pdf_has_searchable_spanish_text_and_unicode(eur):
    s, p = eur
    data = render_report(p, s, "pdf", locale="es-ES", today=TODAY)
    assert data.startswith(b"%PDF")
    text = pdf_text(data)
    for words in ("Resumen ejecutivo", "Gráficos", "Supuestos y fuentes", "Reproducibilidad", "€", "×", "≤"):
        assert words in text, words
    o = p.option(p.recommendation.primary)
    assert flat(fmt.money(o.cost.amount_in_currency, "EUR", "es-ES")) in text
    reader = PdfReader(io.BytesIO(data))
    assert sum(len(page.images) for page in reader.pages) == 3, "the three charts are embedded images"
    fonts = {str(f.get_object()["/BaseFont"]) for page in reader.pages
             for f in page["/Resources"]["/Font"].values()}
    assert all("DejaVu" in f for f in fonts), fonts


@pytest.mark.parametrize("paper,size", [("A4", (595.28, 841.89)), ("Letter", (612.0, 792.0))])
def test_pdf_paper_sizes(plan, scenario, paper, size):
    reader = PdfReader(io.BytesIO(render_report(plan, scenario, "pdf", locale="en", paper=paper, today=TODAY)))
    box = reader.pages[0].mediabox
    assert (float(box.width), float(box.height)) == pytest.approx(size, abs=0.5)


def test_unknown_format_and_paper_are_refused(plan, scenario):
    with pytest.raises(ValueError, match="format"):
        render_report(plan, scenario, "docx")
    with pytest.raises(ValueError, match="paper"):
        render_report(plan, scenario, "pdf", paper="A3")


def test_cli_writes_a_spanish_pdf(tmp_path):
    out = tmp_path / "x.pdf"
    run = subprocess.run([sys.executable, "-m", "planner", str(DEFAULT), "--format", "pdf", "--lang", "es",
                          "--out", str(out), "--no-user-data"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    text = pdf_text(out.read_bytes())
    assert "Resumen ejecutivo" in text and "Riesgos" in text


def test_cli_writes_markdown_to_stdout():
    run = subprocess.run([sys.executable, "-m", "planner", str(DEFAULT), "--format", "markdown", "--lang", "es-MX",
                          "--no-user-data"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("# Plan de entrenamiento")


# ---------------------------------------------------------------- risks

def with_primary(plan, o, **changes):
    """The plan with option o (changed) as the only recommended option."""
    o = dataclasses.replace(o, **changes)
    rec = Recommendation(primary=o.id, runner_up=None, cheapest_within_deadline=o.id, fastest_within_budget=o.id,
                         reason=())
    return dataclasses.replace(plan, options=tuple(o if x.id == o.id else x for x in plan.options),
                               recommendation=rec, warnings=())


@pytest.fixture(scope="module")
def clean(plan):
    """A recommended option that triggers no risk: bf16, measured, roomy memory, fresh on-demand price."""
    o = next(x for x in plan.options if x.fits and x.cost and x.precision == "bf16" and x.memory.headroom > 0.3)
    step = dataclasses.replace(o.step, source=Source("measured", parts=(detail("measured_median", batch=64, labels="results/x.json (2026-11-01)"),)),
                               input_time_s=None)
    price = dataclasses.replace(o.cost.price, tier="on_demand", as_of=(TODAY - dt.timedelta(days=10)).isoformat())
    cost = dataclasses.replace(o.cost, price=price, preemptions=0.0)
    conv = dataclasses.replace(o.convergence, b_crit=None)
    return o, dict(step=step, cost=cost, convergence=conv)


def risks_of(plan, scenario, locale="en"):
    return build_report_model(plan, scenario, locale, today=TODAY).risks


def test_no_risk_when_nothing_triggers(plan, scenario, clean):
    o, base = clean
    p = with_primary(plan, o, **base)
    assert risks_of(p, scenario) == ()
    doc = render_report(p, scenario, "html", locale="es", today=TODAY)
    assert "data-risk=" not in doc and "no activa ninguno" in doc


def _trigger(plan, o, base, key):
    """(changed plan, the number the risk text must quote) for each risk kind."""
    if key == "fp16":
        fp16 = next(x for x in plan.options if x.gpu_id == o.gpu_id and x.n_gpus == o.n_gpus
                    and x.precision == "fp16")
        return with_primary(plan, fp16, **base), "65,504"
    if key == "b_crit":
        conv = dataclasses.replace(base["convergence"], b_crit=100.0)
        return with_primary(plan, o, **{**base, "convergence": conv}), "2.6×"
    if key == "input_bound":
        step = dataclasses.replace(base["step"], input_time_s=5.0)
        return with_primary(plan, o, **{**base, "step": step}), fmt.sig(5.0 * o.grad_accum, "en")
    if key == "spot":
        price = dataclasses.replace(base["cost"].price, tier="spot")
        cost = dataclasses.replace(base["cost"], price=price, preemptions=3.2)
        return with_primary(plan, o, **{**base, "cost": cost}), "3.2"
    if key == "far":
        step = dataclasses.replace(base["step"], source=Source("transferred", parts=(detail("transferred", gpu="A100", source=Source("measured")),)))
        return with_primary(plan, o, **{**base, "step": step}), fmt.sig(o.step.band_s[1], "en")
    if key == "headroom":
        m = o.memory
        mem = dataclasses.replace(m, activations=m.activations + (m.capacity * 0.93 - m.total))
        return with_primary(plan, o, **{**base, "memory": mem}), "7.0 %"
    if key == "stale_price":
        price = dataclasses.replace(base["cost"].price, as_of="2026-01-01")
        cost = dataclasses.replace(base["cost"], price=price)
        return with_primary(plan, o, **{**base, "cost": cost}), "332"
    p = dataclasses.replace(with_primary(plan, o, **base), warnings=("exchange rate has no date",))
    return p, "exchange rate has no date"


@pytest.mark.parametrize("key", KEYS)
def test_each_risk_appears_when_triggered_and_quotes_its_number(plan, scenario, clean, key):
    o, base = clean
    p, number = _trigger(plan, o, base, key)
    risks = risks_of(p, scenario)
    assert [r.key for r in risks] == [key]
    assert number in risks[0].text
    es = risks_of(p, scenario, "es")
    assert [r.key for r in es] == [key]
    if key != "warning":  # planner warnings are shown as the planner wrote them
        assert es[0].text != risks[0].text
    doc = render_report(p, scenario, "html", locale="en", today=TODAY)
    assert f'data-risk="{key}"' in doc


# ---------------------------------------------------------------- the app's Report page

def test_report_page_offers_the_five_downloads():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "ui" / "report_page.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == [catalog("en")[f"report.page.{k}"] for k in ("html", "pdf", "markdown", "csv", "yaml")]
    preview = at.get("html")[0].proto.body
    assert preview.startswith('<div class="tp-report" lang="en"') and "Executive summary" in preview
    at.selectbox(key="report_locale").set_value("es-AR").run()
    preview = at.get("html")[0].proto.body
    assert 'lang="es"' in preview and "Resumen ejecutivo" in preview


SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
CHART_SCENARIOS = sorted(SCENARIO_DIR.glob("*.yaml")) + sorted((SCENARIO_DIR / "presets").glob("*.yaml"))


@pytest.mark.parametrize("path", CHART_SCENARIOS, ids=[p.stem for p in CHART_SCENARIOS])
def test_chart_axes_write_plain_numbers(path):
    """A manager reads "1,000" on an axis, never "1e+3" (Vega narrows a linear axis's "g" format to the ticks'
    precision, which writes 1,000 as 1e+3): every report chart of every shipped scenario, in en and es-AR."""
    from planner.present.report import images

    inputs = load_inputs()
    plan = build_plan(load_scenario_file(path, list(inputs.profiles)), inputs)
    for loc in ("en", "es-AR"):
        for spec in (gpu_count_spec(plan, loc), cost_time_spec(plan, loc), memory_spec(plan, loc)):
            labels = re.findall(r"<text[^>]*>([^<>]{1,24})</text>", images.to_svg(spec))
            exponent = [t for t in labels if re.fullmatch(r"[\d.,\s]+e[+-]?\d+", t)]
            assert not exponent, f"{path.name} ({loc}): axis labels in exponent notation {exponent}"
