"""The scenario's widgets, one per row of planner/inputs/fields.py, keyed; their values live in st.session_state and
become a Scenario in ui.state."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from planner.inputs.errors import InputError
from planner.inputs.fields import BY_KEY, SECTION_LABELS, SIDEBAR, Field, When
from planner.present import fmt
from planner.vocab import ADAPTER_KINDS
from ui import scenario_files, state
from ui.i18n_ui import LANGUAGES, LOCALES, choice_label, file_uploader, tr
from ui.panels import lazy_expander, widget_key

FILE_PANEL = "sidebar_file"  # the "Scenario file" section: examples, upload, download (a lazy panel)
# Sidebar widgets that are no scenario field: the interface's language and number format (the user's own, not the
# scenario's), and the "Scenario file" section (its expander, the example picker and uploader that load a whole
# scenario, and the Plan page's download of it).
UI_WIDGETS = ("ui_lang", "ui_locale", widget_key(FILE_PANEL), "example", "upload", "download")


def _with_current(options: Sequence, key: str) -> list:
    """Choices plus whatever the scenario holds (a hand-written file may name one the list lacks)."""
    out = list(options)
    current = st.session_state.get(key)
    for value in current if isinstance(current, list) else [current]:
        if value is not None and value not in out:
            out.append(value)
    return out


def _num(f: Field, label: str, help_text: str | None, disabled: bool) -> None:
    lo, hi = state.BOUNDS[f.key or ""]
    step = f.step if f.step is not None else (1 if f.type is int else None)
    if f.optional:  # value=None: the field may be left empty ("auto")
        st.number_input(label, min_value=lo, max_value=hi, value=None, step=step, format=f.format, key=f.key,
                        disabled=disabled, placeholder=tr(f.placeholder or "app.sidebar.placeholder_auto"),
                        help=help_text)
    else:
        st.number_input(label, min_value=lo, max_value=hi, step=step, format=f.format, key=f.key,
                        disabled=disabled, help=help_text)


# ---------------------------------------------------------------- callbacks (run before the script)

# Choice widgets whose labels are translated. The browser keeps a choice as its label, so after a language
# switch each value is set again: Streamlit then sends it with the new labels.
TRANSLATED_CHOICES = tuple(f.key for rows in SIDEBAR.values() for f in rows
                           if f.key and f.widget in ("select", "radio", "multiselect"))


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


def _on_adapter_kind() -> None:
    """The LoRA/QLoRA switch moves the base with it (issue 33): QLoRA over a 16-bit base is planned as neither."""
    ss = st.session_state
    if ss.get("adapter_kind") in ADAPTER_KINDS:
        ss["adapter_base_dtype"] = state.base_on_adapter_switch(ss["adapter_kind"], ss.get("adapter_base_dtype"))


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
        st.session_state["_upload_error"] = exc
        return
    state.apply_scenario(st.session_state, scenario, origin=up.name)
    st.session_state["_upload_ok"] = up.name


def _on_example(known: Sequence[str]) -> None:
    path = st.session_state.get("example")
    if not path:
        return
    scenario = scenario_files.load_example(path, known)
    state.apply_scenario(st.session_state, scenario, origin=path)


# ---------------------------------------------------------------- sections

def normalize_locale(ss) -> None:
    """Keep the locale inside the chosen language (a link or file may carry es-AR with the 'es' switch)."""
    if ss.get("ui_lang") not in LOCALES:
        ss["ui_lang"] = "en"
    if ss.get("ui_locale") not in LOCALES[ss["ui_lang"]]:
        ss["ui_locale"] = ss["ui_lang"]


@dataclass(frozen=True)
class _Choices:
    """How one widget offers its values this run: the options, their labels, and a callback."""

    options: Sequence[Any]
    label: Callable[[Any], str]
    on_change: Callable[..., None] | None = None
    args: tuple = ()


def _choices(f: Field, runtime: Mapping[str, _Choices]) -> _Choices:
    if (c := runtime.get(f.key or "")) is not None:
        return c
    return _Choices(f.choices or f.offered, choice_label(f.choice_labels))


def _draw(f: Field, runtime: Mapping[str, _Choices], view: Mapping[str, Any]) -> None:
    """One table row's widget, labelled from the catalog."""
    label = tr(f.label_key or "")
    help_text = tr(f.help) if f.help else None
    key = f.key or ""
    if f.widget == "number":
        _num(f, label, help_text, disabled=not _all(f.enabled, view))
    elif f.widget == "checkbox":
        c = runtime.get(key)
        st.checkbox(label, key=key, help=help_text, on_change=c.on_change if c else None, args=c.args if c else ())
    elif f.widget == "text":
        st.text_input(label, key=key, max_chars=f.max_chars, help=help_text)
    elif f.widget == "text_area":
        st.text_area(label, key=key, max_chars=f.max_chars, height=90, help=help_text,
                     placeholder="1024: 36 epochs\n16384: 4000 steps")
    elif f.widget == "date":
        st.date_input(label, value=None, key=key, format="YYYY-MM-DD", help=help_text)
    else:
        c = _choices(f, runtime)
        if f.widget == "radio":
            st.radio(label, c.options, key=key, horizontal=True, format_func=c.label, help=help_text,
                     on_change=c.on_change, args=c.args)
            return
        options = _with_current(c.options, key)
        if f.widget == "multiselect":
            st.multiselect(label, sorted(options) if f.type is int else options, key=key, format_func=c.label,
                           help=help_text)
        else:
            st.selectbox(label, options, key=key, format_func=c.label, help=help_text, on_change=c.on_change,
                         args=c.args)


def _all(conditions: Sequence[When], view: Mapping[str, Any]) -> bool:
    return all(c.holds(view) for c in conditions)


def _draw_section(rows: Sequence[Field], runtime: Mapping[str, _Choices], hidden: set[str],
                  view: Mapping[str, Any]) -> None:
    """A section's shown rows in table order; neighbouring half-width rows share two columns."""
    shown = [f for f in rows if f.key not in hidden]
    i = 0
    while i < len(shown):
        if not shown[i].half:
            _draw(shown[i], runtime, view)
            i += 1
            continue
        j = i
        while j < len(shown) and shown[j].half:
            j += 1
        columns = st.columns(2)
        for n, f in enumerate(shown[i:j]):
            with columns[n % 2]:
                _draw(f, runtime, view)
        i = j


def render_sidebar(profiles: Mapping, model_names: Sequence[str], providers: Sequence[str],
                   examples: Mapping[str, str]):
    """Every scenario widget, one per row of planner/inputs/fields.py, grouped by its section."""
    ss = st.session_state
    known = list(profiles)
    sb = st.sidebar
    view = state.condition_view(ss)
    hidden = state.hidden_keys(ss)
    # Labels bound in this run's language (Streamlit may call format_func outside the run).
    group_label = choice_label("common.region_group")
    file_label = tr("app.sidebar.file_regions", names=", ".join(state.file_regions(ss)))
    runtime = {  # choices known only at run time, and the widgets with a callback
        "model_name": _Choices([*model_names, state.CUSTOM_MODEL],
                               choice_label(None, {state.CUSTOM_MODEL: "app.sidebar.model_custom"}), _on_model),
        "model_attention": _Choices(state.ATTENTION_CHOICES, choice_label("app.sidebar.attentions")),
        "stack": _Choices(state.STACK_CHOICES, choice_label("common.stack", {state.AUTO_STACK: "app.sidebar.stack_auto"})),
        "adapter_kind": _Choices(BY_KEY["adapter_kind"].choices or (), choice_label(BY_KEY["adapter_kind"].choice_labels),
                                 _on_adapter_kind),
        "gpus_all": _Choices((), str, _on_gpus_all, (known,)),
        "gpus": _Choices(sorted(profiles), lambda g: profiles[g].name if g in profiles else g),
        "provider": _Choices(["cheapest", *providers],
                             choice_label(None, {"cheapest": "app.sidebar.provider_cheapest"})),
        # A tuple is the file's own region names (ui.state.to_widgets), offered while they are the choice.
        "region_group": _Choices(BY_KEY["region_group"].choices or (),
                                 lambda v: file_label if state.keeps_file_regions(v) else group_label(v)),
    }
    with sb:
        st.radio(tr("app.sidebar.language"), LANGUAGES, key="ui_lang", horizontal=True,
                 format_func=choice_label("common.language"), on_change=_on_lang)
        st.selectbox(tr("app.sidebar.locale"), list(LOCALES[ss["ui_lang"]]), key="ui_locale",
                     format_func=lambda loc: f"{loc} · {fmt.number(1234.5, loc, 1)} · {fmt.money(9.5, 'USD', loc)}",
                     help=tr("app.sidebar.locale_help"))
        _draw_section(SIDEBAR["top"], runtime, hidden, view)
    for section, label in SECTION_LABELS.items():
        with sb.expander(tr(label), expanded=True):
            _draw_section(SIDEBAR[section], runtime, hidden, view)

    with sb:  # built only while open (ui.panels): closed, an uploader and a download cost every run nothing
        file_box = lazy_expander(tr("app.sidebar.section_file"), FILE_PANEL)
    if not file_box.open:
        return file_box
    with file_box:
        st.selectbox(tr("app.sidebar.example"), list(examples), index=None, key="example",
                     format_func=lambda p: examples[p], on_change=_on_example, args=(known,),
                     placeholder=tr("app.sidebar.example_placeholder"))
        # The app's upload limit is above the loader's own 1 MiB rule: a larger file then reaches the loader, whose
        # error names the file and the limit at the top of the page (the widget's own limit only shows a chip here).
        file_uploader(tr("app.sidebar.upload"), key="upload", types=("yaml", "yml"),
                      on_change=_on_upload, args=(known,), help=tr("app.sidebar.upload_help"))
    return file_box
