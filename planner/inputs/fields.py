"""The scenario's user-settable fields, one row each: the one owner of their type, unit, bounds and sidebar widget.

The scenario reader (planner/inputs/scenario.py) validates every row's type and range from here; the app's sidebar,
its widget <-> scenario conversion (ui/state.py), the clamping messages and the why panels read their bounds,
catalog keys, widget, section and "shown when" from here too. Defaults are not rows: they are read from the
scenario dataclasses (planner.inputs.scenario.field_default).

Bounds are inclusive. Where the scenario format once had an exclusive bound (> 0) that means nothing to a user,
the row starts at the smallest sensible value instead, and says why in `bound_note`; the widget and the reader then
agree to the last digit (tests/test_fields.py renders the sidebar and probes the reader at each bound).

Adding a knob (a number in an existing section), e.g. `workload.warmup_fraction`:
  1. the dataclass field with its default, in planner/inputs/scenario.py (`warmup_fraction: float = 0.0`);
  2. one row here: `Field("workload.warmup_fraction", float, "fraction", 0.0, 1.0, key="warmup_fraction",
     widget="number", section="workload", step=0.01, format="%.2f", help="app.sidebar.warmup_fraction_help")`;
  3. the label (and help) under `app.sidebar` in planner/present/locales/en/app.yaml and es/app.yaml.
The reader reads every row of a section (scenario._fields_of), the sidebar draws it in its section, the link
carries it and a value outside its bounds is refused with one message naming the field: no other change.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from planner.vocab import (
    ADAPTER_KINDS,
    ADAPTER_TARGETS,
    BASE_DTYPES,
    DATA_LOCATIONS,
    DEADLINE_CONFIDENCES,
    LOCALES,
    LOSS_KINDS,
    MLP_KINDS,
    MODEL_ATTENTIONS,
    MODEL_FAMILIES,
    NORM_KINDS,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    PRECISIONS,
    QKV_LAYOUTS,
    REGION_GROUPS,
    SHARDINGS,
    SOFTWARE_STACKS,
    STATE_LAYOUTS,
    TIERS,
)

Widget = Literal["number", "checkbox", "select", "radio", "multiselect", "date", "text", "text_area"]
Section = Literal["top", "model", "workload", "training", "gpus", "pricing", "constraints"]
SECTIONS: tuple[Section, ...] = ("top", "model", "workload", "training", "gpus", "pricing", "constraints")
# The catalog label of each section's expander ("top" is drawn above them, unlabelled).
SECTION_LABELS: Mapping[Section, str] = {
    "model": "app.sidebar.section_model", "workload": "app.sidebar.section_workload",
    "training": "app.sidebar.section_training", "gpus": "app.sidebar.section_gpus",
    "pricing": "app.sidebar.section_pricing", "constraints": "app.sidebar.section_constraints"}

# A condition the app derives rather than reads from one widget: whether the model has attention (a typed
# transformer shape, or a catalog model with one; ui.state.has_attention supplies it).
HAS_ATTENTION = "has_attention"

COUNT_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
CURRENCIES = ("USD", "EUR", "MXN", "ARS", "COP", "CLP", "PEN", "BRL", "UYU", "GBP", "CAD", "JPY", "INR")
WORK_KINDS = ("epochs", "tokens", "reference_points")
NO_ADAPTER = "none"  # the adapter switch's "no adapter section"


@dataclass(frozen=True)
class When:
    """Holds while the widget (or derived value) `key` has one of `values`; with `negate`, while it has none."""

    key: str
    values: tuple[object, ...]
    negate: bool = False

    def holds(self, values: Mapping[str, object]) -> bool:
        return (values.get(self.key) in self.values) != self.negate


@dataclass(frozen=True)
class Field:
    """One user-settable scenario field: what the reader accepts and how the sidebar offers it.

    `switch` rows are widgets that pick the form of the value at `path` (an adapter or none, "auto" or a number,
    epochs or tokens...): the reader does not read them, ui.state converts them by name.
    """

    path: str                                   # dotted scenario path: "workload.early_stop_fraction"
    type: type                                  # int | float | bool | str | dt.date
    unit: str = ""                              # "", "samples", "fraction", "h", "USD", "GB/s", ...
    minimum: int | float | None = None          # inclusive, in `unit`
    maximum: int | float | None = None          # inclusive, in `unit`
    choices: tuple[str, ...] | None = None      # the only values the reader accepts
    many: bool = False                          # a list of `type` (precisions, gpu_counts)
    key: str | None = None                      # the widget's session key; None: scenario files only
    widget: Widget | None = None
    section: Section | None = None
    label: str | None = None                    # catalog key; default app.sidebar.<key>
    help: str | None = None                     # catalog key
    choice_labels: str | None = None            # catalog prefix of the choices' labels: "<prefix>.<value>"
    offered: tuple[object, ...] = ()            # the widget's choices where the reader takes any value
    optional: bool = False                      # the widget may be empty (None: "auto", "not given")
    placeholder: str | None = None              # catalog key shown in an empty optional widget
    shown: tuple[When, ...] = ()                # drawn only while all hold; hidden it keeps its last value
    enabled: tuple[When, ...] = ()              # editable only while all hold
    drop_hidden: bool = False                   # hidden, it leaves the scenario (it means nothing alone)
    switch: bool = False
    step: float | None = None
    format: str | None = None                   # the number widget's printf format
    half: bool = False                          # drawn in two columns with its half-width neighbours
    max_chars: int | None = None
    bound_note: str = ""                        # why a bound is where it is (an exclusive bound made inclusive)

    @functools.cached_property  # the reader asks for it for every field of every scenario it reads
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def label_key(self) -> str | None:
        return self.label or (f"app.sidebar.{self.key}" if self.key else None)

    @property
    def is_number(self) -> bool:
        return self.type in (int, float) and not self.many


_TRANSFORMER = (When("model_transformer", (True,)),)
_ADAPTER = (When("adapter_kind", (NO_ADAPTER,), negate=True),)
_SPOT = (When("tier", ("spot",)),)
_ON_PREM = (When("tier", ("on_prem",)),)
_ATTENTION = (When(HAS_ATTENTION, (True,)),)
_MEAN_TOKENS = (*_ATTENTION, When("mean_tokens_per_sample", (None,), negate=True))
_LOCAL_CURRENCY = (When("currency", ("USD",), negate=True),)


def _t(name: str, maximum: int, **kw: object) -> Field:
    """A transformer size: an integer from 1, drawn in the shape's two columns."""
    return Field(f"model.transformer.{name}", int, "", 1, maximum, key=f"t_{name}", widget="number",
                 section="model", shown=_TRANSFORMER, half=True, **kw)  # type: ignore[arg-type]


FIELDS: tuple[Field, ...] = (
    # ---------------------------------------------------------------- top
    Field("name", str, key="scenario_name", widget="text", section="top", max_chars=120),
    Field("locale", str, choices=LOCALES),  # the report's language; the UI's language is the user's own choice
    # ---------------------------------------------------------------- model
    Field("model.name", str, key="model_name", widget="select", section="model", label="app.sidebar.model",
          help="app.sidebar.model_help"),
    Field("model.params", int, "parameters", 1, 10**14, key="model_params", widget="number", section="model",
          label="app.sidebar.params", help="app.sidebar.params_help", optional=True, format="%d"),
    Field("model.largest_layer_params", int, "parameters", 1, 10**14),
    Field("model.flops_per_sample", float, "FLOP", 1.0, 1e20, key="model_flops", widget="number",
          section="model", label="app.sidebar.flops", help="app.sidebar.flops_help", optional=True, format="%.3e",
          bound_note="was > 0: one FLOP per sample is the smallest count a model has"),
    Field("model.activation_bytes_per_sample", float, "bytes", 0.0, 1e15),
    Field("model.activation_precision", str, choices=PRECISIONS),
    Field("model.transformer", bool, key="model_transformer", widget="checkbox", section="model",
          label="app.sidebar.transformer", help="app.sidebar.transformer_help", switch=True),
    _t("layers", 1000),
    _t("hidden", 1_000_000),
    _t("heads", 10_000),
    _t("seq_len", 10_000_000),
    _t("vocab", 100_000_000),
    _t("ffn", 10_000_000, optional=True),
    Field("model.transformer.mlp", str, choices=MLP_KINDS, key="t_mlp", widget="radio", section="model",
          shown=_TRANSFORMER),
    Field("model.transformer.kv_heads", int, "", 1, 10_000),
    Field("model.transformer.tie_embeddings", bool),
    Field("model.transformer.dropout", float, "probability", 0.0, 0.99),
    Field("model.transformer.norm", str, choices=NORM_KINDS),
    Field("model.transformer.loss", str, choices=LOSS_KINDS),
    Field("model.transformer.qkv", str, choices=QKV_LAYOUTS),
    Field("model.attention", str, choices=MODEL_ATTENTIONS, key="model_attention", widget="radio",
          section="model", label="app.sidebar.attention", help="app.sidebar.attention_help",
          choice_labels="app.sidebar.attentions", shown=_ATTENTION),
    Field("model.mfu", float, "fraction", 0.01, 1.0, key="model_mfu", widget="number", section="model",
          label="app.sidebar.mfu", help="app.sidebar.mfu_help", optional=True, step=0.01, format="%.2f"),
    Field("model.input_cpu_s_per_sample", float, "s", 0.0, 100.0, key="model_input_cpu", widget="number",
          section="model", label="app.sidebar.input_cpu", help="app.sidebar.input_cpu_help", optional=True,
          step=0.001, format="%.4f"),
    Field("model.family", str, choices=MODEL_FAMILIES),
    # ---------------------------------------------------------------- workload
    Field("workload", str, choices=WORK_KINDS, key="work_kind", widget="radio", section="workload",
          choice_labels="app.sidebar.work_kinds", switch=True),
    Field("workload.dataset_samples", int, "samples", 1, 10**13, key="dataset_samples", widget="number",
          section="workload", help="app.sidebar.dataset_samples_help", optional=True, format="%d"),
    Field("workload.epochs", float, "epochs", 0.01, 1e6, key="epochs", widget="number", section="workload",
          shown=(When("work_kind", ("epochs",)),), step=1.0, format="%g",
          bound_note="was > 0: a hundredth of an epoch is the shortest run planned in epochs (less: use tokens)"),
    Field("workload.tokens", float, "tokens", 1.0, 1e16, key="tokens", widget="number", section="workload",
          shown=(When("work_kind", ("tokens",)),), format="%.3e",
          bound_note="was > 0: one token is the smallest amount of text"),
    Field("workload.reference_points", str, key="ref_points", widget="text_area", section="workload",
          label="app.sidebar.ref_points", help="app.sidebar.ref_points_help", max_chars=2000,
          shown=(When("work_kind", ("reference_points",)),), switch=True),
    Field("workload.b_crit", float, "samples", 1.0, 1e12, key="b_crit", widget="number", section="workload",
          help="app.sidebar.b_crit_help", optional=True, format="%g",
          bound_note="was > 0: a critical batch is at least one sample"),
    Field("workload.early_stop_fraction", float, "fraction", 0.01, 1.0, key="early_stop_fraction",
          widget="number", section="workload", label="app.sidebar.early_stop", help="app.sidebar.early_stop_help",
          step=0.05, format="%.2f", bound_note="was > 0: 1 % of the planned steps is the smallest sensible stop"),
    Field("workload.eval_overhead", float, "fraction", 0.0, 10.0, key="eval_overhead", widget="number",
          section="workload", step=0.01, format="%.2f", half=True),
    Field("workload.checkpoint_overhead", float, "fraction", 0.0, 10.0, key="checkpoint_overhead",
          widget="number", section="workload", step=0.01, format="%.2f", half=True),
    Field("workload.mean_tokens_per_sample", float, "tokens", 1.0, 1e7, key="mean_tokens_per_sample",
          widget="number", section="workload", label="app.sidebar.mean_tokens", help="app.sidebar.mean_tokens_help",
          optional=True, format="%g", shown=_ATTENTION, drop_hidden=True),
    Field("workload.packing", bool, key="packing", widget="checkbox", section="workload",
          help="app.sidebar.packing_help", shown=_MEAN_TOKENS, drop_hidden=True),
    Field("workload.padded_tokens_per_sample", float, "tokens", 1.0, 1e7, key="padded_tokens_per_sample",
          widget="number", section="workload", label="app.sidebar.padded_tokens",
          help="app.sidebar.padded_tokens_help", optional=True, format="%g",
          shown=(*_MEAN_TOKENS, When("packing", (True,), negate=True)), drop_hidden=True),
    Field("workload.dataset_gb", float, "GB", 0.0, 1e9),
    # Where the dataset lives today: a listed provider, your own machines, or "other" (no egress counted; a note).
    Field("workload.data_location", str, choices=DATA_LOCATIONS),
    # ---------------------------------------------------------------- training
    Field("training.precisions", str, choices=PRECISIONS, many=True, key="precisions", widget="multiselect",
          section="training", help="app.sidebar.precisions_help"),
    Field("training.optimizer", str, choices=OPTIMIZERS, key="optimizer", widget="select", section="training",
          choice_labels="common.optimizer"),
    Field("training.optimizer_impl", str, choices=OPTIMIZER_IMPLS, key="optimizer_impl", widget="radio",
          section="training", help="app.sidebar.optimizer_impl_help"),
    Field("training.global_batch", int, "samples", 1, 10**9, key="global_batch", widget="number",
          section="training", help="app.sidebar.global_batch_help"),
    Field("training.lr_reference_batch", int, "samples", 1, 10**9, key="lr_reference_batch", widget="number",
          section="training", help="app.sidebar.lr_reference_batch_help", optional=True),
    Field("training.micro_batch", bool, key="micro_auto", widget="checkbox", section="training",
          help="app.sidebar.micro_auto_help", switch=True),
    Field("training.micro_batch", int, "samples", 1, 10**9, key="micro_batch", widget="number",
          section="training", enabled=(When("micro_auto", (False,)),)),
    Field("training.activation_checkpointing", bool, key="checkpointing", widget="checkbox", section="training",
          help="app.sidebar.checkpointing_help"),
    Field("training.sharding", str, choices=SHARDINGS, key="sharding", widget="select", section="training",
          choice_labels="common.sharding"),
    Field("training.state_layout", str, choices=STATE_LAYOUTS, key="state_layout", widget="select",
          section="training", help="app.sidebar.state_layout_help"),
    # The software stack the run uses (planner.vocab.SOFTWARE_STACKS); absent: the family's default
    # (planner.vocab.DEFAULT_STACKS). The widget adds "auto" for that (ui.state.AUTO_STACK).
    Field("training.stack", str, choices=SOFTWARE_STACKS, key="stack", widget="select", section="training",
          help="app.sidebar.stack_help", choice_labels="common.stack"),
    Field("training.frozen_fraction", float, "fraction", 0.0, 1.0, key="frozen_fraction", widget="number",
          section="training", help="app.sidebar.frozen_fraction_help", step=0.05, format="%.2f"),
    Field("training.adapter", str, choices=(NO_ADAPTER, *ADAPTER_KINDS), key="adapter_kind", widget="select",
          section="training", label="app.sidebar.adapter", choice_labels="common.adapter", switch=True),
    Field("training.adapter.kind", str, choices=ADAPTER_KINDS),  # the switch above sets it
    Field("training.adapter.rank", int, "", 1, 65536, key="adapter_rank", widget="number", section="training",
          shown=_ADAPTER, half=True),
    Field("training.adapter.targets", str, choices=ADAPTER_TARGETS, key="adapter_targets", widget="select",
          section="training", choice_labels="common.adapter_targets", shown=_ADAPTER, half=True),
    Field("training.adapter.base_dtype", str, choices=BASE_DTYPES, key="adapter_base_dtype", widget="select",
          section="training", shown=_ADAPTER, half=True),
    Field("training.adapter.dropout", float, "probability", 0.0, 0.99),
    Field("training.adapter.kbit_upcast", bool),
    Field("training.adapter.nf4_keeps_input", bool),
    Field("training.adapter.fused_qkv", bool),
    Field("training.set_grads_to_none", bool),
    Field("training.softmax_keeps_input", bool),
    Field("training.fsdp_no_sync", bool),
    Field("training.fsdp_frozen_grads", bool),
    Field("training.checkpoint_offload", bool),
    # ---------------------------------------------------------------- GPUs
    Field("hardware.gpus", bool, key="gpus_all", widget="checkbox", section="gpus", switch=True),
    Field("hardware.gpus", str, many=True, key="gpus", widget="multiselect", section="gpus",
          shown=(When("gpus_all", (True,), negate=True),), switch=True),
    Field("hardware.gpu_counts", int, "GPUs", 1, 100_000, many=True, key="gpu_counts", widget="multiselect",
          section="gpus", help="app.sidebar.gpu_counts_help", offered=COUNT_CHOICES),
    Field("hardware.gpus_per_node", int, "GPUs", 1, 64, key="gpus_per_node", widget="number", section="gpus",
          half=True),
    Field("hardware.cpu_workers_per_gpu", int, "processes", 0, 1024, key="cpu_workers_per_gpu", widget="number",
          section="gpus", label="app.sidebar.cpu_workers", help="app.sidebar.cpu_workers_help", half=True),
    Field("hardware.inter_node_gb_per_s", float, "GB/s", 0.1, 100_000.0, key="inter_node_gb_per_s",
          widget="number", section="gpus", label="app.sidebar.inter_node", help="app.sidebar.inter_node_help",
          step=25.0, format="%g", bound_note="was > 0: 0.1 GB/s is below one 1 Gb/s Ethernet port"),
    Field("hardware.workspace_gib", float, "GiB", 0.0, 1024.0, key="workspace_gib", widget="number",
          section="gpus", label="app.sidebar.workspace", help="app.sidebar.workspace_help", optional=True,
          step=0.25, format="%.2f"),
    # ---------------------------------------------------------------- pricing
    Field("pricing.tier", str, choices=TIERS, key="tier", widget="select", section="pricing",
          choice_labels="common.tier"),
    Field("pricing.provider", str, key="provider", widget="select", section="pricing"),
    Field("pricing.region_group", str, choices=REGION_GROUPS, key="region_group", widget="select",
          section="pricing", help="app.sidebar.region_group_help", choice_labels="common.region_group",
          shown=(When("tier", ("on_prem",), negate=True),)),
    Field("pricing.spot.preemptions_per_instance_hour", float, "1/h", 0.0, 100.0, key="spot_rate",
          widget="number", section="pricing", help="app.sidebar.spot_rate_help", shown=_SPOT, step=0.01,
          format="%.3f"),
    Field("pricing.spot.checkpoint_interval_min", float, "min", 0.1, 1e5, key="spot_interval", widget="number",
          section="pricing", shown=_SPOT, step=5.0, format="%g", half=True,
          bound_note="was > 0: six seconds is below any checkpoint's own write time"),
    Field("pricing.spot.restart_min", float, "min", 0.0, 1e4, key="spot_restart", widget="number",
          section="pricing", shown=_SPOT, step=1.0, format="%g", half=True),
    Field("pricing.on_prem.purchase_usd_per_gpu", float, "USD", 0.0, 1e8, key="onprem_purchase", widget="number",
          section="pricing", help="app.sidebar.onprem_purchase_help", optional=True,
          placeholder="app.sidebar.onprem_purchase_own", shown=_ON_PREM, step=1000.0, format="%.0f"),
    Field("pricing.on_prem.lifetime_years", float, "years", 0.1, 50.0, key="onprem_years", widget="number",
          section="pricing", shown=_ON_PREM, step=0.5, format="%g", half=True,
          bound_note="was > 0: about five weeks is the shortest write-off worth planning"),
    Field("pricing.on_prem.fleet_utilisation", float, "fraction", 0.01, 1.0, key="onprem_util", widget="number",
          section="pricing", shown=_ON_PREM, step=0.05, format="%.2f", half=True,
          bound_note="was > 0: a fleet busy 1 % of the time is the least worth pricing"),
    Field("pricing.on_prem.usd_per_kwh", float, "USD/kWh", 0.0, 100.0, key="onprem_kwh", widget="number",
          section="pricing", shown=_ON_PREM, step=0.01, format="%.3f", half=True),
    Field("pricing.on_prem.pue", float, "", 1.0, 5.0, key="onprem_pue", widget="number", section="pricing",
          shown=_ON_PREM, step=0.05, format="%.2f", half=True),
    Field("pricing.on_prem.power_fraction_of_tdp", float, "fraction", 0.01, 1.0,
          bound_note="was > 0: 1 % of TDP is below any GPU's idle draw"),
    Field("pricing.currency", str, key="currency", widget="select", section="pricing", offered=CURRENCIES),
    # USD per USD is 1: with USD the rate and its date are hidden and leave the scenario (its default is 1).
    Field("pricing.exchange_rate", float, "currency/USD", 1e-6, 1e9, key="exchange_rate", widget="number",
          section="pricing", help="app.sidebar.exchange_rate_help", shown=_LOCAL_CURRENCY, drop_hidden=True,
          step=0.01, format="%.4f"),
    Field("pricing.exchange_rate_as_of", dt.date, key="exchange_rate_as_of", widget="date", section="pricing",
          help="app.sidebar.exchange_rate_as_of_help", shown=_LOCAL_CURRENCY, drop_hidden=True),
    Field("pricing.runs", int, "runs", 1, 100_000, key="runs", widget="number", section="pricing",
          help="app.sidebar.runs_help", half=True),
    Field("pricing.tax_rate", float, "fraction", 0.0, 5.0, key="tax_rate", widget="number", section="pricing",
          step=0.01, format="%.2f", half=True),
    Field("pricing.failure_overhead", float, "fraction", 0.0, 10.0, key="failure_overhead", widget="number",
          section="pricing", help="app.sidebar.failure_overhead_help", step=0.05, format="%.2f"),
    Field("pricing.billing_increment_min", float, "min", 1 / 60, 60 * 24,
          bound_note="was > 0: one second is the finest increment a provider bills"),
    Field("pricing.grid_kg_co2_per_kwh", float, "kg/kWh", 0.0, 5.0),
    # ---------------------------------------------------------------- constraints
    Field("constraints.deadline_hours", float, "h", 0.1, 1e7, key="deadline_hours", widget="number",
          section="constraints", label="app.sidebar.deadline", optional=True, step=1.0, format="%g",
          bound_note="was > 0: six minutes is the shortest deadline a training plan can meet"),
    Field("constraints.deadline_confidence", str, choices=DEADLINE_CONFIDENCES, key="deadline_confidence",
          widget="radio", section="constraints", help="app.sidebar.deadline_confidence_help",
          choice_labels="app.sidebar.confidence"),
    Field("constraints.budget_usd", float, "USD", 0.01, 1e12, key="budget_usd", widget="number",
          section="constraints", label="app.sidebar.budget", optional=True, step=100.0, format="%.0f",
          bound_note="was > 0: one cent is the smallest budget in dollars"),
)

# The reader's rows, by path (switch rows pick a value's form and are not read); the widgets' rows, by key.
AT_PATH: Mapping[str, Field] = {f.path: f for f in FIELDS if not f.switch}
BY_KEY: Mapping[str, Field] = {f.key: f for f in FIELDS if f.key}
SIDEBAR: Mapping[Section, tuple[Field, ...]] = {s: tuple(f for f in FIELDS if f.key and f.section == s)
                                                for s in SECTIONS}
# Number widgets whose bounds come from their row: (min, max), the table's own values.
BOUNDS: Mapping[str, tuple[int | float, int | float]] = {
    f.key: (f.minimum, f.maximum) for f in FIELDS
    if f.key and f.widget == "number" and f.minimum is not None and f.maximum is not None}


def shown(f: Field, values: Mapping[str, object]) -> bool:
    return all(c.holds(values) for c in f.shown)
