"""Scenario <-> widget values <-> session state: the sidebar's widgets hold the whole scenario (the link's codec is
ui/url_codec.py)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, overload

from planner.inputs.errors import InputError
from planner.inputs.published_models import load_published_models
from planner.inputs.scenario import (
    Adapter,
    Constraints,
    Hardware,
    OnPrem,
    Pricing,
    Scenario,
    SpotSettings,
    TrainingSetup,
    TransformerShape,
    Workload,
    defaults_of,
    parse_scenario,
    scenario_to_dict,
)
from planner.inputs.zoo_catalog import canonical_id, load_catalog, lookup
from planner.present.i18n import language_of
from planner.vocab import MODEL_ATTENTIONS

CUSTOM_MODEL = "__custom__"
# The region choice that keeps the scenario file's pricing.regions (exact region names) as they are.
FILE_REGIONS = "file_regions"
BASE_KEY = "_base"  # the last valid scenario as a dict: seeds widgets that are missing (page switch, hidden)
# The UI's locale, the user's own choice: it outlives page switches (where the sidebar's widgets are not drawn)
# and scenario loads. A scenario's `locale` is its report's language, never the UI's.
LOCALE_KEY = "_locale"
CLAMPED_KEY = "_clamped"  # (widget key, value in the file, value the widget shows) of the scenario just applied

# Defaults shown when a scenario leaves a section out (widgets need a value; None = "not given").
# The shape's sizes have no scenario default (a typed shape needs all of them): GPT-2 small seeds the widgets.
TRANSFORMER_DEFAULTS = {"layers": 12, "hidden": 768, "heads": 12, "seq_len": 1024, "vocab": 50257,
                        **defaults_of(TransformerShape)}
SPOT_KEYS = {"spot_rate": "preemptions_per_instance_hour", "spot_interval": "checkpoint_interval_min",
             "spot_restart": "restart_min"}
ON_PREM_KEYS = {"onprem_purchase": "purchase_usd_per_gpu", "onprem_years": "lifetime_years",
                "onprem_util": "fleet_utilisation", "onprem_kwh": "usd_per_kwh", "onprem_pue": "pue"}
TRANSFORMER_KEYS = {f"t_{k}": k for k in TRANSFORMER_DEFAULTS}
AUTO_ATTENTION = "auto"  # the model.attention widget's "not set": chosen per GPU, precision and family
ATTENTION_CHOICES = (AUTO_ATTENTION, *MODEL_ATTENTIONS)
MODEL_NUMBER_KEYS = {"model_params": "params", "model_flops": "flops_per_sample", "model_mfu": "mfu",
                     "model_input_cpu": "input_cpu_s_per_sample"}
# Model fields with no widget: they belong to the model they were given for, so a model change drops them.
MODEL_CARRIED = ("largest_layer_params", "activation_bytes_per_sample", "activation_precision")

# Widget bounds (min, max): they keep typed values sensible; a value from a file outside them is clamped,
# so a wild file cannot break a widget. Integer keys hold ints.
BOUNDS: dict[str, tuple[float, float]] = {
    "model_params": (1, 10**14), "model_flops": (1.0, 1e20), "model_mfu": (0.01, 1.0),
    "model_input_cpu": (0.0, 100.0),
    "t_layers": (1, 1000), "t_hidden": (1, 1_000_000), "t_heads": (1, 10_000), "t_seq_len": (1, 10_000_000),
    "t_vocab": (1, 100_000_000), "t_ffn": (1, 10_000_000),
    "global_batch": (1, 10**9), "lr_reference_batch": (1, 10**9), "micro_batch": (1, 10**9), "frozen_fraction": (0.0, 1.0),
    "adapter_rank": (1, 65536),
    "dataset_samples": (1, 10**13), "epochs": (0.01, 1e6), "tokens": (1.0, 1e16), "b_crit": (1.0, 1e12),
    "early_stop_fraction": (0.01, 1.0), "eval_overhead": (0.0, 10.0), "checkpoint_overhead": (0.0, 10.0),
    "mean_tokens_per_sample": (1.0, 1e7), "padded_tokens_per_sample": (1.0, 1e7),
    "gpus_per_node": (1, 64), "inter_node_gb_per_s": (0.1, 1e5), "cpu_workers_per_gpu": (0, 1024),
    "workspace_gib": (0.0, 1024.0),
    "exchange_rate": (1e-6, 1e9), "runs": (1, 100_000), "failure_overhead": (0.0, 10.0), "tax_rate": (0.0, 5.0),
    "spot_rate": (0.0, 100.0), "spot_interval": (0.1, 1e5), "spot_restart": (0.0, 1e4),
    "onprem_purchase": (0.0, 1e8), "onprem_years": (0.1, 50.0), "onprem_util": (0.01, 1.0),
    "onprem_kwh": (0.0, 100.0), "onprem_pue": (1.0, 5.0),
    "deadline_hours": (0.1, 1e7), "budget_usd": (0.01, 1e12),
}


# ---------------------------------------------------------------- scenario dict -> widget values

def to_widgets(d: Mapping[str, Any], clamped: list[tuple[str, Any, Any]] | None = None) -> dict[str, Any]:
    """Widget key -> value for a scenario dict (scenario_to_dict's shape); values outside BOUNDS are clamped and,
    given a `clamped` list, reported in it as (widget key, value given, value shown)."""
    m, t, w = d["model"], d["training"], d["workload"]
    sd, td, wd = defaults_of(Scenario), defaults_of(TrainingSetup), defaults_of(Workload)
    hd, pd, cd = defaults_of(Hardware), defaults_of(Pricing), defaults_of(Constraints)
    h, p, c = d.get("hardware", {}), d.get("pricing", {}), d.get("constraints", {})
    shape = {**TRANSFORMER_DEFAULTS, **(m.get("transformer") or {})}
    adapter = {**defaults_of(Adapter), **(t.get("adapter") or {})}
    spot = {**defaults_of(SpotSettings), **(p.get("spot") or {})}
    on_prem = {**defaults_of(OnPrem), **(p.get("on_prem") or {})}
    micro = t.get("micro_batch", "auto")
    kind = "tokens" if w.get("tokens") is not None else (
        "reference_points" if w.get("reference_points") else "epochs")
    out: dict[str, Any] = {
        "scenario_name": d.get("name", sd["name"]),
        "model_name": m.get("name") or CUSTOM_MODEL,
        "model_transformer": m.get("transformer") is not None,
        "model_attention": m.get("attention") or AUTO_ATTENTION,
        "precisions": list(t.get("precisions", td["precisions"])),
        "optimizer": t.get("optimizer", td["optimizer"]),
        "optimizer_impl": t.get("optimizer_impl", td["optimizer_impl"]),
        "global_batch": int(t["global_batch"]),
        "lr_reference_batch": int(t["lr_reference_batch"]) if t.get("lr_reference_batch") else None,
        "micro_auto": micro == "auto",
        "micro_batch": int(micro) if micro != "auto" else max(1, min(32, int(t["global_batch"]))),
        "checkpointing": bool(t.get("activation_checkpointing", td["activation_checkpointing"])),
        "sharding": t.get("sharding", td["sharding"]),
        "state_layout": t.get("state_layout", td["state_layout"]),
        "frozen_fraction": float(t.get("frozen_fraction", td["frozen_fraction"])),
        "adapter_kind": adapter["kind"] if t.get("adapter") else "none",
        "adapter_rank": int(adapter["rank"]),
        "adapter_targets": adapter["targets"],
        "adapter_base_dtype": adapter["base_dtype"],
        "work_kind": kind,
        "dataset_samples": w.get("dataset_samples"),
        "epochs": float(w["epochs"]) if w.get("epochs") is not None else 1.0,
        "tokens": float(w["tokens"]) if w.get("tokens") is not None else 1.0e9,
        "ref_points": format_ref_points(w.get("reference_points") or []),
        "b_crit": _float_or_none(w.get("b_crit")),
        "early_stop_fraction": float(w.get("early_stop_fraction", wd["early_stop_fraction"])),
        "eval_overhead": float(w.get("eval_overhead", wd["eval_overhead"])),
        "checkpoint_overhead": float(w.get("checkpoint_overhead", wd["checkpoint_overhead"])),
        "mean_tokens_per_sample": _float_or_none(w.get("mean_tokens_per_sample")),
        "packing": bool(w.get("packing", wd["packing"])),
        "padded_tokens_per_sample": _float_or_none(w.get("padded_tokens_per_sample")),
        "gpus_all": h.get("gpus", "all") == "all",
        "gpus": [] if h.get("gpus", "all") == "all" else list(h["gpus"]),
        "gpu_counts": list(h.get("gpu_counts", hd["gpu_counts"])),
        "gpus_per_node": int(h.get("gpus_per_node", hd["gpus_per_node"])),
        "inter_node_gb_per_s": float(h.get("inter_node_gb_per_s", hd["inter_node_gb_per_s"])),
        "cpu_workers_per_gpu": int(h.get("cpu_workers_per_gpu", hd["cpu_workers_per_gpu"])),
        "workspace_gib": _float_or_none(h.get("workspace_gib")),
        "tier": p.get("tier", pd["tier"]),
        "provider": p.get("provider", pd["provider"]),
        # A file naming exact regions shows them as one more choice; picking a group replaces them.
        "region_group": FILE_REGIONS if p.get("regions") else p.get("region_group", pd["region_group"]),
        "currency": p.get("currency", pd["currency"]),
        "exchange_rate": float(p.get("exchange_rate", pd["exchange_rate"])),
        "exchange_rate_as_of": _date_or_none(p.get("exchange_rate_as_of")),
        "runs": int(p.get("runs", pd["runs"])),
        "failure_overhead": float(p.get("failure_overhead", pd["failure_overhead"])),
        "tax_rate": float(p.get("tax_rate", pd["tax_rate"])),
        "deadline_hours": _float_or_none(c.get("deadline_hours")),
        "budget_usd": _float_or_none(c.get("budget_usd")),
        "deadline_confidence": c.get("deadline_confidence", cd["deadline_confidence"]),
    }
    for key, field in MODEL_NUMBER_KEYS.items():
        out[key] = _float_or_none(m.get(field)) if field != "params" else m.get(field)
    for key, field in TRANSFORMER_KEYS.items():
        out[key] = shape[field]
    for key, field in SPOT_KEYS.items():
        out[key] = float(spot[field])
    for key, field in ON_PREM_KEYS.items():
        out[key] = _float_or_none(on_prem[field])  # purchase None: each GPU's own purchase price
    values = {k: clamp(k, v) for k, v in out.items()}
    if clamped is not None:
        clamped.extend((k, out[k], v) for k, v in values.items() if k in BOUNDS and v is not None and v != out[k])
    return values


def clamp(key: str, value: Any) -> Any:
    if value is None or key not in BOUNDS:
        return value
    lo, hi = BOUNDS[key]
    value = min(max(value, lo), hi)
    return int(value) if isinstance(lo, int) else float(value)


# ---------------------------------------------------------------- widget values -> scenario dict

def from_widgets(base: Mapping[str, Any], w: Mapping[str, Any]) -> dict[str, Any]:
    """The base scenario dict with every widget's value applied; fields without a widget are kept.

    Raises InputError (naming the widget's scenario field) for text the widgets cannot bound, such as
    reference points.
    """
    d = copy.deepcopy(dict(base))
    d["name"] = (w["scenario_name"] or "").strip() or defaults_of(Scenario)["name"]
    d["locale"] = d.get("locale") or defaults_of(Scenario)["locale"]  # the report's language: no widget here

    m = dict(d.get("model") or {})
    m["name"] = None if w["model_name"] == CUSTOM_MODEL else w["model_name"]
    if m["name"] != (d.get("model") or {}).get("name"):
        m.pop("family", None)  # the loaded model's family is not another model's
    for key, field in MODEL_NUMBER_KEYS.items():
        m[field] = w[key]
    if m["params"] is not None:
        m["params"] = int(m["params"])
    # The widgets own the sizes; knobs without a widget (kv_heads, dropout, norm, loss...) stay as loaded.
    m["transformer"] = ({**(m.get("transformer") or {}), **{field: w[key] for key, field in TRANSFORMER_KEYS.items()}}
                        if w["model_transformer"] else None)
    kv = (m["transformer"] or {}).get("kv_heads")
    if kv and m["transformer"]["heads"] % kv:
        del m["transformer"]["kv_heads"]  # the edited head count no longer splits into the loaded key/value heads
    m["attention"] = None if w["model_attention"] == AUTO_ATTENTION else w["model_attention"]
    d["model"] = _drop_none(m)

    t = dict(d.get("training") or {})
    t.update(precisions=list(w["precisions"]), optimizer=w["optimizer"], optimizer_impl=w["optimizer_impl"],
             global_batch=int(w["global_batch"]),
             lr_reference_batch=int(w["lr_reference_batch"]) if w["lr_reference_batch"] else None,
             micro_batch="auto" if w["micro_auto"] else int(w["micro_batch"]),
             activation_checkpointing=bool(w["checkpointing"]), sharding=w["sharding"],
             state_layout=w["state_layout"], frozen_fraction=float(w["frozen_fraction"]))
    # The widgets own kind, rank, targets and base; knobs without a widget (dropout) stay as loaded.
    t["adapter"] = (None if w["adapter_kind"] == "none" else
                    {**(t.get("adapter") or {}), "kind": w["adapter_kind"], "rank": int(w["adapter_rank"]),
                     "targets": w["adapter_targets"], "base_dtype": w["adapter_base_dtype"]})
    d["training"] = _drop_none(t)

    wl = dict(d.get("workload") or {})
    # Tokens per example only for a model with a sequence (the widget is hidden for the others).
    mean_tokens = (w["mean_tokens_per_sample"] if has_attention(w["model_name"], bool(w["model_transformer"]))
                   else None)
    wl.update(dataset_samples=int(w["dataset_samples"]) if w["dataset_samples"] is not None else None,
              epochs=None, tokens=None, reference_points=None, b_crit=w["b_crit"],
              early_stop_fraction=float(w["early_stop_fraction"]), eval_overhead=float(w["eval_overhead"]),
              checkpoint_overhead=float(w["checkpoint_overhead"]),
              mean_tokens_per_sample=mean_tokens,
              # packing and a padded length mean something only with a mean length (the scenario refuses them alone)
              packing=bool(w["packing"]) if mean_tokens is not None else None,
              padded_tokens_per_sample=(w["padded_tokens_per_sample"] if mean_tokens is not None
                                        and not w["packing"] else None))
    if w["work_kind"] == "epochs":
        wl["epochs"] = float(w["epochs"])
    elif w["work_kind"] == "tokens":
        wl["tokens"] = float(w["tokens"])
    else:
        wl["reference_points"] = parse_ref_points(w["ref_points"])
        if not wl["reference_points"]:
            raise InputError("sidebar", "workload.reference_points", [],
                             "reference runs, one a line: '1024: 36 epochs' or '16384: 4000 steps'")
    d["workload"] = _drop_none(wl)

    h = dict(d.get("hardware") or {})
    h.update(gpus="all" if w["gpus_all"] else list(w["gpus"]), gpu_counts=sorted(int(n) for n in w["gpu_counts"]),
             gpus_per_node=int(w["gpus_per_node"]), inter_node_gb_per_s=float(w["inter_node_gb_per_s"]),
             cpu_workers_per_gpu=int(w["cpu_workers_per_gpu"]), workspace_gib=w["workspace_gib"])
    d["hardware"] = _drop_none(h)

    p = dict(d.get("pricing") or {})
    as_of = w["exchange_rate_as_of"]
    if not keeps_file_regions(w["region_group"]):
        p.pop("regions", None)  # a group chosen in the app replaces the file's explicit region names
    region_group = "any" if keeps_file_regions(w["region_group"]) else w["region_group"]
    usd = w["currency"] == "USD"  # the rate and its date are hidden then (hidden_keys): USD per USD is 1
    p.update(tier=w["tier"], provider=w["provider"], region_group=region_group, currency=w["currency"],
             exchange_rate=1.0 if usd else float(w["exchange_rate"]),
             exchange_rate_as_of=as_of.isoformat() if isinstance(as_of, dt.date) and not usd else None,
             runs=int(w["runs"]), failure_overhead=float(w["failure_overhead"]), tax_rate=float(w["tax_rate"]),
             spot={field: float(w[key]) for key, field in SPOT_KEYS.items()},
             # Kept: a file's fields without a widget (power_fraction_of_tdp); an empty purchase box = no override.
             on_prem=_drop_none({**(p.get("on_prem") or {}),
                                 **{field: _float_or_none(w[key]) for key, field in ON_PREM_KEYS.items()}}))
    d["pricing"] = _drop_none(p)

    c = _drop_none({"deadline_hours": w["deadline_hours"], "budget_usd": w["budget_usd"],
                    "deadline_confidence": None if w["deadline_confidence"] == defaults_of(Constraints)["deadline_confidence"]
                    else w["deadline_confidence"]})
    d.pop("constraints", None)
    if c:
        d["constraints"] = c
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


def keeps_file_regions(region_group: str | None) -> bool:
    """Whether the scenario file's exact region names are the region choice: picking a group in the app drops them
    from the scenario (from_widgets) and from the choices offered (file_regions)."""
    return region_group == FILE_REGIONS


def file_regions(session: Session) -> tuple[str, ...]:
    """The file's exact region names to offer as a choice. While they are the choice they are read from the scenario
    the file or link set (BASE_KEY: only apply_scenario, in a callback before the run, changes them there), so the
    sidebar may be drawn before the plan; once a group is picked they are no longer offered, even while a failing
    plan still shows the last valid scenario."""
    if not keeps_file_regions(session.get("region_group")):
        return ()
    return tuple(((session.get(BASE_KEY) or {}).get("pricing") or {}).get("regions") or ())


def seed_missing(session: Session, values: Mapping[str, Any]) -> None:
    """Give every widget without a value its value from the scenario (first run, page switch, hidden widget)."""
    for key, value in values.items():
        if key not in session:
            session[key] = value


MEMORY_KEY = "_widget_memory"  # last values of widgets that are now hidden (spot settings while on demand...)


def hidden_keys(session: Session) -> set[str]:
    """Widgets the sidebar does not draw in this run, given the choices that show or hide them."""
    hidden: set[str] = set()
    if session.get("tier") != "spot":
        hidden |= set(SPOT_KEYS)
    if session.get("tier") != "on_prem":
        hidden |= set(ON_PREM_KEYS)
    else:
        hidden.add("region_group")
    if not session.get("model_transformer"):
        hidden |= set(TRANSFORMER_KEYS)
    if not has_attention(session.get("model_name"), bool(session.get("model_transformer"))):
        hidden |= {"model_attention", "mean_tokens_per_sample", "packing", "padded_tokens_per_sample"}
    elif session.get("mean_tokens_per_sample") is None:
        hidden |= {"packing", "padded_tokens_per_sample"}
    elif session.get("packing"):
        hidden.add("padded_tokens_per_sample")
    if session.get("adapter_kind", "none") == "none":
        hidden |= {"adapter_rank", "adapter_targets", "adapter_base_dtype"}
    if session.get("gpus_all"):
        hidden.add("gpus")
    if session.get("currency", "USD") == "USD":
        hidden |= {"exchange_rate", "exchange_rate_as_of"}
    shown = {"epochs": "epochs", "tokens": "tokens", "reference_points": "ref_points"}.get(
        session.get("work_kind", "epochs"))
    hidden |= {"epochs", "tokens", "ref_points"} - {shown}
    return hidden


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


def apply_scenario(session: Session, s: Scenario) -> None:
    """Make `s` the current scenario: base and every widget (uploads, examples, links). The UI's language stays
    the user's: the scenario's locale is only its report's default language."""
    d = scenario_to_dict(s)
    session[BASE_KEY] = d
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
    return parse_scenario(d, "sidebar", known_gpu_ids)


def _float_or_none(x: Any) -> float | None:
    return None if x is None else float(x)


def _date_or_none(x: Any) -> dt.date | None:
    if x is None or isinstance(x, dt.date):
        return x
    return dt.date.fromisoformat(str(x)[:10])


def _drop_none(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


WIDGET_KEYS = tuple(to_widgets({"model": {}, "training": {"global_batch": 1}, "workload": {}}))
