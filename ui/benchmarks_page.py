"""The Benchmarks page: browse every result file, run a benchmark here, trace memory without a GPU, import a file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from planner.engine.pooling import folder_verdicts
from planner.inputs.bench_events import PROTOCOL as EVENTS_PROTOCOL
from planner.inputs.bench_events import StreamProblem
from planner.inputs.errors import InputError
from planner.inputs.imports import import_result
from planner.inputs.resultfile import ResultFile
from planner.inputs.userdata import user_results_dir
from planner.inputs.zoo_catalog import load_catalog
from planner.present import fmt, pool_report, result_views
from ui import bench_runner, page_data
from ui.i18n_ui import begin_run, choice_label, dataframe, file_uploader, locale, localized, tr
from ui.markup import md, trm

RUN_KEY = "_bench_run"
SELECT_KEY = "_bench_select"  # a file to show next run (a finished run, an import), applied before the widgets
ALL = "__all__"
CUSTOM = "__custom__"  # the trace form's model choice for a package.module:callable typed in
TRACE_KEY = "_trace_outcome"
TRACE_ERROR_KEY = "_trace_error"
REFRESH_S = 1.0


# ---------------------------------------------------------------- browse

def _results() -> tuple[list[ResultFile], list[str]]:
    """The bench runs and traces to browse; published figures have their own tab."""
    inputs = page_data.inputs()
    return [r for r in inputs.results if not result_views.is_published(r)], list(inputs.result_problems)


# The decision first (what, where, how fast, used or not, where it stands), then the configuration details.
PUBLISHED_COLUMNS = ("source", "model", "gpu", "gpu_count", "precision", "batch", "value", "unit", "step_ms", "planned",
                     "citation", "parallelism", "seq_len", "precision_as_published", "published_model", "stack",
                     "retrieved")


def _published() -> None:
    ss = st.session_state
    rows = result_views.published_rows(page_data.inputs().results)
    st.caption(tr("pages.bench.published.intro"))
    if not rows:
        st.info(tr("pages.bench.published.none"))
        return
    gpus = {r.gpu_id: r.gpu_name for r in rows}
    # the labels in this run's language: Streamlit (and AppTest) may call format_func outside the run
    all_gpus, all_models = tr("pages.bench.published.all_gpus"), tr("pages.bench.all_models")
    all_sources = tr("pages.bench.published.all_sources")
    c1, c2, c3 = st.columns(3)
    with c1:
        st.selectbox(tr("pages.bench.filter_gpu"), [ALL, *sorted(gpus)], key="pub_gpu",
                     format_func=lambda g: all_gpus if g == ALL else g)
    with c2:
        st.selectbox(tr("pages.bench.filter_model"), [ALL, *sorted({r.model for r in rows})], key="pub_model",
                     format_func=lambda m: all_models if m == ALL else m)
    with c3:
        st.selectbox(tr("pages.bench.published.filter_source"), [ALL, *sorted({r.source_slug for r in rows})],
                     key="pub_source", format_func=lambda s: all_sources if s == ALL else s)
    shown = result_views.filter_published(rows, gpu=None if ss["pub_gpu"] == ALL else ss["pub_gpu"],
                                          model=None if ss["pub_model"] == ALL else ss["pub_model"],
                                          source=None if ss["pub_source"] == ALL else ss["pub_source"])
    st.caption(tr("pages.bench.published.count", n=len(shown), planned=sum(r.planned for r in shown),
                  sources=len({r.source_slug for r in shown}), files=len({r.path for r in shown})))
    if not shown:
        st.info(tr("pages.bench.published.none_match"))
        return
    col = {c: tr(f"pages.bench.published.col.{c}") for c in PUBLISHED_COLUMNS}
    values = {"source": lambda r: r.source_slug, "model": lambda r: r.model, "gpu": lambda r: r.gpu_id,
              "gpu_count": lambda r: r.gpu_count, "precision": lambda r: r.precision,
              "batch": lambda r: r.batch_per_gpu, "value": lambda r: r.value, "unit": lambda r: r.unit,
              "step_ms": lambda r: r.micro_step_ms, "planned": lambda r: r.planned,
              "citation": lambda r: r.url or r.citation,
              "parallelism": lambda r: tr("pages.bench.published.parallelism_none") if r.parallelism == "none"
              else r.parallelism,
              "seq_len": lambda r: r.seq_len, "precision_as_published": lambda r: r.precision_as_published,
              "published_model": lambda r: r.published_model, "stack": lambda r: r.stack,
              "retrieved": lambda r: r.retrieved}
    frame = pd.DataFrame([{col[c]: values[c](r) for c in PUBLISHED_COLUMNS} for r in shown])
    config = {col["planned"]: st.column_config.CheckboxColumn(),
              # the link shows the cited file and line; the full URL pins the commit
              col["citation"]: st.column_config.LinkColumn(display_text=r"/blob/[0-9a-f]+/(.*)$")}
    dataframe(localized(frame, {col["step_ms"]: 2, col["value"]: "g"}), hide_index=True, width="stretch",
              column_config=config, key="pub_table")
    st.caption(tr("pages.bench.published.not_built"))
    st.caption(tr("pages.bench.published.add_source"))


def _browse(results: list[ResultFile], problems: list[str]) -> None:
    ss = st.session_state
    loc = locale()
    entries = result_views.file_entries(results, user_results_dir(), loc)
    if problems:
        with st.expander(tr("pages.bench.problems", n=len(problems)), expanded=True):
            for p in problems:
                st.warning(md(p))
    if not entries:
        st.info(tr("pages.bench.no_files"))
        return
    wanted = ss.pop(SELECT_KEY, None)
    if wanted and any(e.path == wanted for e in entries):
        ss["bench_gpu"], ss["bench_model"], ss["bench_file"] = ALL, ALL, wanted
    gpus = {e.device_dir: e.gpu_label for e in entries}
    models = sorted({e.model for e in entries})
    all_gpus, all_models = tr("pages.bench.all_gpus"), tr("pages.bench.all_models")
    c1, c2 = st.columns(2)
    with c1:
        st.selectbox(tr("pages.bench.filter_gpu"), [ALL, *sorted(gpus)], key="bench_gpu",
                     format_func=lambda g: all_gpus if g == ALL else f"{gpus.get(g, g)} ({g})")
    with c2:
        st.selectbox(tr("pages.bench.filter_model"), [ALL, *models], key="bench_model",
                     format_func=lambda m: all_models if m == ALL else m)
    shown = result_views.filter_entries(entries, None if ss["bench_gpu"] == ALL else ss["bench_gpu"],
                                        None if ss["bench_model"] == ALL else ss["bench_model"])
    if not shown:
        st.info(tr("pages.bench.no_match"))
        return
    labels = {e.path: _entry_label(e) for e in shown}
    if ss.get("bench_file") not in labels:
        ss["bench_file"] = shown[0].path
    st.selectbox(tr("pages.bench.file", n=len(shown)), list(labels), key="bench_file",
                 format_func=lambda p: labels.get(p, p))
    result = next(r for r in results if r.path == ss["bench_file"])
    _show_file(result, next(e for e in shown if e.path == result.path), loc)


def _set_aside() -> None:
    """The measured points plans set aside (planner/engine/pooling.py), why, and a session choice to use a file
    anyway: the ids go to every plan of the session as data (page_data.TRUSTED_KEY)."""
    ss = st.session_state
    inputs = page_data.inputs()
    rows = pool_report.set_aside_rows(folder_verdicts(inputs.results, inputs.profiles), locale())
    if not rows:
        return
    files = {r.file_id: r.file for r in rows}
    if "bench_trust" not in ss:  # the widget forgets its value on another page; the session keeps it
        ss["bench_trust"] = [i for i in page_data.trusted() if i in files]
    with st.expander(tr("pages.bench.set_aside.title", n=len(rows)), expanded=True):
        st.caption(tr("pages.bench.set_aside.intro"))
        for row in rows:
            st.warning(md(f"{row.why} [{row.file_id}]"))
        st.multiselect(tr("pages.bench.set_aside.use"), list(files), key="bench_trust",
                       format_func=lambda i: f"{files.get(i, i)} [{i}]", help=tr("pages.bench.set_aside.help"),
                       on_change=_on_trust)


def _on_trust() -> None:
    st.session_state[page_data.TRUSTED_KEY] = list(st.session_state.get("bench_trust", ()))


def _entry_label(e: result_views.FileEntry) -> str:
    flags = (" · " + tr("pages.bench.partial") if e.partial else "") + (" · " + tr("pages.bench.yours") if e.yours
                                                                      else "")
    return f"{e.model} · {e.gpu_label} · {e.created_utc[:16].replace('T', ' ')} UTC{flags}"


def _show_file(r: ResultFile, entry: result_views.FileEntry, loc: str) -> None:
    env = r.environment
    head = "pages.bench.file_head_traced" if r.is_traced else "pages.bench.file_head"
    st.markdown(trm(head, model=r.model_name, gpu=entry.gpu_label,
                    date=r.created_utc[:16].replace("T", " ") + " UTC",
                    torch=env.get("torch") or "?", n=entry.n_ok, total=len(r.measurements)))
    st.caption(trm("pages.bench.file_path", path=r.path))
    if r.partial:
        st.warning(tr("pages.bench.partial_note"))
    rows = result_views.measurement_rows(r, loc)
    cols: tuple[str, ...] = ("precision", "batch", "status", "step_ms", "p10_ms", "p90_ms", "samples_per_s",
                             "peak_gib", "reserved_gib", "tflops", "mfu_pct", "gpu_util_pct", "power_w", "energy_j",
                             "reason")
    if r.is_traced:  # a trace has memory and FLOPs, no timing or telemetry: leave those columns out
        cols = ("precision", "batch", "status", "peak_gib", "reason")
    frame = pd.DataFrame([{tr(f"pages.bench.col.{c}"): row[c] for c in cols} for row in rows])
    digits = {tr(f"pages.bench.col.{c}"): d for c, d in (
        ("step_ms", 2), ("p10_ms", 2), ("p90_ms", 2), ("samples_per_s", 1), ("peak_gib", 2),
        ("reserved_gib", 2), ("tflops", 2), ("mfu_pct", 1), ("gpu_util_pct", 0),
        ("power_w", 0), ("energy_j", 2))}
    dataframe(localized(frame, digits), hide_index=True, width="stretch", key="bench_measurements")
    # Throughput and peak memory say loudly when missing; MFU and energy are often unmeasured (CPU) and say it quietly.
    for pair, say_missing in ((("samples_per_s", "peak_gib"), st.info), (("mfu_pct", "energy_j"), st.caption)):
        for col, field in zip(st.columns(2), pair, strict=True):
            with col:
                chart = result_views.batch_chart(rows, field, loc)
                if chart is not None:
                    st.altair_chart(chart, width="stretch")
                else:
                    say_missing(tr(f"pages.bench.no_{field}", why=_why(r, field, loc)))
    phases = result_views.phase_chart(result_views.phase_rows(r), loc)
    if phases is not None:
        st.altair_chart(phases, width="stretch")
    mb = result_views.max_batch_rows(r, loc)
    st.markdown("**" + tr("pages.bench.max_batch_title") + "**")
    if mb:
        dataframe(pd.DataFrame([{tr(f"pages.bench.col.{k}"): row[k] for k in
                                 ("precision", "max_batch", "safe_batch", "trials", "reason")} for row in mb]),
                  hide_index=True, width="stretch", key="bench_max_batch")
    else:
        st.caption(tr("pages.bench.no_max_batch"))
    dl = result_views.dataloader_rows(r, loc)
    if dl:
        st.markdown("**" + tr("pages.bench.dataloader_title") + "**")
        frame = pd.DataFrame([{tr(f"pages.bench.col.{k}"): row[k] for k in row} for row in dl])
        dataframe(localized(frame, {tr("pages.bench.col.samples_per_s"): 1, tr("pages.bench.col.per_sample_cpu_s"): "g"}),
                  hide_index=True, width="stretch", key="bench_dataloader")
    unmeasured = result_views.unmeasured_rows(r, loc)
    with st.expander(tr("pages.bench.unmeasured", n=len(unmeasured))):
        if unmeasured:
            dataframe(pd.DataFrame([{tr(f"pages.bench.col.{k}"): row[k] for k in ("field", "reason", "where")}
                                    for row in unmeasured]), hide_index=True, width="stretch")
    with st.expander(tr("pages.bench.environment")):
        _kv(result_views.key_value_rows(env))
    with st.expander(tr("pages.bench.settings")):
        _kv(result_views.key_value_rows({**r.model, **{f"settings.{k}": v for k, v in r.settings.items()}}))


def _why(r: ResultFile, field: str, loc: str) -> str:
    key = {"samples_per_s": "samples_per_s", "peak_gib": "peak_allocated_bytes", "mfu_pct": "mfu",
           "energy_j": "energy_j_per_step"}[field]
    reasons = {result_views.reason_text(m.unmeasured_parts[key], loc) for m in r.measurements
               if m.unmeasured_parts.get(key)}
    return "; ".join(sorted(reasons)) or tr("pages.bench.no_reason")


def _kv(rows) -> None:
    dataframe(pd.DataFrame(rows, columns=[tr("pages.bench.col.key"), tr("pages.bench.col.value")]),
              hide_index=True, width="stretch")


# ---------------------------------------------------------------- run here

def _code(text: str) -> str:
    """Text for inside a `code span`: shown as it is there, so it is not escaped; only a backtick could break it."""
    return str(text).replace("`", "'")


def _no_torch(python: str, missing: str | None) -> None:
    st.error(tr("pages.bench.no_torch", python=_code(python), missing=_code(missing or "torch")))
    st.code(bench_runner.install_command(python), language="bash")
    st.caption(tr("pages.bench.no_torch_gpu", env=bench_runner.PYTHON_ENV))


def _stream_problem(python: str, problem: StreamProblem, printed: str) -> None:
    """bench's output was not the event stream the app reads: which protocol it spoke, or what it printed."""
    st.error(tr(f"pages.bench.stream_{problem.key}", python=_code(python), protocol=problem.protocol or "—",
                expected=EVENTS_PROTOCOL, env=bench_runner.PYTHON_ENV))
    if printed:
        st.code(printed, language=None)


def _detect_panel() -> bench_runner.Detection:
    if st.button(tr("pages.bench.detect_again"), key="bench_detect"):
        found = page_data.detection(refresh=True)
    else:
        with st.spinner(tr("pages.bench.detecting")):
            found = page_data.detection()
    python = found.python
    if found.status == "no_torch":
        _no_torch(python, found.missing)
    elif found.problem is not None:
        _stream_problem(python, found.problem, found.message)
    elif found.status != "ok":
        st.error(tr("pages.bench.detect_failed", python=_code(python), status=found.status, message=md(found.message)))
    elif found.device == "cuda":
        facts = found.facts or {}  # not empty: it named the device
        rows = [{tr("pages.bench.col.index"): g.get("index"), tr("pages.bench.col.gpu"): g.get("name"),
                 tr("pages.bench.col.memory_gib"): round((g.get("total_memory_bytes") or 0) / 2**30, 1),
                 tr("pages.bench.col.capability"): g.get("capability"),
                 tr("pages.bench.col.profile"): g.get("profile_id") or tr("pages.bench.no_profile")}
                for g in found.gpus]
        st.success(trm("pages.bench.gpu_found", n=len(rows), torch=facts.get("torch"),
                       cuda=facts.get("cuda") or "?"))
        dataframe(localized(pd.DataFrame(rows), {tr("pages.bench.col.memory_gib"): 1}), hide_index=True, width="stretch",
                  key="bench_gpus")
        if any(not g.get("profile_id") for g in found.gpus):
            st.info(tr("pages.bench.unknown_gpu"))
    else:
        f = found.facts or {}
        st.info(trm("pages.bench.cpu_only", torch=f.get("torch"), cuda=f.get("cuda_reason") or "—",
                    nvml=f.get("nvml_reason") or "—", cpu=f.get("cpu") or "?"))
    st.caption(tr("pages.bench.python", python=_code(python), env=bench_runner.PYTHON_ENV))
    return found


def _start(catalog: dict) -> None:
    ss = st.session_state
    try:
        request = bench_runner.make_request(ss["run_model"], catalog, ss["run_precisions"], ss["run_batches"],
                                            ss["run_steps"], ss["run_warmup"], user_results_dir())
        ss[RUN_KEY] = bench_runner.start_run(request)
        ss.pop("_run_error", None)
        ss["_run_announced"] = False
    except (InputError, bench_runner.Busy, OSError) as exc:
        ss["_run_error"] = str(exc)


def _run_form(found: bench_runner.Detection) -> None:
    ss = st.session_state
    catalog = load_catalog()
    on_gpu = found.device == "cuda"
    models = list(catalog)
    running = bench_runner.active_run() is not None
    # Defaults as widget parameters, not session-state seeds: a run interrupted by a click cannot lose them.
    with st.container(border=True):
        c1, c2 = st.columns(2)
        with c1:
            model = st.selectbox(tr("pages.bench.run_model"), models, key="run_model", disabled=running,
                                 index=models.index("mlp") if "mlp" in models else 0,
                                 format_func=lambda m: f"{m} · {catalog[m].get('family', '')}")
            entry = catalog.get(model, {})
            st.caption(tr("pages.bench.model_caption", params=fmt.number(entry.get("params"), locale(), 0),
                          input=entry.get("input_desc", "—")))
            st.multiselect(tr("pages.bench.run_precisions"), list(bench_runner.PRECISIONS), key="run_precisions",
                           default=["bf16", "fp32"] if on_gpu else ["fp32"], disabled=running)
        with c2:
            st.text_input(tr("pages.bench.run_batches"), "32,64,128" if on_gpu else "8,16,32", key="run_batches",
                          disabled=running, help=tr("pages.bench.run_batches_help"))
            d1, d2 = st.columns(2)
            with d1:
                st.number_input(tr("pages.bench.run_steps"), min_value=1, max_value=1000, value=20 if on_gpu else 5,
                                step=1, key="run_steps", disabled=running)
            with d2:
                st.number_input(tr("pages.bench.run_warmup"), min_value=1, max_value=100, value=5 if on_gpu else 2,
                                step=1, key="run_warmup", disabled=running)
        can_run = found.status == "ok"
        st.button(tr("pages.bench.run_start"), key="run_start", type="primary", on_click=_start, args=(catalog,),
                  disabled=running or not can_run)
        if not can_run:
            st.caption(tr("pages.bench.run_needs_torch"))
    if ss.get("_run_error"):
        st.error(tr("pages.bench.run_error", message=md(ss["_run_error"])))


def _progress_panel() -> None:
    """Progress of this session's run; reruns the whole page once when it ends, so the browser lists the file."""
    ss = st.session_state
    run: bench_runner.BenchRun | None = ss.get(RUN_KEY)
    if run is None:
        other = bench_runner.active_run()
        if other is not None:
            st.info(tr("pages.bench.other_running", model=other.request.model))
        return
    state = run.state
    done, total = run.progress()
    events, lines = run.snapshot()
    last = next((e for e in reversed(events) if e.get("event") == "progress"), None)
    text = tr("pages.bench.progress", done=done, total=total or "?", seconds=int(run.elapsed_s()))
    if last is not None:
        step = last.get("step_time_s")
        text += " · " + tr("pages.bench.progress_last", precision=last.get("precision"), batch=last.get("batch"),
                           status=last.get("status"), ms=fmt.sig(step * 1000, locale()) if step else "—")
    st.progress(min(1.0, done / total) if total else 0.0, text=text)
    if state == "running":
        if st.button(tr("pages.bench.cancel"), key="run_cancel", disabled=run.cancelled):
            run.cancel()
            st.rerun()
        if run.cancelled:
            st.caption(tr("pages.bench.cancelling"))
    elif state == "done":
        st.success(trm("pages.bench.run_done", path=run.path or "?", n=done))
    elif state == "cancelled":
        if run.path and Path(run.path).exists():
            st.warning(trm("pages.bench.run_cancelled", path=run.path, n=done))
        else:
            st.warning(tr("pages.bench.run_cancelled_empty"))
    elif run.problem is not None:
        _stream_problem(run.python, run.problem, "")
    else:
        st.error(trm("pages.bench.run_failed", code=run.returncode, path=run.path or "—"))
    if lines:
        with st.expander(tr("pages.bench.log", n=len(lines)), expanded=state == "failed"):
            st.code("\n".join(lines[-40:]), language=None)
    if state != "running" and not ss.get("_run_announced"):
        ss["_run_announced"] = True
        if run.path and Path(run.path).exists():
            ss[SELECT_KEY] = run.path
        st.rerun(scope="app")


def _run_here() -> None:
    st.caption(tr("pages.bench.run_intro"))
    found = _detect_panel()
    _run_form(found)
    run = st.session_state.get(RUN_KEY)
    if run is not None and run.running:
        st.fragment(run_every=REFRESH_S)(_progress_panel)()
    else:
        _progress_panel()


# ---------------------------------------------------------------- trace

def _takes_seq_len(entry: dict) -> bool:
    """Token models build at any sequence length; images, ViT's fixed 197 patches and custom callables do not."""
    return bool(entry.get("seq_len")) and "token ids" in (entry.get("input_desc") or "")


def _trace_request(catalog: dict) -> bench_runner.TraceRequest:
    ss = st.session_state
    custom = ss["trace_model"] == CUSTOM
    model = ss["trace_custom"] if custom else ss["trace_model"]
    if custom and not (model or "").strip():
        raise InputError("trace", "custom model", model, "package.module:callable, e.g. mypkg.models:build")
    takes_seq = not custom and _takes_seq_len(catalog.get(model, {}))
    return bench_runner.make_trace_request(
        model, catalog, ss["trace_precisions"], ss["trace_batches"], optimizer=ss["trace_optimizer"],
        optimizer_impl=ss["trace_impl"], checkpointing=ss["trace_checkpointing"],
        frozen_fraction=ss["trace_frozen"], lora_rank=ss["trace_lora"],
        seq_len=ss["trace_seq_len"] if takes_seq else None, out=user_results_dir())


def _trace(catalog: dict) -> None:
    """Validate, then trace under a spinner (seconds); a written file is selected in the browser on the rerun."""
    ss = st.session_state
    ss.pop(TRACE_KEY, None)
    ss.pop(TRACE_ERROR_KEY, None)
    try:
        request = _trace_request(catalog)
    except InputError as exc:
        ss[TRACE_ERROR_KEY] = str(exc)
        return
    with st.spinner(tr("pages.bench.tracing", model=request.model)):
        outcome = bench_runner.trace(request)
        ss[TRACE_KEY] = outcome
        if outcome.path:
            ss[SELECT_KEY] = outcome.path
    if outcome.path:
        st.rerun()  # the browser tab was drawn before this one: draw it again with the new file


def _trace_form(found: bench_runner.Detection) -> None:
    catalog = load_catalog()
    models = [*catalog, CUSTOM]
    blocked = found.status == "no_torch"
    with st.container(border=True):
        c1, c2 = st.columns(2)
        with c1:
            model = st.selectbox(tr("pages.bench.trace_model"), models, key="trace_model",
                                 index=models.index("gpt2") if "gpt2" in models else 0,
                                 format_func=lambda m: tr("pages.bench.trace_custom_choice") if m == CUSTOM
                                 else f"{m} · {catalog[m].get('family', '')}")
            custom = model == CUSTOM
            st.text_input(tr("pages.bench.trace_custom"), key="trace_custom", disabled=not custom,
                          placeholder="mypkg.models:build", help=tr("pages.bench.trace_custom_help"))
            entry = {} if custom else catalog.get(model, {})
            if not custom:
                st.caption(tr("pages.bench.model_caption", params=fmt.number(entry.get("params"), locale(), 0),
                              input=entry.get("input_desc", "—")))
            st.multiselect(tr("pages.bench.run_precisions"), list(bench_runner.PRECISIONS), key="trace_precisions",
                           default=["fp32", "bf16"])
            st.text_input(tr("pages.bench.run_batches"), "1,8,32", key="trace_batches",
                          help=tr("pages.bench.trace_batches_help"))
            takes_seq = _takes_seq_len(entry)
            st.number_input(tr("pages.bench.trace_seq_len"), min_value=1, max_value=1_000_000, value=None, step=1,
                            key="trace_seq_len", disabled=not takes_seq,
                            placeholder=tr("pages.bench.trace_seq_len_default", n=entry["seq_len"]) if takes_seq
                            else tr("pages.bench.trace_seq_len_none"), help=tr("pages.bench.trace_seq_len_help"))
        with c2:
            optimizers = list(bench_runner.TRACEABLE_OPTIMIZERS)
            st.selectbox(tr("pages.bench.trace_optimizer"), optimizers, key="trace_optimizer",
                         index=optimizers.index("adamw"), format_func=choice_label("common.optimizer"))
            st.radio(tr("pages.bench.trace_impl"), list(bench_runner.TRACE_IMPLS), key="trace_impl", horizontal=True,
                     help=tr("pages.bench.trace_impl_help"))
            st.checkbox(tr("pages.bench.trace_checkpointing"), key="trace_checkpointing",
                        help=tr("pages.bench.trace_checkpointing_help"))
            st.number_input(tr("pages.bench.trace_frozen"), min_value=0.0, max_value=0.99, value=0.0, step=0.05,
                            format="%.2f", key="trace_frozen", help=tr("pages.bench.trace_frozen_help"))
            st.number_input(tr("pages.bench.trace_lora"), min_value=0, max_value=4096, value=0, step=1,
                            key="trace_lora", help=tr("pages.bench.trace_lora_help"))
        if st.button(tr("pages.bench.trace_start"), key="trace_start", type="primary", disabled=blocked):
            _trace(catalog)
        if blocked:
            st.caption(tr("pages.bench.trace_needs_torch"))


def _trace_report() -> None:
    ss = st.session_state
    if ss.get(TRACE_ERROR_KEY):
        st.error(tr("pages.bench.trace_error", message=md(ss[TRACE_ERROR_KEY])))
    out: bench_runner.TraceOutcome | None = ss.get(TRACE_KEY)
    if out is None:
        return
    seconds = fmt.number(out.elapsed_s, locale(), 1)
    if out.status == "ok":
        st.success(trm("pages.bench.trace_done", path=out.path, seconds=seconds))
    elif out.status == "some_failed":
        st.warning(trm("pages.bench.trace_some_failed", path=out.path, message=out.message))
    elif out.status == "bad_input":
        st.error(trm("pages.bench.trace_refused", message=out.message))
    elif out.status == "no_torch":
        _no_torch(out.python, out.missing)
    elif out.status == "timeout":
        st.error(tr("pages.bench.trace_timeout", seconds=int(bench_runner.TRACE_TIMEOUT_S)))
    elif out.problem is not None:
        _stream_problem(out.python, out.problem, out.message)
    else:
        st.error(trm("pages.bench.trace_failed", code=out.code, message=out.message))
    if out.summary and out.path:
        st.code(out.summary, language=None)


def _trace_here() -> None:
    st.caption(tr("pages.bench.trace_intro"))
    found = page_data.detection()  # cached: the Run tab has just asked the same interpreter
    if found.status == "no_torch":
        _no_torch(found.python, found.missing)
    _trace_form(found)
    _trace_report()
    st.caption(tr("pages.bench.python", python=_code(found.python), env=bench_runner.PYTHON_ENV))


# ---------------------------------------------------------------- import

def _on_import() -> None:
    ss = st.session_state
    up = ss.get("import_file")
    ss.pop("_import_error", None)
    ss.pop("_import_ok", None)
    if up is None:
        return
    try:
        done = import_result(up.name, up.getvalue())
    except InputError as exc:
        ss["_import_error"] = str(exc)
        return
    ss["_import_ok"] = (up.name, str(done.path), done.already_there)
    ss[SELECT_KEY] = str(done.path)


def _import() -> None:
    ss = st.session_state
    st.caption(trm("pages.bench.import_intro", folder=str(user_results_dir())))
    file_uploader(tr("pages.bench.import_file"), key="import_file", types=("json",), on_change=_on_import,
                  help=tr("pages.bench.import_help"))
    if ss.get("_import_error"):
        st.error(tr("pages.bench.import_error", message=md(ss["_import_error"])))
    elif ss.get("_import_ok"):
        name, path, again = ss["_import_ok"]
        st.success(trm("pages.bench.import_again" if again else "pages.bench.import_ok", name=name, path=path))


def main() -> None:
    begin_run()
    st.title(tr("pages.bench.title"))
    st.caption(tr("pages.bench.tagline"))
    browse, published, run_tab, trace_tab, import_tab = st.tabs([
        tr("pages.bench.tab_browse"), tr("pages.bench.tab_published"), tr("pages.bench.tab_run"),
        tr("pages.bench.tab_trace"), tr("pages.bench.tab_import")])
    with browse:  # first: it must not wait for `bench detect` (seconds) in the Run tab
        _set_aside()
        _browse(*_results())
    with published:
        _published()
    with run_tab:
        _run_here()
    with trace_tab:
        _trace_here()
    with import_tab:
        _import()


if __name__ == "__main__":
    main()
