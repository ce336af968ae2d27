"""What the Benchmarks page shows of result files: the file list, measurement rows, charts, trials, environment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.inputs.reasons import SEPARATOR, ReasonPart
from planner.inputs.resultfile import PHASES, REPO_SOURCE, ResultFile
from planner.present import fmt
from planner.present.i18n import t
from planner.vocab import GIB, PRECISIONS

if TYPE_CHECKING:  # altair is imported inside the chart builders so that `import planner` stays light
    import altair as alt

# Okabe-Ito, one colour per precision, the same in every chart of the page.
PRECISION_COLOURS = ("#0072B2", "#56B4E9", "#E69F00", "#D55E00")


# ---------------------------------------------------------------- the list of files

@dataclass(frozen=True)
class FileEntry:
    path: str
    device_dir: str  # gpu profile id | cpu | traced | unknown-<gpu>: the folder the file sits in
    gpu_label: str
    model: str
    created_utc: str
    partial: bool
    yours: bool  # under $TRAINPLAN_HOME (run here or imported), not the shipped results/
    n_ok: int


def file_entries(results: Sequence[ResultFile], user_root: str | Path | None = None,
                 locale: str | None = "en") -> list[FileEntry]:
    """Every file, newest first, with the device it describes: the GPU, the CPU, or a trace (no device ran it)."""
    mine = Path(user_root).resolve() if user_root is not None else None
    out = []
    for r in results:
        p = Path(r.path).resolve()
        folder = p.parent.name
        if r.is_traced:
            gpu = t("pages.bench.traced_device", locale, emulates=r.settings.get("emulates") or "cuda")
        elif r.device == "cpu":
            gpu = "CPU: " + str(r.environment.get("cpu") or "?")
        else:
            gpu = r.environment.get("gpu_name") or folder
        out.append(FileEntry(
            path=r.path, device_dir=folder, gpu_label=str(gpu), model=r.model_name, created_utc=r.created_utc,
            partial=r.partial, yours=mine is not None and mine in p.parents,
            n_ok=sum(1 for m in r.measurements if m.ok)))
    out.sort(key=lambda e: (e.created_utc, e.path), reverse=True)
    return out


def filter_entries(entries: Sequence[FileEntry], device_dir: str | None, model: str | None) -> list[FileEntry]:
    return [e for e in entries if (device_dir is None or e.device_dir == device_dir)
            and (model is None or e.model == model)]


def is_published(r: ResultFile) -> bool:
    """A file of published figures (results/published/, built by `python -m bench published build`)."""
    return bool(r.measurements) and all(m.source == "published" for m in r.measurements)


# ---------------------------------------------------------------- published figures

@dataclass(frozen=True)
class PublishedRow:
    """One published figure as the Benchmarks page lists it: the value and unit as published, the one-GPU
    micro-step the planner derives from it, and where it stands (citation, link, transcription file)."""

    source_slug: str
    model: str  # the id a scenario names
    published_model: str
    gpu_id: str
    gpu_name: str
    gpu_count: int
    parallelism: str
    precision: str
    precision_as_published: str
    batch_per_gpu: int
    seq_len: int | None
    value: float | None  # None for an out-of-memory outcome (unit "oom": the run ran out of memory)
    unit: str
    micro_step_ms: float | None
    planned: bool  # one GPU, no sharding: plans read it as a step time (multi-GPU rows are scaling data)
    stack: str
    retrieved: str
    citation: str
    url: str | None
    path: str


def citation_url(source: str) -> str | None:
    """repository@commit:path#Lstart[-Lend] -> the GitHub page of those lines at that commit (None otherwise)."""
    m = REPO_SOURCE.match(source or "")
    if not m:
        return None
    lines = f"#L{m['start']}" + (f"-L{m['end']}" if m["end"] else "")
    return f"https://github.com/{m['repo']}/blob/{m['commit']}/{m['path']}{lines}"


def published_rows(results: Sequence[ResultFile]) -> list[PublishedRow]:
    """Every published figure of every file, by source, model, GPU and GPU count."""
    out = []
    for r in results:
        for m in r.measurements:
            p = m.provenance
            if m.source != "published" or p is None or (p.published is None and m.status != "oom"):
                continue
            step = m.published_micro_step_s
            par = m.parallelism
            data = par.data if par else "none"
            out.append(PublishedRow(
                source_slug=str(r.settings.get("source_slug") or "?"), model=r.model_name,
                published_model=str(r.model.get("published_name") or r.model_name),
                gpu_id=str(r.gpu_profile_id or "?"), gpu_name=str(r.environment.get("gpu_name") or "?"),
                gpu_count=m.gpu_count or 1, parallelism=data, precision=m.precision,
                precision_as_published=p.precision_as_published or m.precision, batch_per_gpu=m.batch_size,
                seq_len=m.seq_len, value=p.published.value if p.published else None,
                unit=p.published.unit if p.published else "oom",
                micro_step_ms=step * 1e3 if step else None,
                planned=m.is_one_gpu and step is not None,
                stack=p.stack or p.stack_as_written or "?", retrieved=p.retrieved.isoformat() if p.retrieved else "?",
                citation=p.source or "?", url=citation_url(p.source or ""), path=r.path))
    return sorted(out, key=lambda x: (x.source_slug, x.model, x.gpu_id, x.gpu_count, x.precision, x.batch_per_gpu))


def filter_published(rows: Sequence[PublishedRow], *, gpu: str | None = None, model: str | None = None,
                     source: str | None = None) -> list[PublishedRow]:
    return [r for r in rows if (gpu is None or r.gpu_id == gpu) and (model is None or r.model == model)
            and (source is None or r.source_slug == source)]


def point_counts(results: Sequence[ResultFile]) -> dict[str, dict[str, int]]:
    """Per GPU profile id: how many step-time points bench runs measured and how many published figures exist."""
    counts: dict[str, dict[str, int]] = {}
    for r in results:
        gpu = r.gpu_profile_id
        if not gpu or r.device != "cuda":
            continue
        c = counts.setdefault(str(gpu), {"measured": 0, "published": 0})
        for m in r.measurements:
            if m.ok and m.source == "measured" and m.step_time_s is not None:
                c["measured"] += 1
            elif m.ok and m.source == "published":
                c["published"] += 1
    return counts


# ---------------------------------------------------------------- reasons a file gives

REASON_KEYS = "bench_reason."  # locales/<lang>/bench.yaml: one sentence per key of planner.vocab.BENCH_REASONS


def _param_text(value: object, locale: str | None) -> str:
    """A reason's parameter in the locale: numbers in its format, words (ids, an exception's message) as written."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return fmt.number(value, locale, 0) if float(value).is_integer() else fmt.sig(value, locale, 3)


def reason_text(parts: Sequence[ReasonPart], locale: str | None = "en") -> str:
    """A reason read from a result file (its parts: planner.inputs.reasons), in the locale's language: each key
    from the catalogs with its parameters filled in, text with no key (a teammate's own words) as written."""
    return SEPARATOR.join(
        part.text if part.key is None else
        t(REASON_KEYS + part.key, locale, **{k: _param_text(v, locale) for k, v in part.params.items()})
        for part in parts)


# ---------------------------------------------------------------- one file

def measurement_rows(r: ResultFile, locale: str | None = "en") -> list[dict]:
    """One row per measurement, numbers in the units of the column names (ms, GiB, %, J); None = not measured;
    the reason in the locale's language (reason_text)."""
    rows = []
    for m in r.measurements:
        st = m.step_time_s
        rows.append({
            "precision": m.precision, "batch": m.batch_size, "status": m.status, "source": m.source,
            "step_ms": st.median * 1000 if st else None, "p10_ms": st.p10 * 1000 if st else None,
            "p90_ms": st.p90 * 1000 if st else None, "n": st.n if st else None,
            "samples_per_s": m.samples_per_s,
            "peak_gib": m.peak_allocated_bytes / GIB if m.peak_allocated_bytes is not None else None,
            "reserved_gib": m.peak_reserved_bytes / GIB if m.peak_reserved_bytes is not None else None,
            "tflops": m.achieved_tflops, "mfu_pct": 100 * m.mfu if m.mfu is not None else None,
            "gpu_util_pct": m.gpu_util_pct, "power_w": m.power_w, "energy_j": m.energy_j_per_step,
            "reason": reason_text(m.reason_parts, locale),
        })
    return rows


def phase_rows(r: ResultFile) -> list[dict]:
    """Seconds per phase (data, forward, backward, optimizer) of each ok measurement that has them."""
    rows = []
    for m in r.measurements:
        if not m.ok:
            continue
        for i, phase in enumerate(PHASES):
            value = m.phases_s.get(phase)
            if value is not None:
                rows.append({"setting": f"{m.precision} b={m.batch_size}", "precision": m.precision,
                             "batch": m.batch_size, "phase": phase, "order": i, "ms": value * 1000})
    return rows


def max_batch_rows(r: ResultFile, locale: str | None = "en") -> list[dict]:
    out = []
    for mb, why in zip(r.max_batch, r.max_batch_reasons, strict=True):
        trials = mb.get("trials") or []
        out.append({"precision": mb.get("precision"), "max_batch": mb.get("max_batch"),
                    "safe_batch": _safe_batch(mb),
                    "trials": ", ".join(f"{tr.get('batch_size')}: {tr.get('status')}" for tr in trials),
                    "n_trials": len(trials), "reason": reason_text(why, locale)})
    return out


def _safe_batch(mb: Mapping) -> str:
    """'112 ✓' (confirmed by a repeat run), '112 ?' (not confirmed), '—' (a /1 file: no safe batch)."""
    safe = mb.get("safe_batch")
    if safe is None:
        return "—"
    return f"{safe} {'✓' if mb.get('safe_confirmed') else '?'}"


def dataloader_rows(r: ResultFile, locale: str | None = "en") -> list[dict]:
    return [{"num_workers": d.get("num_workers"), "pin_memory": d.get("pin_memory"),
             "samples_per_s": d.get("samples_per_s"), "per_sample_cpu_s": d.get("per_sample_cpu_s"),
             "reason": reason_text(why, locale)} for d, why in zip(r.dataloader, r.dataloader_reasons, strict=True)]


def unmeasured_rows(r: ResultFile, locale: str | None = "en") -> list[dict]:
    """Each field left null, once, with its reason (in the locale's language) and the measurements it applies to."""
    seen: dict[tuple[str, str], list[str]] = {}
    for m in r.measurements:
        for fld, why in m.unmeasured_parts.items():
            seen.setdefault((fld, reason_text(why, locale)), []).append(f"{m.precision} b={m.batch_size}")
    return [{"field": f, "reason": why, "where": ", ".join(where)} for (f, why), where in seen.items()]


def _text(value: object) -> str:
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=str, ensure_ascii=False)
    return "—" if value is None else str(value)


def key_value_rows(block: Mapping) -> list[tuple[str, str]]:
    """A mapping (environment, settings) as (key, text) rows; nested values as compact JSON."""
    return [(str(k), _text(v)) for k, v in block.items()]


# ---------------------------------------------------------------- charts

def _precision_colour(precisions: Sequence[str], locale: str | None):
    import altair as alt

    domain = [p for p in PRECISIONS if p in precisions]
    colours = [PRECISION_COLOURS[PRECISIONS.index(p)] for p in domain]
    return alt.Color("precision:N", title=t("pages.bench.col.precision", locale),
                     scale=alt.Scale(domain=domain, range=colours), legend=alt.Legend(orient="right"))


def batch_chart(rows: Sequence[dict], field: str, locale: str | None = "en") -> alt.Chart | None:
    """`field` (samples_per_s, peak_gib, mfu_pct, energy_j) against the batch size, one line per precision."""
    import altair as alt

    from planner.present.charts import vega_locale

    data = [r for r in rows if r["status"] == "ok" and r.get(field) is not None]
    if not data:
        return None
    title = t(f"pages.bench.chart.{field}", locale)
    batches = sorted({r["batch"] for r in data})
    # Streamlit fits the whole chart (title, legend, axes) into `height`: the legend goes right, not on top.
    chart = alt.Chart(alt.Data(values=[{k: r[k] for k in ("precision", "batch", field)} for r in data])).mark_line(
        point=True).encode(
        x=alt.X("batch:Q", title=t("pages.bench.chart.batch_axis", locale),
                scale=alt.Scale(type="log", base=2, domain=[batches[0], batches[-1]]),
                axis=alt.Axis(values=batches, format=",~r")),
        y=alt.Y(f"{field}:Q", title=None, axis=alt.Axis(format=",.3~r")),
        color=_precision_colour([r["precision"] for r in data], locale),
        tooltip=["precision:N", "batch:Q", alt.Tooltip(f"{field}:Q", title=title, format=",.4~r")],
    ).properties(height=300, title=title)
    return chart.configure(locale=vega_locale(locale)).configure_view(stroke=None)


def phase_chart(rows: Sequence[dict], locale: str | None = "en") -> alt.Chart | None:
    """Stacked milliseconds per phase for each (precision, batch)."""
    import altair as alt

    from planner.present.charts import PART_COLOURS, vega_locale

    if not rows:
        return None
    names = {p: t(f"pages.bench.phase.{p}", locale) for p in PHASES}
    data = [{**r, "phase": names[r["phase"]]} for r in rows]
    order = list(dict.fromkeys(r["setting"] for r in rows))
    chart = alt.Chart(alt.Data(values=data)).mark_bar().encode(
        y=alt.Y("setting:N", title=None, sort=order),
        x=alt.X("sum(ms):Q", title=t("pages.bench.chart.phase_axis", locale), stack="zero"),
        color=alt.Color("phase:N", title=None, sort=list(names.values()),
                        scale=alt.Scale(domain=list(names.values()), range=list(PART_COLOURS[:len(names)])),
                        legend=alt.Legend(orient="top")),
        order=alt.Order("order:Q"),
        tooltip=["setting:N", "phase:N", alt.Tooltip("ms:Q", format=",.3~g")],
    ).properties(height=alt.Step(26), title=t("pages.bench.chart.phases", locale))
    return chart.configure(locale=vega_locale(locale)).configure_view(stroke=None)
