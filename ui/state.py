"""Scenario <-> widget values <-> session state: the sidebar's widgets hold the whole scenario, one widget per row of
planner/inputs/fields.py (the link's codec is ui/url_codec.py)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, overload

from planner.inputs import fields
from planner.inputs.errors import InputError
from planner.inputs.fields import BY_KEY, FIELDS, HAS_ATTENTION, NO_ADAPTER, Field
from planner.inputs.published_models import load_published_models
from planner.inputs.scenario import (
    REQUIRED,
    Constraints,
    Scenario,
    defaults_of,
    field_default,
    parse_scenario,
    scenario_to_dict,
)
from planner.inputs.zoo_catalog import canonical_id, load_catalog, lookup
from planner.present.i18n import language_of
from planner.vocab import (
    ADAPTER_DEFAULT_BASE,
    MODEL_ATTENTIONS,
    QUANTIZED_BASE_DTYPES,
    SOFTWARE_STACKS,
    adapter_base_for,
)

CUSTOM_MODEL = "__custom__"
BASE_KEY = "_base"  # the last valid scenario as a dict: seeds widgets that are missing (page switch, hidden)
# The UI's locale, the user's own choice: it outlives page switches (where the sidebar's widgets are not drawn)
# and scenario loads. A scenario's `locale` is its report's language, never the UI's.
LOCALE_KEY = "_locale"
CLAMPED_KEY = "_clamped"  # (widget key, value in the file, value the widget shows) of the scenario just applied
# The last scenario that planned in this session, as a dict: what the Plan page shows under a bad scenario's message
# (BASE_KEY holds the scenario just loaded, which may be the bad one: the widgets show it, so it can be fixed).
PLANNED_KEY = "_planned"
# Where the scenario just loaded came from (a file name, the link), named in its messages until it plans; then
# the sidebar owns it again.
ORIGIN_KEY = "_origin"
SIDEBAR_SOURCE = "sidebar"

# Widget values where the scenario has none and its dataclass no default (a widget needs a value): a typed shape
# needs all its sizes, so GPT-2 small seeds them; epochs and tokens seed the "train for" choice not taken.
SEEDS: dict[str, Any] = {"t_layers": 12, "t_hidden": 768, "t_heads": 12, "t_seq_len": 1024, "t_vocab": 50257,
                         "epochs": 1.0, "tokens": 1.0e9}
AUTO_ATTENTION = "auto"  # the model.attention widget's "not set": chosen per GPU, precision and family
ATTENTION_CHOICES = (AUTO_ATTENTION, *MODEL_ATTENTIONS)
AUTO_STACK = "auto"  # the training.stack widget's "not set": the model family's default (planner.vocab.DEFAULT_STACKS)
STACK_CHOICES = (AUTO_STACK, *SOFTWARE_STACKS)
# The model's own numbers: cleared when the user picks another model.
MODEL_NUMBER_KEYS = tuple(f.key for f in FIELDS if f.key and f.widget == "number" and f.path.count(".") == 1
                          and f.path.startswith("model."))
# Model fields with no widget: they belong to the model they were given for, so a model change drops them.
MODEL_CARRIED = ("largest_layer_params", "activation_bytes_per_sample", "activation_precision")

# Number widgets' (min, max): the table's bounds, which the reader applies too. A mapping that did not come through
# the reader may hold a value outside them: to_widgets clamps it and names it (CLAMPED_KEY).
BOUNDS = fields.BOUNDS

# Widgets converted by name below (a sentinel, a section that is there or not, a value that has two forms); every
# other widget row is its scenario value, converted by its row's type.
_BY_NAME = frozenset({"model_name", "model_attention", "micro_batch", "region_group", "stack"})
_PLAIN: tuple[Field, ...] = tuple(f for f in FIELDS if f.key and not f.switch and f.key not in _BY_NAME)
_CONDITION_KEYS = frozenset(c.key for f in FIELDS for c in (*f.shown, *f.enabled)) - {HAS_ATTENTION}
_CONDITIONAL: tuple[Field, ...] = tuple(f for f in FIELDS if f.key and f.shown)  # the rows that may be hidden


# Each plain row's path, split once (to_widgets and from_widgets walk them on every sidebar change).
_PATHS: dict[str, tuple[str, ...]] = {f.path: tuple(f.path.split(".")) for f in _PLAIN}


def _at(d: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of a scenario mapping; None where a section or the field is absent."""
    node: Any = d
    for part in _PATHS.get(path) or path.split("."):
        if not isinstance(node, dict | Mapping):  # a dict first: the ABC check is the slow one
            return None
        node = node.get(part)
    return node


def _put(d: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path of a scenario mapping, making the sections on the way."""
    *parents, name = _PATHS.get(path) or path.split(".")
    node = d
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[name] = value


def _widget_value(f: Field, value: Any) -> Any:
    """A scenario value as its widget holds it."""
    if value is None:
        return None
    if f.many:
        return list(value)
    if f.type is dt.date:
        return _date_or_none(value)
    return f.type(value) if f.type in (int, float, bool) else value


def _scenario_value(f: Field, value: Any) -> Any:
    """A widget's value as the scenario file writes it."""
    if value is None:
        return None
    if f.many:
        return sorted(int(x) for x in value) if f.type is int else list(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return f.type(value) if f.type in (int, float, bool) else value


# ---------------------------------------------------------------- scenario dict -> widget values

def to_widgets(d: Mapping[str, Any], clamped: list[tuple[str, Any, Any]] | None = None) -> dict[str, Any]:
    """Widget key -> value for a scenario dict (scenario_to_dict's shape); values outside BOUNDS are clamped and,
    given a `clamped` list, reported in it as (widget key, value given, value shown)."""
    m, t, w, p = d["model"], d["training"], d["workload"], d.get("pricing", {})
    out: dict[str, Any] = {}
    for f in _PLAIN:
        value = _at(d, f.path)
        if value is None:
            default = field_default(f.path)
            value = SEEDS.get(f.key or "") if default is REQUIRED or default is None else default
        out[f.key or ""] = _widget_value(f, value)
    micro = t.get("micro_batch", "auto")
    out.update({
        "model_name": m.get("name") or CUSTOM_MODEL,
        "model_transformer": m.get("transformer") is not None,
        "model_attention": m.get("attention") or AUTO_ATTENTION,
        "stack": t.get("stack") or AUTO_STACK,
        "micro_auto": micro == "auto",
        "micro_batch": int(micro) if micro != "auto" else max(1, min(32, int(t["global_batch"]))),
        "adapter_kind": (t["adapter"].get("kind") or field_default("training.adapter.kind")) if t.get("adapter")
        else NO_ADAPTER,
        "work_kind": "tokens" if w.get("tokens") is not None else (
            "reference_points" if w.get("reference_points") else "epochs"),
        "ref_points": format_ref_points(w.get("reference_points") or []),
        "gpus_all": (d.get("hardware") or {}).get("gpus", "all") == "all",
        "gpus": [] if (d.get("hardware") or {}).get("gpus", "all") == "all" else list(d["hardware"]["gpus"]),
        # A file naming exact regions offers them, as they are, as one more choice; picking a group replaces them.
        "region_group": tuple(p["regions"]) if p.get("regions") else p.get(
            "region_group", field_default("pricing.region_group")),
    })
    values = {k: clamp(k, v) for k, v in out.items()}
    if clamped is not None:
        clamped.extend((k, out[k], v) for k, v in values.items() if k in BOUNDS and v is not None and v != out[k])
    return values


def clamp(key: str, value: Any) -> Any:
    if value is None or key not in BOUNDS:
        return value
    lo, hi = BOUNDS[key]
    value = min(max(value, lo), hi)
    return int(value) if BY_KEY[key].type is int else float(value)


# ---------------------------------------------------------------- widget values -> scenario dict

def from_widgets(base: Mapping[str, Any], w: Mapping[str, Any]) -> dict[str, Any]:
    """The base scenario dict with every widget's value applied; fields without a widget are kept.

    Raises InputError (naming the widget's scenario field) for text the widgets cannot bound, such as
    reference points.
    """
    d = copy.deepcopy(dict(base))
    hidden = hidden_keys(w)
    for f in _PLAIN:
        _put(d, f.path, None if f.drop_hidden and f.key in hidden else _scenario_value(f, w[f.key or ""]))
    d["name"] = (d["name"] or "").strip() or field_default("name")
    d["locale"] = d.get("locale") or field_default("locale")  # the report's language: no widget here

    m = d["model"]
    m["name"] = None if w["model_name"] == CUSTOM_MODEL else w["model_name"]
    if m["name"] != (base.get("model") or {}).get("name"):
        m.pop("family", None)  # the loaded model's family is not another model's
    # The widgets own the sizes; knobs without a widget (kv_heads, dropout, norm, loss...) stay as loaded.
    if not w["model_transformer"]:
        m["transformer"] = None
    elif (kv := m["transformer"].get("kv_heads")) and m["transformer"]["heads"] % kv:
        del m["transformer"]["kv_heads"]  # the edited head count no longer splits into the loaded key/value heads
    m["attention"] = None if w["model_attention"] == AUTO_ATTENTION else w["model_attention"]

    t = d["training"]
    t["micro_batch"] = "auto" if w["micro_auto"] else int(w["micro_batch"])
    t["stack"] = None if w["stack"] == AUTO_STACK else w["stack"]
    # The widgets own kind, rank, targets and base; knobs without a widget (dropout) stay as loaded.
    t["adapter"] = None if w["adapter_kind"] == NO_ADAPTER else {**t["adapter"], "kind": w["adapter_kind"]}

    wl = d["workload"]
    kind = w["work_kind"]
    for other in ("epochs", "tokens", "reference_points"):
        if other != kind:
            wl[other] = None
    if kind == "reference_points":
        wl["reference_points"] = parse_ref_points(w["ref_points"])
        if not wl["reference_points"]:
            raise InputError("sidebar", "workload.reference_points", [],
                             "reference runs, one a line: '1024: 36 epochs' or '16384: 4000 steps'")

    d["hardware"]["gpus"] = "all" if w["gpus_all"] else list(w["gpus"])

    pr = d["pricing"]
    if keeps_file_regions(w["region_group"]):
        pr.update(regions=list(w["region_group"]), region_group=field_default("pricing.region_group"))
    else:
        pr.pop("regions", None)  # a group chosen in the app replaces the file's explicit region names
        pr["region_group"] = w["region_group"]

    c = d["constraints"]
    if c.get("deadline_confidence") == defaults_of(Constraints)["deadline_confidence"]:
        del c["deadline_confidence"]  # the default: a scenario without constraints stays without them
    for section in ("model", "training", "workload", "hardware", "pricing", "constraints"):
        d[section] = _drop_none(d[section])
    if not d["constraints"]:
        del d["constraints"]
    return d


def has_attention(model_name: str | None, typed_transformer: bool) -> bool:
    """Whether the attention kernel matters for this model: a typed transformer shape, or a zoo or published-corpus
    model with one (a CNN or a custom model without a shape has no attention for the memory model to count)."""
    if typed_transformer:
        return True
    if not model_name or model_name == CUSTOM_MODEL:
        return False
    return _has_shape(canonical_id(model_name)[0])


@functools.cache
def _has_shape(name: str) -> bool:
    """Whether the zoo or the published corpus gives `name` a transformer shape (both ship with the app, so one
    read per model per process: the sidebar asks on every rerun)."""
    entry = lookup(load_catalog(), name) or load_published_models().get(name) or {}
    return bool(entry.get("transformer"))


def model_reset_values() -> dict[str, Any]:
    """Widget values that belong to one model: cleared when the user picks another model."""
    out: dict[str, Any] = dict.fromkeys(MODEL_NUMBER_KEYS)
    out["model_transformer"] = False
    out["model_attention"] = AUTO_ATTENTION
    return out


# ---------------------------------------------------------------- reference points as text

_POINT_RE = re.compile(r"^\s*(\d+)\s*[:=]?\s*([0-9][0-9.eE+_]*)\s*([^\d\s]+)\s*$")
_STEP_WORDS = {"steps", "step", "pasos", "paso", "s"}
_EPOCH_WORDS = {"epochs", "epoch", "ep", "e", "épocas", "época", "epocas", "epoca"}


def base_on_adapter_switch(kind: str, base_dtype: str | None) -> str:
    """The base after the adapter switch moves to `kind`: QLoRA takes a quantised base (its default, nf4, when the
    base was 16-bit); LoRA goes back to 16-bit from a quantised base; otherwise the base stays."""
    if kind == "lora" and base_dtype in QUANTIZED_BASE_DTYPES:
        return ADAPTER_DEFAULT_BASE["lora"]
    return adapter_base_for(kind, base_dtype)


def format_ref_points(points: Iterable[Mapping[str, Any]]) -> str:
    lines = []
    for p in points:
        if p.get("steps") is not None:
            lines.append(f"{int(p['global_batch'])}: {int(p['steps'])} steps")
        else:
            lines.append(f"{int(p['global_batch'])}: {float(p['epochs']):g} epochs")
    return "\n".join(lines)


def parse_ref_points(text: str) -> list[dict[str, Any]]:
    """'1024: 36 epochs' / '16384: 4000 steps', one point a line (Spanish 'épocas'/'pasos' too)."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate((text or "").splitlines()):
        if not line.strip():
            continue
        match = _POINT_RE.match(line)
        word = match.group(3).lower() if match else ""
        if not match or word not in _STEP_WORDS | _EPOCH_WORDS:
            raise InputError("sidebar", f"workload.reference_points[{len(out)}]", line.strip(),
                             f"'<global batch>: <number> steps' or '<global batch>: <number> epochs' (line {i + 1})")
        try:
            amount = float(match.group(2))
        except ValueError:
            raise InputError("sidebar", f"workload.reference_points[{len(out)}]", line.strip(),
                             "a number of steps or epochs") from None
        point: dict[str, Any] = {"global_batch": int(match.group(1))}
        if word in _STEP_WORDS:
            point["steps"] = int(amount)
        else:
            point["epochs"] = amount
        out.append(point)
    return out


# ---------------------------------------------------------------- session state

class Session(Protocol):
    """The mapping operations used on the session: a dict[str, Any] (tests) and st.session_state both have them.

    Not MutableMapping[str, Any]: Streamlit's SessionStateProxy is a MutableMapping[str | int, Any], and a mapping's
    key type is invariant, so neither it nor a dict[str, Any] would be the other's kind of mapping.
    """

    def __getitem__(self, key: str, /) -> Any: ...
    def __setitem__(self, key: str, value: Any, /) -> None: ...
    def __contains__(self, key: object, /) -> bool: ...
    @overload
    def get(self, key: str, /) -> Any: ...
    @overload
    def get(self, key: str, default: Any, /) -> Any: ...
    def setdefault(self, key: str, default: Any, /) -> Any: ...
    def update(self, items: Iterable[tuple[str, Any]], /) -> None: ...


def keeps_file_regions(region_choice: object) -> bool:
    """Whether the region choice is the scenario file's exact region names (a tuple of them) rather than a group:
    picking a group in the app drops them from the scenario (from_widgets) and from the choices offered."""
    return isinstance(region_choice, tuple)


def file_regions(session: Session) -> tuple[str, ...]:
    """The file's exact region names while they are the region choice (the widget holds them), else ()."""
    choice = session.get("region_group")
    return choice if keeps_file_regions(choice) else ()


def seed_missing(session: Session, values: Mapping[str, Any]) -> None:
    """Give every widget without a value its value from the scenario (first run, page switch, hidden widget)."""
    for key, value in values.items():
        if key not in session:
            session[key] = value


MEMORY_KEY = "_widget_memory"  # last values of widgets that are now hidden (spot settings while on demand...)


def condition_view(session: Session | Mapping[str, Any]) -> dict[str, Any]:
    """The values the table's "shown when" and "enabled when" conditions read: widget values, and whether the model
    has attention (derived, HAS_ATTENTION)."""
    view = {k: session.get(k) for k in _CONDITION_KEYS}
    view[HAS_ATTENTION] = has_attention(session.get("model_name"), bool(session.get("model_transformer")))
    return view


def hidden_keys(session: Session | Mapping[str, Any]) -> set[str]:
    """Widgets the sidebar does not draw in this run: their row's "shown when" does not hold."""
    view = condition_view(session)
    return {f.key for f in _CONDITIONAL if f.key and not fields.shown(f, view)}


def prepare_widgets(session: Session) -> None:
    """Before the widgets are drawn: fill missing values from the scenario, and give hidden widgets their last
    value (Streamlit forgets or reverts the value of a widget it did not draw in the previous run)."""
    seed_ui_locale(session)
    values = to_widgets(session[BASE_KEY])
    memory = session.setdefault(MEMORY_KEY, {})
    for key in hidden_keys(session):
        session[key] = memory.get(key, values[key])
    seed_missing(session, values)


def remember_widgets(session: Session) -> None:
    """After a run: keep the values of the widgets drawn, for when they are hidden later."""
    hidden = hidden_keys(session)
    session.setdefault(MEMORY_KEY, {}).update({k: session[k] for k in WIDGET_KEYS if k not in hidden and k in session})


def seed_ui_locale(session: Session) -> None:
    """The language widgets take the user's last choice (kept in LOCALE_KEY), else English."""
    if "ui_locale" not in session:
        session["ui_locale"] = session.get(LOCALE_KEY) or "en"
    if "ui_lang" not in session:
        session["ui_lang"] = language_of(session["ui_locale"])


def apply_scenario(session: Session, s: Scenario, *, origin: str = SIDEBAR_SOURCE) -> None:
    """Make `s` the current scenario: base and every widget (uploads, examples, links); `origin` is named in its
    messages until it plans. The UI's language stays the user's: the scenario's locale is only its report's
    default language."""
    d = scenario_to_dict(s)
    session[BASE_KEY] = d
    session[ORIGIN_KEY] = origin
    clamped: list[tuple[str, Any, Any]] = []
    session.update(to_widgets(d, clamped).items())
    session[CLAMPED_KEY] = clamped  # the Plan page reports them once
    session[MEMORY_KEY] = {}


def scenario_from_session(session: Session, known_gpu_ids: Iterable[str]) -> Scenario:
    """Validate the widgets' scenario exactly as a scenario file would be; InputError names the field."""
    values = {k: session[k] for k in WIDGET_KEYS}
    d = from_widgets(session[BASE_KEY], values)
    if not d["training"].get("precisions"):
        raise InputError("sidebar", "training.precisions", [], "at least one precision")
    if d["hardware"].get("gpus") == []:
        raise InputError("sidebar", "hardware.gpus", [], "at least one GPU, or 'all GPUs'")
    if not d["hardware"].get("gpu_counts"):
        raise InputError("sidebar", "hardware.gpu_counts", [], "at least one GPU count")
    return parse_scenario(d, origin(session), known_gpu_ids)


def origin(session: Session) -> str:
    """Where the current scenario's values came from, for its messages: the file or link just loaded, else the
    sidebar."""
    return str(session.get(ORIGIN_KEY) or SIDEBAR_SOURCE)


def planned(session: Session, s: Scenario) -> None:
    """`s` planned: it is the base, the last valid scenario, and the sidebar's from now on."""
    d = scenario_to_dict(s)
    session[BASE_KEY] = d
    session[PLANNED_KEY] = d
    session[ORIGIN_KEY] = None


def _date_or_none(x: Any) -> dt.date | None:
    if x is None or isinstance(x, dt.date):
        return x
    return dt.date.fromisoformat(str(x)[:10])


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping without its unset (None) fields, its sub-sections' too."""
    return {k: _drop_none(v) if isinstance(v, Mapping) else v for k, v in d.items() if v is not None}


WIDGET_KEYS = tuple(to_widgets({"model": {}, "training": {"global_batch": 1}, "workload": {}}))
