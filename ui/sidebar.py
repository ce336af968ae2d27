"""The scenario's widgets, keyed; their values live in st.session_state and become a Scenario in ui.state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from planner.inputs.errors import InputError
from planner.vocab import (
    ADAPTER_TARGETS,
    BASE_DTYPES,
    DEADLINE_CONFIDENCES,
    MLP_KINDS,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PRECISIONS,
    REGION_GROUPS,
    SHARDINGS,
    STATE_LAYOUTS,
    TIERS,
)
from planner.present import fmt
from ui import scenario_files, state
from ui.i18n_ui import LANGUAGES, LOCALES, choice_label, file_uploader, tr
from ui.panels import lazy_expander

COUNT_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CURRENCIES = ("USD", "EUR", "MXN", "ARS", "COP", "CLP", "PEN", "BRL", "UYU", "GBP", "CAD", "JPY", "INR")
WORK_KINDS = ("epochs", "tokens", "reference_points")
ADAPTER_KINDS = ("none", "lora", "qlora")
FILE_PANEL = "sidebar_file"  # the "Scenario file" section: examples, upload, download (a lazy panel)


def _with_current(options: Sequence, key: str) -> list:
    """Choices plus whatever the scenario holds (a hand-written file may name one the list lacks)."""
    out = list(options)
    current = st.session_state.get(key)
    for value in current if isinstance(current, list) else [current]:
        if value is not None and value not in out:
            out.append(value)
    return out


def _num(label_key: str, key: str, *, optional: bool = False, step: float | None = None, fmt: str | None = None,
         disabled: bool = False, help_key: str | None = None) -> None:
    lo, hi = state.BOUNDS[key]
    step_by: float | None = step if step is not None else (1 if isinstance(lo, int) else None)
    help_text = tr(help_key) if help_key else None
    if optional:  # value=None: the field may be left empty ("auto")
        st.number_input(tr(label_key), min_value=lo, max_value=hi, value=None, step=step_by, format=fmt, key=key,
                        disabled=disabled, placeholder=tr("app.sidebar.placeholder_auto"), help=help_text)
    else:
        st.number_input(tr(label_key), min_value=lo, max_value=hi, step=step_by, format=fmt, key=key,
                        disabled=disabled, help=help_text)


# ---------------------------------------------------------------- callbacks (run before the script)

# Choice widgets whose labels are translated. The browser keeps a choice as its label, so after a language
# switch each value is set again: Streamlit then sends it with the new labels.
TRANSLATED_CHOICES = ("model_name", "work_kind", "optimizer", "sharding", "adapter_kind", "adapter_targets", "tier",
                      "provider", "region_group", "deadline_confidence")


def _on_lang() -> None:
    ss = st.session_state
    ss["ui_locale"] = ss["ui_lang"]
    for key in TRANSLATED_CHOICES:
        if key in ss:
            ss[key] = ss[key]


def _on_model() -> None:
    st.session_state.update(state.model_reset_values())
    base = st.session_state.get(state.BASE_KEY) or {}
    model = base.get("model") or {}
    for field in state.MODEL_CARRIED:
        model.pop(field, None)


def _on_gpus_all(known: Sequence[str]) -> None:
    """Unticking 'all GPUs' starts from the GPUs of the recommended and runner-up options, not from nothing."""
    ss = st.session_state
    if not ss["gpus_all"] and not ss.get("gpus"):
        ss["gpus"] = list(dict.fromkeys(ss.get("_focus_gpus") or known[:1]))


def _on_upload(known: Sequence[str]) -> None:
    up = st.session_state.get("upload")
    st.session_state.pop("_upload_error", None)
    st.session_state.pop("_upload_ok", None)
    if up is None:
        return
    try:
        scenario = scenario_files.scenario_from_upload(up.name, up.getvalue(), known)
    except InputError as exc:
        st.session_state["_upload_error"] = str(exc)
        return
    state.apply_scenario(st.session_state, scenario)
    st.session_state["_upload_ok"] = up.name


def _on_example(known: Sequence[str]) -> None:
    path = st.session_state.get("example")
    if not path:
        return
    scenario = scenario_files.load_example(path, known)
    state.apply_scenario(st.session_state, scenario)


# ---------------------------------------------------------------- sections

def normalize_locale(ss) -> None:
    """Keep the locale inside the chosen language (a link or file may carry es-AR with the 'es' switch)."""
    if ss.get("ui_lang") not in LOCALES:
        ss["ui_lang"] = "en"
    if ss.get("ui_locale") not in LOCALES[ss["ui_lang"]]:
        ss["ui_locale"] = ss["ui_lang"]


def render_sidebar(profiles: Mapping, model_names: Sequence[str], providers: Sequence[str],
                   examples: Mapping[str, str]):
    """Every scenario widget, grouped; labels from the catalog; bounds from ui.state.BOUNDS."""
    ss = st.session_state
    known = list(profiles)
    sb = st.sidebar
    with sb:
        st.radio(tr("app.sidebar.language"), LANGUAGES, key="ui_lang", horizontal=True,
                 format_func=choice_label("common.language"), on_change=_on_lang)
        st.selectbox(tr("app.sidebar.locale"), list(LOCALES[ss["ui_lang"]]), key="ui_locale",
                     format_func=lambda loc: f"{loc} · {fmt.number(1234.5, loc, 1)} · {fmt.money(9.5, 'USD', loc)}",
                     help=tr("app.sidebar.locale_help"))
        st.text_input(tr("app.sidebar.scenario_name"), key="scenario_name", max_chars=120)

    with sb.expander(tr("app.sidebar.section_model"), expanded=True):
        st.selectbox(tr("app.sidebar.model"), _with_current([*model_names, state.CUSTOM_MODEL], "model_name"),
                     key="model_name", on_change=_on_model,
                     format_func=choice_label(None, {state.CUSTOM_MODEL: "app.sidebar.model_custom"}),
                     help=tr("app.sidebar.model_help"))
        _num("app.sidebar.params", "model_params", optional=True, fmt="%d", help_key="app.sidebar.params_help")
        _num("app.sidebar.flops", "model_flops", optional=True, fmt="%.3e", help_key="app.sidebar.flops_help")
        st.checkbox(tr("app.sidebar.transformer"), key="model_transformer", help=tr("app.sidebar.transformer_help"))
        if ss["model_transformer"]:
            c1, c2 = st.columns(2)
            with c1:
                _num("app.sidebar.t_layers", "t_layers")
                _num("app.sidebar.t_heads", "t_heads")
                _num("app.sidebar.t_vocab", "t_vocab")
            with c2:
                _num("app.sidebar.t_hidden", "t_hidden")
                _num("app.sidebar.t_seq_len", "t_seq_len")
                _num("app.sidebar.t_ffn", "t_ffn", optional=True)
            st.radio(tr("app.sidebar.t_mlp"), MLP_KINDS, key="t_mlp", horizontal=True)
        if "model_attention" not in state.hidden_keys(ss):  # the same rule that keeps its value while hidden
            st.radio(tr("app.sidebar.attention"), state.ATTENTION_CHOICES, key="model_attention", horizontal=True,
                     format_func=choice_label("app.sidebar.attentions"), help=tr("app.sidebar.attention_help"))
        _num("app.sidebar.mfu", "model_mfu", optional=True, step=0.01, fmt="%.2f", help_key="app.sidebar.mfu_help")
        _num("app.sidebar.input_cpu", "model_input_cpu", optional=True, step=0.001, fmt="%.4f",
             help_key="app.sidebar.input_cpu_help")

    with sb.expander(tr("app.sidebar.section_workload"), expanded=True):
        st.radio(tr("app.sidebar.work_kind"), WORK_KINDS, key="work_kind", horizontal=True,
                 format_func=choice_label("app.sidebar.work_kinds"))
        _num("app.sidebar.dataset_samples", "dataset_samples", optional=True, fmt="%d",
             help_key="app.sidebar.dataset_samples_help")
        kind = ss["work_kind"]
        if kind == "epochs":
            _num("app.sidebar.epochs", "epochs", step=1.0, fmt="%g")
        elif kind == "tokens":
            _num("app.sidebar.tokens", "tokens", fmt="%.3e")
        else:
            st.text_area(tr("app.sidebar.ref_points"), key="ref_points", max_chars=2000, height=90,
                         placeholder="1024: 36 epochs\n16384: 4000 steps", help=tr("app.sidebar.ref_points_help"))
        _num("app.sidebar.b_crit", "b_crit", optional=True, fmt="%g", help_key="app.sidebar.b_crit_help")
        _num("app.sidebar.early_stop", "early_stop_fraction", step=0.05, fmt="%.2f",
             help_key="app.sidebar.early_stop_help")
        c1, c2 = st.columns(2)
        with c1:
            _num("app.sidebar.eval_overhead", "eval_overhead", step=0.01, fmt="%.2f")
        with c2:
            _num("app.sidebar.checkpoint_overhead", "checkpoint_overhead", step=0.01, fmt="%.2f")
        if state.has_attention(ss.get("model_name"), bool(ss.get("model_transformer"))):
            _num("app.sidebar.mean_tokens", "mean_tokens_per_sample", optional=True, fmt="%g",
                 help_key="app.sidebar.mean_tokens_help")
            if ss.get("mean_tokens_per_sample") is not None:
                st.checkbox(tr("app.sidebar.packing"), key="packing", help=tr("app.sidebar.packing_help"))
                if not ss.get("packing"):
                    _num("app.sidebar.padded_tokens", "padded_tokens_per_sample", optional=True, fmt="%g",
                         help_key="app.sidebar.padded_tokens_help")

    with sb.expander(tr("app.sidebar.section_training"), expanded=True):
        st.multiselect(tr("app.sidebar.precisions"), PRECISIONS, key="precisions",
                       help=tr("app.sidebar.precisions_help"))
        st.selectbox(tr("app.sidebar.optimizer"), OPTIMIZERS, key="optimizer",
                     format_func=choice_label("common.optimizer"))
        st.radio(tr("app.sidebar.optimizer_impl"), OPTIMIZER_IMPLS, key="optimizer_impl", horizontal=True,
                 help=tr("app.sidebar.optimizer_impl_help"))
        _num("app.sidebar.global_batch", "global_batch", help_key="app.sidebar.global_batch_help")
        _num("app.sidebar.lr_reference_batch", "lr_reference_batch", optional=True,
             help_key="app.sidebar.lr_reference_batch_help")
        st.checkbox(tr("app.sidebar.micro_auto"), key="micro_auto", help=tr("app.sidebar.micro_auto_help"))
        _num("app.sidebar.micro_batch", "micro_batch", disabled=bool(ss["micro_auto"]))
        st.checkbox(tr("app.sidebar.checkpointing"), key="checkpointing", help=tr("app.sidebar.checkpointing_help"))
        st.selectbox(tr("app.sidebar.sharding"), SHARDINGS, key="sharding",
                     format_func=choice_label("common.sharding"))
        st.selectbox(tr("app.sidebar.state_layout"), STATE_LAYOUTS, key="state_layout",
                     help=tr("app.sidebar.state_layout_help"))
        _num("app.sidebar.frozen_fraction", "frozen_fraction", step=0.05, fmt="%.2f",
             help_key="app.sidebar.frozen_fraction_help")
        st.selectbox(tr("app.sidebar.adapter"), ADAPTER_KINDS, key="adapter_kind",
                     format_func=choice_label("common.adapter"))
        if ss["adapter_kind"] != "none":
            c1, c2 = st.columns(2)
            with c1:
                _num("app.sidebar.adapter_rank", "adapter_rank")
                st.selectbox(tr("app.sidebar.adapter_base_dtype"), BASE_DTYPES, key="adapter_base_dtype")
            with c2:
                st.selectbox(tr("app.sidebar.adapter_targets"), ADAPTER_TARGETS, key="adapter_targets",
                             format_func=choice_label("common.adapter_targets"))

    with sb.expander(tr("app.sidebar.section_gpus"), expanded=True):
        st.checkbox(tr("app.sidebar.gpus_all"), key="gpus_all", on_change=_on_gpus_all, args=(known,))
        if not ss["gpus_all"]:
            st.multiselect(tr("app.sidebar.gpus"), _with_current(sorted(profiles), "gpus"), key="gpus",
                           format_func=lambda g: profiles[g].name if g in profiles else g)
        st.multiselect(tr("app.sidebar.gpu_counts"), sorted(_with_current(COUNT_CHOICES, "gpu_counts")),
                       key="gpu_counts", help=tr("app.sidebar.gpu_counts_help"))
        c1, c2 = st.columns(2)
        with c1:
            _num("app.sidebar.gpus_per_node", "gpus_per_node")
        with c2:
            _num("app.sidebar.cpu_workers", "cpu_workers_per_gpu", help_key="app.sidebar.cpu_workers_help")
        _num("app.sidebar.inter_node", "inter_node_gb_per_s", step=25.0, fmt="%g", help_key="app.sidebar.inter_node_help")
        _num("app.sidebar.workspace", "workspace_gib", optional=True, step=0.25, fmt="%.2f",
             help_key="app.sidebar.workspace_help")

    with sb.expander(tr("app.sidebar.section_pricing"), expanded=True):
        st.selectbox(tr("app.sidebar.tier"), _with_current(TIERS, "tier"), key="tier",
                     format_func=choice_label("common.tier"))
        st.selectbox(tr("app.sidebar.provider"), _with_current(["cheapest", *providers], "provider"),
                     key="provider", format_func=choice_label(None, {"cheapest": "app.sidebar.provider_cheapest"}))
        if ss["tier"] != "on_prem":
            named = state.file_regions(ss)
            # Labels bound in this run's language (Streamlit may call format_func outside the run).
            group_label = choice_label("common.region_group")
            file_label = tr("app.sidebar.file_regions", names=", ".join(named))
            st.selectbox(tr("app.sidebar.region_group"),
                         _with_current(REGION_GROUPS + ((state.FILE_REGIONS,) if named else ()), "region_group"),
                         key="region_group", help=tr("app.sidebar.region_group_help"),
                         format_func=lambda v: file_label if v == state.FILE_REGIONS else group_label(v))
        if ss["tier"] == "spot":
            _num("app.sidebar.spot_rate", "spot_rate", step=0.01, fmt="%.3f", help_key="app.sidebar.spot_rate_help")
            c1, c2 = st.columns(2)
            with c1:
                _num("app.sidebar.spot_interval", "spot_interval", step=5.0, fmt="%g")
            with c2:
                _num("app.sidebar.spot_restart", "spot_restart", step=1.0, fmt="%g")
        if ss["tier"] == "on_prem":
            lo, hi = state.BOUNDS["onprem_purchase"]  # empty: each GPU's own cited price; a number: every GPU's
            st.number_input(tr("app.sidebar.onprem_purchase"), min_value=lo, max_value=hi, value=None, step=1000.0,
                            format="%.0f", key="onprem_purchase", placeholder=tr("app.sidebar.onprem_purchase_own"),
                            help=tr("app.sidebar.onprem_purchase_help"))
            c1, c2 = st.columns(2)
            with c1:
                _num("app.sidebar.onprem_years", "onprem_years", step=0.5, fmt="%g")
                _num("app.sidebar.onprem_kwh", "onprem_kwh", step=0.01, fmt="%.3f")
            with c2:
                _num("app.sidebar.onprem_util", "onprem_util", step=0.05, fmt="%.2f")
                _num("app.sidebar.onprem_pue", "onprem_pue", step=0.05, fmt="%.2f")
        st.selectbox(tr("app.sidebar.currency"), _with_current(CURRENCIES, "currency"), key="currency")
        if "exchange_rate" not in state.hidden_keys(ss):  # a local currency: its rate and the rate's date
            _num("app.sidebar.exchange_rate", "exchange_rate", step=0.01, fmt="%.4f",
                 help_key="app.sidebar.exchange_rate_help")
            st.date_input(tr("app.sidebar.exchange_rate_as_of"), value=None, key="exchange_rate_as_of",
                          format="YYYY-MM-DD", help=tr("app.sidebar.exchange_rate_as_of_help"))
        c1, c2 = st.columns(2)
        with c1:
            _num("app.sidebar.runs", "runs", help_key="app.sidebar.runs_help")
        with c2:
            _num("app.sidebar.tax_rate", "tax_rate", step=0.01, fmt="%.2f")
        _num("app.sidebar.failure_overhead", "failure_overhead", step=0.05, fmt="%.2f",
             help_key="app.sidebar.failure_overhead_help")

    with sb.expander(tr("app.sidebar.section_constraints"), expanded=True):
        _num("app.sidebar.deadline", "deadline_hours", optional=True, step=1.0, fmt="%g")
        st.radio(tr("app.sidebar.deadline_confidence"), DEADLINE_CONFIDENCES, key="deadline_confidence",
                 horizontal=True, format_func=choice_label("app.sidebar.confidence"),
                 help=tr("app.sidebar.deadline_confidence_help"))
        _num("app.sidebar.budget", "budget_usd", optional=True, step=100.0, fmt="%.0f")

    with sb:  # built only while open (ui.panels): closed, an uploader and a download cost every run nothing
        file_box = lazy_expander(tr("app.sidebar.section_file"), FILE_PANEL)
    if not file_box.open:
        return file_box
    with file_box:
        st.selectbox(tr("app.sidebar.example"), list(examples), index=None, key="example",
                     format_func=lambda p: examples[p], on_change=_on_example, args=(known,),
                     placeholder=tr("app.sidebar.example_placeholder"))
        # Above the loader's own 1 MiB rule: a larger file then reaches the loader, whose error names the file and
        # the limit at the top of the page (the widget's own limit only shows a chip here).
        file_uploader(tr("app.sidebar.upload"), key="upload", types=("yaml", "yml"), max_mb=16,
                      on_change=_on_upload, args=(known,), help=tr("app.sidebar.upload_help"))
    return file_box
