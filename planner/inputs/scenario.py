"""The scenario file (schema trainplan.scenario/1): typed, validated load into frozen dataclasses, and dump."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from planner.inputs import loader
from planner.inputs.check import Reader
from planner.inputs.errors import InputError
from planner.inputs.fields import AT_PATH, Field
from planner.vocab import (
    ADAPTER_DEFAULT_BASE,
    DATA_LOCATION_ALIASES,
    DATA_OTHER,
    PRECISIONS,
    QUANTIZED_BASE_DTYPES,
    stack_state_layout,
)

SCHEMA = "trainplan.scenario/1"
MAX_SCENARIO_BYTES = loader.SCENARIO.max_bytes
MAX_REGIONS = 50


@dataclass(frozen=True)
class TransformerShape:
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    mlp: str = "gelu"
    ffn: int | None = None  # MLP width; default 4h for gelu, 8h/3 rounded for swiglu
    kv_heads: int | None = None  # key/value heads (< heads: grouped-query, 1: multi-query); default heads
    tie_embeddings: bool | None = None  # LM head shares the token embedding; default: gelu yes, swiglu no
    dropout: float | None = None  # training dropout probability; None: not said (the memory check assumes some)
    norm: str | None = None  # layernorm | rmsnorm; default: gelu layernorm, swiglu rmsnorm
    loss: str = "standard"  # standard | chunked (fused/chunked cross-entropy) | sequence | chunked_fp32 (vocab.py)
    qkv: str = "separate"  # separate | fused | fused_rope: how attention's q, k, v come out (vocab.QKV_LAYOUTS)

    @property
    def ffn_width(self) -> int:
        if self.ffn is not None:
            return self.ffn
        return 4 * self.hidden if self.mlp == "gelu" else int(round(8 * self.hidden / 3))

    @property
    def kv_head_count(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def tied(self) -> bool:
        """Whether the LM head is the token embedding (GPT-2, BERT, Llama 3.2 1B/3B) or its own matrix (LLaMA)."""
        return self.mlp == "gelu" if self.tie_embeddings is None else self.tie_embeddings

    @property
    def norm_kind(self) -> str:
        return self.norm or ("rmsnorm" if self.mlp == "swiglu" else "layernorm")


@dataclass(frozen=True)
class ModelSpec:
    name: str | None = None
    params: int | None = None
    largest_layer_params: int | None = None
    flops_per_sample: float | None = None
    activation_bytes_per_sample: float | None = None
    activation_precision: str | None = None
    transformer: TransformerShape | None = None
    mfu: float | None = None
    input_cpu_s_per_sample: float | None = None
    attention: str | None = None  # eager | sdpa | flash; None: chosen per GPU, precision and family
    # cnn | vit | encoder | decoder | rnn | mlp | custom (vocab.MODEL_FAMILIES); None: the zoo's, a result file's or
    # the corpus', else decoder for a transformer shape and custom without one
    family: str | None = None


@dataclass(frozen=True)
class Adapter:
    kind: str = "lora"
    rank: int = 16
    targets: str = "attention"
    base_dtype: str = "bf16"
    dropout: float = 0.0  # lora_dropout on the adapters' input (PEFT's default 0.0; LitGPT 0.05)
    # peft.prepare_model_for_kbit_training casts a quantised base's unquantised parameters (embeddings, LM head,
    # norms) to fp32 (the HF/PEFT QLoRA stack); False: they stay 16-bit (LitGPT). Unused without a quantised base.
    kbit_upcast: bool = True
    # bitsandbytes before 0.43.2 kept every 4-bit linear's input for backward (MatMul4Bit ctx.tensors = (A, B)),
    # though a frozen base needs only the weight; 0.43.2 dropped it (bitsandbytes@9e753741 "fix QLoRA mem bug:
    # delete useless buffered activation", #1270). True: an older bitsandbytes (LitGPT's 2023-24 tables ran 0.42.0).
    # int8 bases keep it in every version (MatMul8bitLt). Unused without an nf4 base.
    nf4_keeps_input: bool = False
    # LitGPT's LoRAQKVLinear: one adapter module for q, k and v on the fused projection, one lora_dropout for all of
    # them, and zero_pad's index_copy keeps the adapted outputs ((b·s, out width) per adapted matrix) for backward;
    # False: PEFT's one LoRA layer (and dropout) per adapted matrix.
    fused_qkv: bool = False


@dataclass(frozen=True)
class TrainingSetup:
    global_batch: int
    precisions: tuple[str, ...] = PRECISIONS
    optimizer: str = "adamw"
    optimizer_impl: str = "foreach"
    micro_batch: int | None = None  # None = auto
    activation_checkpointing: bool = False
    sharding: str = "none"
    state_layout: str = "torch_amp"
    frozen_fraction: float = 0.0
    adapter: Adapter | None = None
    # optimizer.zero_grad(set_to_none=True), PyTorch >= 2.0's default, frees gradients before forward; False keeps
    # zeroed gradients alive through forward (PyTorch 1.x's default, and the loops written for it).
    set_grads_to_none: bool = True
    # PyTorch before 1.11 kept softmax's (and log_softmax's) input for backward as well as its output
    # (pytorch/pytorch#49600; removed by #66018, 2021-10): eager attention keeps one more s x s tensor per layer.
    softmax_keeps_input: bool = False
    # FSDP's no_sync() during gradient accumulation (LitGPT/Fabric no_backward_sync, Accelerate's accumulate):
    # gradients accumulate unsharded until the last micro-batch. False: reduce-scatter every micro-batch (FSDP2).
    fsdp_no_sync: bool = False
    # FSDP units that mix frozen and trainable parameters (LoRA inside each wrapped block, which needs
    # use_orig_params=True: LitGPT/Fabric): "the gradient memory usage will be ... equivalent to not freezing those
    # parameters" (torch.distributed.fsdp docs). False: adapters wrapped apart (PEFT's FSDP policy) or FSDP2.
    fsdp_frozen_grads: bool = False
    # The global batch the learning rate (and its warm-up) was tuned at: the plan says how to scale them to
    # global_batch. None: a reference run's batch when the workload has them, else no factor.
    lr_reference_batch: int | None = None
    # The software stack the run uses (planner.vocab.SOFTWARE_STACKS): the plan says which it is made for. None:
    # the model family's default (planner.vocab.DEFAULT_STACKS, planner.engine.stack.planned_stack).
    stack: str | None = None
    # With activation_checkpointing: the checkpointed block inputs are kept in CPU RAM, not on the GPU (Unsloth's
    # use_gradient_checkpointing="unsloth"); docs/methods.md#memory. Unused without checkpointing.
    checkpoint_offload: bool = False


@dataclass(frozen=True)
class ReferencePoint:
    global_batch: int
    steps: int | None = None
    epochs: float | None = None


@dataclass(frozen=True)
class Workload:
    dataset_samples: int | None = None
    epochs: float | None = None
    tokens: float | None = None
    reference_points: tuple[ReferencePoint, ...] = ()
    b_crit: float | None = None
    early_stop_fraction: float = 1.0
    eval_overhead: float = 0.0
    checkpoint_overhead: float = 0.0
    # Variable-length text (planner/engine/sequences.py): the mean tokens of one example after the prompt template,
    # whether examples are packed into full seq_len sequences, and, unpacked, the mean length a micro-batch is padded
    # to (default: seq_len, i.e. padding to the maximum length).
    mean_tokens_per_sample: float | None = None
    packing: bool = False
    padded_tokens_per_sample: float | None = None
    # The data line of the cost (planner/engine/datacost.py): the dataset's size in GB, and where it lives today
    # (a provider id, or "local" for your own machines); none: no data line.
    dataset_gb: float | None = None
    data_location: str | None = None


@dataclass(frozen=True)
class Hardware:
    gpus: tuple[str, ...] | None = None  # None = all profiles
    gpu_counts: tuple[int, ...] = (1,)
    gpus_per_node: int = 8
    inter_node_gb_per_s: float = 100.0
    cpu_workers_per_gpu: int = 8
    workspace_gib: float | None = None


@dataclass(frozen=True)
class SpotSettings:
    preemptions_per_instance_hour: float = 0.05
    checkpoint_interval_min: float = 30.0
    restart_min: float = 10.0


@dataclass(frozen=True)
class OnPrem:
    # None: each GPU's own cited purchase price (its profile's `purchase:`); a number overrides it for every GPU.
    purchase_usd_per_gpu: float | None = None
    lifetime_years: float = 4.0
    fleet_utilisation: float = 0.6
    usd_per_kwh: float = 0.12
    pue: float = 1.4
    # Share of TDP a GPU draws while training when no measured power exists; None: the engine's default
    # (planner.engine.cost.TDP_UTILISATION, with its source).
    power_fraction_of_tdp: float | None = None


@dataclass(frozen=True)
class Pricing:
    tier: str = "on_demand"
    provider: str = "cheapest"
    # Where the GPUs may be rented (planner.inputs.regions): a group of regions, or explicit region names (any
    # provider), which then replace the group. "any" = every quote, so the cheapest region wins.
    region_group: str = "any"
    regions: tuple[str, ...] = ()
    currency: str = "USD"
    exchange_rate: float = 1.0
    exchange_rate_as_of: dt.date | None = None
    runs: int = 1
    failure_overhead: float = 0.0
    tax_rate: float = 0.0
    billing_increment_min: float | None = None  # None = the quote's own billing increment
    spot: SpotSettings = SpotSettings()
    on_prem: OnPrem = OnPrem()
    grid_kg_co2_per_kwh: float | None = None


@dataclass(frozen=True)
class Constraints:
    deadline_hours: float | None = None
    budget_usd: float | None = None
    deadline_confidence: str = "p90"  # which hours must meet the deadline: p90 (high end of the range) or p50


@dataclass(frozen=True)
class Scenario:
    model: ModelSpec
    training: TrainingSetup
    workload: Workload
    name: str = "Untitled scenario"
    locale: str = "en"
    hardware: Hardware = Hardware()
    pricing: Pricing = Pricing()
    constraints: Constraints = Constraints()


# ---------------------------------------------------------------- defaults

def defaults_of(cls: type) -> dict[str, Any]:
    """Field -> default of one scenario dataclass: the one owner of a default, read by the parser and the app."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


# The dataclass that holds the fields under each dotted section path (a row's path minus its last part).
SECTION_TYPES: dict[str, Any] = {  # dataclass types (mypy has no name for "a dataclass type")
    "": Scenario, "model": ModelSpec, "model.transformer": TransformerShape, "training": TrainingSetup,
    "training.adapter": Adapter, "workload": Workload, "hardware": Hardware, "pricing": Pricing,
    "pricing.spot": SpotSettings, "pricing.on_prem": OnPrem, "constraints": Constraints,
}
REQUIRED = object()  # a field without a default: the reader requires it
# The table's rows by section: the fields each section's reader reads without naming them.
_CHILDREN: dict[str, tuple[Field, ...]] = {
    section: tuple(f for f in AT_PATH.values() if f.path.rpartition(".")[0] == section) for section in SECTION_TYPES}


def _dataclass_field(path: str) -> dataclasses.Field:
    parent, _, name = path.rpartition(".")
    return SECTION_TYPES[parent].__dataclass_fields__[name]


# Each row's dataclass field, found once: its default is read from it on every use (the reader runs on every
# sidebar change), so the dataclass stays the default's one owner.
_DATACLASS_FIELDS: dict[str, dataclasses.Field] = {path: _dataclass_field(path) for path in AT_PATH}


def field_default(path: str) -> Any:
    """The default of the field at a dotted scenario path, read from its dataclass; REQUIRED when it has none."""
    f = _DATACLASS_FIELDS.get(path) or _dataclass_field(path)
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return REQUIRED


def _int(x: float | None) -> int | None:
    return None if x is None else int(x)


def _get(r: Reader, path: str, default: Any = None, /) -> Any:
    """The field at `path` (its last part read from `r`), typed and bounded by its row in planner.inputs.fields;
    absent: its dataclass default, or `default` where the default depends on another field (pass REQUIRED to
    require it)."""
    f: Field = AT_PATH[path]
    if r.data.get(f.name) is None:  # absent or null: the default, unless the field is required
        fallback = field_default(path) if default is None else default
        if fallback is not REQUIRED:
            return fallback
    return _read(r, f)


def _fields_of(r: Reader, section: str, **given: Any) -> dict[str, Any]:
    """Every table row directly under `section` read from `r` (typed, bounded, defaulted), with `given` for the
    fields its reader works out itself (sub-sections, lists, values whose rule spans fields)."""
    out = {f.name: _get(r, f.path) for f in _CHILDREN.get(section, ()) if f.name not in given}
    out.update(given)
    return out


def _read(r: Reader, f: Field) -> Any:
    """The value of `f` in `r` (required here), checked against its row."""
    if f.type is bool:
        return r.boolean(f.name)
    if f.type is int:
        return r.integer(f.name, minimum=_int(f.minimum), maximum=_int(f.maximum))
    if f.type is float:
        return r.number(f.name, minimum=f.minimum, maximum=f.maximum)
    if f.type is dt.date:
        return r.date(f.name)
    return r.string(f.name, choices=f.choices)


# ---------------------------------------------------------------- loading

def load_scenario_file(path: str | Path, known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    """Read and validate a scenario YAML file (saved scenarios too); bad input raises InputError naming file and field."""
    return parse_scenario(loader.load_file(path, loader.SCENARIO), str(path), known_gpu_ids)


def load_scenario_bytes(data: bytes, source: str = "<scenario>",
                        known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    """An uploaded scenario or one read from standard input: the same size cap, UTF-8 rule and grammar as a file."""
    return parse_scenario(loader.load_bytes(data, source, loader.SCENARIO), source, known_gpu_ids)


def load_scenario_text(text: str, source: str = "<scenario>", known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    return parse_scenario(loader.load_text(text, source, loader.SCENARIO), source, known_gpu_ids)


def parse_scenario(data: object, source: str = "<scenario>", known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    r = Reader(data, source)
    r.reject_unknown(["schema", "name", "locale", "model", "training", "workload", "hardware", "pricing",
                      "constraints"])
    schema = r.raw("schema", SCHEMA)
    if schema != SCHEMA:
        raise r.fail("schema", schema, SCHEMA)
    model = _model(_required_section(r, "model"))
    training = _training(_required_section(r, "training"))
    workload = _workload(_required_section(r, "workload"), model)
    hardware = _hardware(_section(r, "hardware"), known_gpu_ids)
    scenario = Scenario(**_fields_of(r, "", model=model, training=training, workload=workload, hardware=hardware,
                                     pricing=_pricing(_section(r, "pricing")),
                                     constraints=_constraints(_section(r, "constraints"))))
    _check_batches(scenario, source)
    return scenario


def _required_section(r: Reader, key: str) -> Reader:
    sub = r.sub(key)
    if sub is None:
        raise r.fail(key, None, f"a '{key}:' section (required)")
    return sub


def _model(r: Reader) -> ModelSpec:
    r.reject_unknown([f.name for f in dataclasses.fields(ModelSpec)])
    shape = None
    t = r.sub("transformer")
    if t is not None:
        t.reject_unknown([f.name for f in dataclasses.fields(TransformerShape)])
        shape = TransformerShape(**_fields_of(
            t, "model.transformer",
            tie_embeddings=_get(t, "model.transformer.tie_embeddings") if t.has("tie_embeddings") else None))
        if shape.hidden % shape.heads:
            raise t.fail("heads", shape.heads, f"a divisor of hidden ({shape.hidden})")
        if shape.heads % shape.kv_head_count:
            raise t.fail("kv_heads", shape.kv_heads, f"a divisor of heads ({shape.heads})")
    spec = ModelSpec(**_fields_of(r, "model", transformer=shape))
    if spec.name is None and spec.params is None and spec.transformer is None:
        raise r.fail("name", None, "a model name (zoo or result-file model) or its numbers (params or transformer)")
    if spec.params and spec.largest_layer_params and spec.largest_layer_params > spec.params:
        raise r.fail("largest_layer_params", spec.largest_layer_params, f"at most params ({spec.params})")
    return spec


def _training(r: Reader) -> TrainingSetup:
    td = defaults_of(TrainingSetup)
    ad = defaults_of(Adapter)
    r.reject_unknown([f.name for f in dataclasses.fields(TrainingSetup)])
    precisions = r.list_of("precisions", list(td["precisions"]))
    for i, p in enumerate(precisions):
        if p not in (choices := AT_PATH["training.precisions"].choices or ()):
            raise InputError(r.source, r.field(f"precisions[{i}]"), p, "one of " + ", ".join(choices))
    if len(set(precisions)) != len(precisions):
        raise r.fail("precisions", precisions, "each precision at most once")
    micro = r.raw("micro_batch", "auto")
    if micro == "auto":
        micro_batch = None
    else:
        micro_batch = _get(r, "training.micro_batch", REQUIRED)
    adapter = None
    a = r.sub("adapter")
    if a is not None:
        a.reject_unknown([f.name for f in dataclasses.fields(Adapter)])
        kind = _get(a, "training.adapter.kind")
        base_dtype = _get(a, "training.adapter.base_dtype", ADAPTER_DEFAULT_BASE.get(kind, ad["base_dtype"]))
        if kind == "qlora" and base_dtype not in QUANTIZED_BASE_DTYPES:
            # QLoRA is adapters over a quantised base (Dettmers et al. 2023, §2: a 4-bit NormalFloat base); a 16-bit
            # base with kind qlora is planned as neither (issue 33: the app kept bf16 when switched to QLoRA).
            raise a.fail("base_dtype", base_dtype,
                         "a quantised base (" + ", ".join(QUANTIZED_BASE_DTYPES) + ") with training.adapter.kind "
                         "qlora, which trains adapters over a 4-bit base (nf4 when base_dtype is left out); for "
                         "adapters over a 16-bit base write kind: lora")
        adapter = Adapter(**_fields_of(a, "training.adapter", kind=kind, base_dtype=base_dtype))
    setup = TrainingSetup(**_fields_of(r, "training", precisions=tuple(precisions), micro_batch=micro_batch,
                                       adapter=adapter))
    if r.raw("state_layout", None) is None:  # none given: the stack's, where it fixes one (issue 33)
        setup = dataclasses.replace(setup, state_layout=stack_state_layout(setup.stack, setup.sharding))
    if setup.state_layout == "deepspeed" and setup.sharding not in ("zero2", "zero3"):
        raise r.fail("sharding", setup.sharding, "zero2 or zero3 with state_layout deepspeed "
                     "(DeepSpeed's estimator covers only those)")
    if setup.frozen_fraction >= 1.0 and adapter is None:
        raise r.fail("frozen_fraction", setup.frozen_fraction, "below 1.0 (something must train) or an adapter")
    if setup.micro_batch is not None and setup.micro_batch > setup.global_batch:
        raise r.fail("micro_batch", setup.micro_batch, f"at most global_batch ({setup.global_batch})")
    return setup


def _workload(r: Reader, model: ModelSpec) -> Workload:
    r.reject_unknown([f.name for f in dataclasses.fields(Workload)])
    given = [k for k in ("epochs", "tokens", "reference_points") if r.has(k)]
    if len(given) != 1:
        raise r.fail(
            "epochs", {k: r.data.get(k) for k in ("epochs", "tokens", "reference_points")},
            "exactly one of epochs, tokens or reference_points",
        )
    points: list[ReferencePoint] = []
    if r.has("reference_points"):
        for i, item in enumerate(r.list_of("reference_points", max_items=1000)):
            p = Reader(item, r.source, r.field(f"reference_points[{i}]"))
            p.reject_unknown(["global_batch", "steps", "epochs"])
            if p.has("steps") == p.has("epochs"):
                raise p.fail("steps", p.data.get("steps"), "exactly one of steps or epochs per point")
            points.append(ReferencePoint(
                global_batch=p.integer("global_batch", minimum=1, maximum=10**9),
                steps=p.integer("steps", None, minimum=1, maximum=10**12),
                epochs=p.number("epochs", None, minimum=0, exclusive_min=True, maximum=1e6),
            ))
    workload = Workload(**_fields_of(r, "workload", reference_points=tuple(points), data_location=_data_location(r)))
    if workload.mean_tokens_per_sample is None:
        for key in ("padded_tokens_per_sample",) + (("packing",) if workload.packing else ()):
            if r.has(key):
                raise r.fail(key, r.data.get(key), "workload.mean_tokens_per_sample too (the mean tokens of one "
                             "example): packing and padding are worked out from it")
    if workload.data_location is not None and workload.dataset_gb is None:
        raise r.fail("dataset_gb", None, f"the dataset's size in GB too: data_location ({workload.data_location}) "
                     "alone adds no data line")
    if workload.packing and workload.padded_tokens_per_sample is not None:
        raise r.fail("padded_tokens_per_sample", workload.padded_tokens_per_sample,
                     "no padded length with packing: true (packed sequences are full, there is no padding)")
    if (workload.padded_tokens_per_sample is not None and workload.mean_tokens_per_sample is not None
            and workload.padded_tokens_per_sample < workload.mean_tokens_per_sample):
        raise r.fail("padded_tokens_per_sample", workload.padded_tokens_per_sample,
                     f"at least the mean tokens per sample ({workload.mean_tokens_per_sample:g}): padding only "
                     "adds tokens")
    needs_dataset = workload.epochs is not None or any(p.epochs is not None for p in points)
    if needs_dataset and workload.dataset_samples is None:
        raise r.fail("dataset_samples", None, "the dataset size in samples (epochs need it)")
    if workload.tokens is not None and (model.transformer is None and model.name is None):
        raise r.fail("tokens", workload.tokens, "a model with a sequence length (model.transformer.seq_len)")
    if len(points) == 1 and workload.b_crit is None:
        raise r.fail("reference_points", [dataclasses.asdict(p) for p in points],
                     "two or more points, or one point with workload.b_crit")
    return workload


def _data_location(r: Reader) -> str | None:
    """Where the dataset lives today: one of its row's choices (planner.vocab.DATA_LOCATIONS), any letter case."""
    value = r.raw("data_location", None)
    if value is None:
        return None
    choices = AT_PATH["workload.data_location"].choices or ()
    name = value.strip().lower() if isinstance(value, str) else None
    name = DATA_LOCATION_ALIASES.get(name, name) if name else None
    if name not in choices:
        raise r.fail("data_location", value, "one of " + ", ".join(choices) + f" ('{DATA_OTHER}': a place not "
                     "listed; its egress is then not in the cost)")
    return name


def _section(r: Reader, key: str) -> Reader:
    """An optional section; absent reads as empty, so its defaults come from the same place as a present one's."""
    return r.sub(key) or Reader({}, r.source, r.field(key))


def _hardware(r: Reader, known_gpu_ids: Iterable[str] | None) -> Hardware:
    hd = defaults_of(Hardware)
    r.reject_unknown(hd)
    gpus: tuple[str, ...] | None = None
    raw = r.raw("gpus", "all")
    if raw != "all":
        items = r.list_of("gpus", max_items=500)
        known = set(known_gpu_ids) if known_gpu_ids is not None else None
        for i, gid in enumerate(items):
            if not isinstance(gid, str):
                raise InputError(r.source, r.field(f"gpus[{i}]"), gid, "a GPU profile id string")
            if known is not None and gid not in known:
                raise InputError(r.source, r.field(f"gpus[{i}]"), gid,
                                 "a known GPU profile id: " + ", ".join(sorted(known)))
        gpus = tuple(items)
    f = AT_PATH["hardware.gpu_counts"]
    counts = r.integer_list("gpu_counts", list(hd["gpu_counts"]), minimum=_int(f.minimum), maximum=_int(f.maximum),
                            max_items=64)
    return Hardware(**_fields_of(r, "hardware", gpus=gpus, gpu_counts=tuple(sorted(set(counts)))))


def _spot(s: Reader) -> SpotSettings:
    d = defaults_of(SpotSettings)
    s.reject_unknown(d)
    return SpotSettings(**_fields_of(s, "pricing.spot"))


def _on_prem(o: Reader) -> OnPrem:
    d = defaults_of(OnPrem)
    o.reject_unknown(d)
    return OnPrem(**_fields_of(o, "pricing.on_prem"))


def _pricing(r: Reader) -> Pricing:
    pd = defaults_of(Pricing)
    r.reject_unknown(pd)
    currency = _get(r, "pricing.currency")
    if len(currency) != 3 or not currency.isalpha():
        raise r.fail("currency", currency, "a 3-letter ISO 4217 code such as USD, MXN, ARS, EUR")
    rate = _get(r, "pricing.exchange_rate")
    if currency.upper() == "USD" and rate != 1.0:
        # Amounts are priced in USD and multiplied by the rate for `currency`: a rate other than 1 with USD would
        # print two different dollar figures for one option.
        raise r.fail("exchange_rate", rate, "1 with currency USD (the rate converts USD into `currency`; set "
                                            "`currency` to the local one, e.g. MXN, or remove `exchange_rate`)")
    return Pricing(**_fields_of(r, "pricing", currency=currency.upper(), exchange_rate=rate, regions=_regions(r),
                                spot=_spot(_section(r, "spot")), on_prem=_on_prem(_section(r, "on_prem"))))


def _regions(r: Reader) -> tuple[str, ...]:
    regions = r.string_list("regions", ())
    if len(regions) > MAX_REGIONS:
        raise r.fail("regions", f"{len(regions)} names", f"at most {MAX_REGIONS} region names")
    if regions and r.has("region_group") and r.raw("region_group") != "any":
        raise r.fail("regions", list(regions), "either regions or region_group, not both (regions names the exact "
                     "regions; region_group a group of them)")
    return tuple(x.strip() for x in regions)


def _constraints(r: Reader) -> Constraints:
    d = defaults_of(Constraints)
    r.reject_unknown(d)
    return Constraints(**_fields_of(r, "constraints"))


def _check_batches(s: Scenario, source: str) -> None:
    """A fixed micro-batch must divide every per-GPU batch; the global batch must split over every GPU count."""
    for n in s.hardware.gpu_counts:
        if s.training.global_batch % n:
            raise InputError(source, "training.global_batch", s.training.global_batch,
                             f"a multiple of every GPU count (hardware.gpu_counts has {n})")
        per_gpu = s.training.global_batch // n
        micro = s.training.micro_batch
        if micro is not None and per_gpu % micro:
            raise InputError(source, "training.micro_batch", micro,
                             f"a divisor of the per-GPU batch {per_gpu} (= global_batch "
                             f"{s.training.global_batch} / {n} GPUs), or auto")


# ---------------------------------------------------------------- dumping

def scenario_to_dict(s: Scenario) -> dict:
    """The scenario as a plain mapping that parse_scenario reads back to an equal Scenario."""
    out: dict = {"schema": SCHEMA, "name": s.name, "locale": s.locale}
    out["model"] = _drop_none(dataclasses.asdict(s.model))
    training = dataclasses.asdict(s.training)
    training["precisions"] = list(s.training.precisions)
    training["micro_batch"] = "auto" if s.training.micro_batch is None else s.training.micro_batch
    out["training"] = _drop_none(training)
    workload = dataclasses.asdict(s.workload)
    workload["reference_points"] = [_drop_none(p) for p in workload["reference_points"]] or None
    out["workload"] = _drop_none(workload)
    hardware = dataclasses.asdict(s.hardware)
    hardware["gpus"] = "all" if s.hardware.gpus is None else list(s.hardware.gpus)
    hardware["gpu_counts"] = list(s.hardware.gpu_counts)
    out["hardware"] = _drop_none(hardware)
    pricing = dataclasses.asdict(s.pricing)
    if s.pricing.exchange_rate_as_of is not None:
        pricing["exchange_rate_as_of"] = s.pricing.exchange_rate_as_of.isoformat()
    if not s.pricing.regions:
        del pricing["regions"]  # the default: the region group decides
    out["pricing"] = _drop_none(pricing)
    constraints = _drop_none(dataclasses.asdict(s.constraints))
    if constraints.get("deadline_confidence") == defaults_of(Constraints)["deadline_confidence"]:
        del constraints["deadline_confidence"]  # the default: a file without constraints stays without them
    if constraints:
        out["constraints"] = constraints
    return out


def dump_scenario_yaml(s: Scenario) -> str:
    return yaml.safe_dump(scenario_to_dict(s), sort_keys=False, allow_unicode=True)


def _drop_none(d: Mapping) -> dict:
    out = {}
    for k, v in d.items():
        if v is None:
            continue
        out[k] = _drop_none(v) if isinstance(v, Mapping) else (list(v) if isinstance(v, tuple) else v)
    return out
