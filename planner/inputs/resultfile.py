"""The benchmark result file (schemas trainplan.bench/1 and /2): validated reader, atomic writer, folder scan.

Writers write /2; a /1 file is read as before (/2's fields take their defaults). Importable with the standard
library alone (bench runs on GPU machines without the app's packages): the loader imports yaml only when a YAML
file is read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from planner.inputs import loader
from planner.inputs.atomic import atomic_write
from planner.inputs.check import Reader, parse_date
from planner.inputs.errors import InputError, skipped
from planner.inputs.filenames import slug
from planner.inputs.reasons import Parts, read_reason
from planner.vocab import (
    ATTENTION_KINDS,
    BATCH_UNITS,
    DATA_PARALLELISMS,
    EFFECTIVE_PRECISIONS,
    LEGACY_STACKS,
    MEMORY_MEANINGS,
    PRECISIONS,
    PROVENANCE_KINDS,
    PUBLISHED_UNITS,
    STACKS,
)

SCHEMA_V1 = "trainplan.bench/1"
SCHEMA = "trainplan.bench/2"  # what every writer writes
SCHEMAS = (SCHEMA_V1, SCHEMA)
ATEN_OP_PHASES = ("forward", "backward", "optimizer")  # a traced row's aten_ops (bench/trace_core.py OP_PHASES)
# A traced row's op_classes: forward + backward (recompute included: the GPU runs it) split by operator class, each
# with its FLOPs (torch.utils.flop_counter formulas), bytes moved (every tensor an op reads and writes, logical
# sizes) and kernel-launching aten ops (bench/trace_core.py op_class).
OP_CLASSES = ("matmul", "attention", "elementwise", "embedding_loss")
OP_CLASS_FIELDS = ("flops", "bytes", "ops")
SOURCES = ("measured", "traced")  # /1
SOURCES_V2 = PROVENANCE_KINDS  # /2 adds published (cited public figures)
STATUSES = ("ok", "oom", "error", "skipped")
PHASES = ("data", "forward", "backward", "optimizer")
BREAKDOWN_PARTS = ("weights", "grads", "optimizer", "activations", "transients")
STAT_KEYS = ("median", "p10", "p90", "mean", "std", "n")
# Numeric measurement fields: each is a number or null (null = unmeasured, with a reason in `unmeasured`).
NUMERIC_FIELDS = (
    "samples_per_s", "peak_allocated_bytes", "peak_reserved_bytes", "static_bytes", "first_step_peak_bytes",
    "device_used_bytes", "achieved_tflops", "mfu", "gpu_util_pct", "power_w", "energy_j_per_step",
    "grad_scaler_skips",
)
MAX_FILE_BYTES = loader.RESULT.max_bytes
# Every number in a result file is at most this (1 EB of memory, 30 billion years of step time): a larger one
# is a corrupted file, and it would print as a 300-digit figure downstream.
MAX_NUMBER = 1e18
MAX_BATCH = 10**9
MAX_COUNT = 10**7  # GPUs, threads, sequence length, lines of a cited file
# A measurement is noisy when the interquartile range of its per-step times is more than this fraction of their
# median: the median still stands, but the machine was not quiet (another process, clocks, thermals).
NOISY_IQR_OVER_MEDIAN = 0.1
# Where a published figure was read: repository@commit:path#Lstart-Lend, or a URL followed by its table and row.
REPO_SOURCE = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)@(?P<commit>[0-9a-f]{7,40}):(?P<path>[^#\s]+)"
                         r"#L(?P<start>\d+)(?:-L(?P<end>\d+))?$")
URL_SOURCE = re.compile(r"^https?://\S+\s+\S")
SOURCE_EXPECTED = ("where the figure was published: repository@commit:path#Lstart-Lend (e.g. "
                   "org/repo@0a1b2c3:docs/results.md#L40-L52), or a URL followed by the table and row (e.g. "
                   "https://arxiv.org/abs/2104.04473 Table 1, row 3)")
_MEMORY_FIELD = {"max_memory_allocated": "peak_allocated_bytes", "max_memory_reserved": "peak_reserved_bytes",
                 "device_used": "device_used_bytes"}


# ---------------------------------------------------------------- the schema's statistics (bench uses these too)

def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default method), q in [0, 100]."""
    if not values:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def iqr_over_median(values: Sequence[float]) -> float:
    """(p75 - p25) / median of per-step times: the spread a reader recomputes from `step_time_s.raw`."""
    median = percentile(values, 50)
    if median <= 0:
        raise ValueError("step times must be positive")
    return (percentile(values, 75) - percentile(values, 25)) / median


def is_noisy(ratio: float) -> bool:
    return ratio > NOISY_IQR_OVER_MEDIAN


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class StepTimeStats:
    median: float
    p10: float
    p90: float
    mean: float
    std: float
    n: int
    raw: tuple[float, ...] = ()  # /2: every timed step, so anyone can recompute the statistics
    iqr_over_median: float | None = None  # /2: recomputed from raw when the file has it


@dataclass(frozen=True)
class Parallelism:
    """How a (published) run split its work: data-parallel kind, tensor- and pipeline-parallel degrees."""

    data: str = "none"
    tensor: int = 1
    pipeline: int = 1


@dataclass(frozen=True)
class PublishedFigure:
    """A value exactly as its source published it (unit one of vocab.PUBLISHED_UNITS)."""

    value: float
    unit: str


@dataclass(frozen=True)
class Provenance:
    """Where a /2 measurement came from; a published one names its source precisely enough to check it."""

    kind: str
    source: str | None = None
    sha256: str | None = None  # of the upstream file, when read from a repository
    lines: int | None = None  # the upstream file's line count
    retrieved: dt.date | None = None
    # The software stack (planner.vocab.SOFTWARE_STACKS); a class written before issue 32 is read through
    # LEGACY_STACKS (vanilla_pytorch -> pytorch_eager; optimized_pytorch, other_framework -> None: no stack said).
    stack: str | None = None
    framework: str | None = None
    precision_as_published: str | None = None
    precision_effective: str | None = None
    precision_reason: str | None = None
    memory_meaning: str | None = None
    published: PublishedFigure | None = None
    stack_as_written: str | None = None  # provenance.stack exactly as the file has it (a legacy class included)


@dataclass(frozen=True)
class MissingPoint:
    """A requested (precision, batch) the file has no row for, and why; batch_size None = not chosen yet."""

    precision: str
    batch_size: int | None
    reason: str
    reason_parts: Parts = ()  # the reason as keys (planner.inputs.reasons), or its text for a file without them


@dataclass(frozen=True)
class Measurement:
    source: str
    precision: str
    batch_size: int
    status: str
    reason: str | None = None
    step_time_s: StepTimeStats | None = None
    phases_s: Mapping = field(default_factory=dict)
    samples_per_s: float | None = None
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    static_bytes: float | None = None
    first_step_peak_bytes: float | None = None
    device_used_bytes: float | None = None
    memory_breakdown_bytes: Mapping = field(default_factory=dict)
    achieved_tflops: float | None = None
    mfu: float | None = None
    mfu_peak_key: str | None = None
    gpu_util_pct: float | None = None
    power_w: float | None = None
    energy_j_per_step: float | None = None
    loss_finite: bool | None = None
    grad_scaler_skips: float | None = None
    unmeasured: Mapping = field(default_factory=dict)
    # the reasons as keys (planner.inputs.reasons): `reason` and each `unmeasured` field's; read from a file's
    # *_keys, or from its text for a file written before them
    reason_parts: Parts = ()
    unmeasured_parts: Mapping = field(default_factory=dict)
    # /2 (defaults for a /1 file)
    noisy: bool = False
    provenance: Provenance | None = None
    seq_len: int | None = None
    gpu_count: int | None = None
    parallelism: Parallelism | None = None
    attention: str | None = None
    global_batch: int | None = None
    micro_batch: int | None = None
    batch_unit: str | None = None
    # traced rows (bench trace): kernel-launching aten ops per phase (forward, backward, optimizer); {} when absent
    aten_ops: Mapping = field(default_factory=dict)
    # traced rows: {class: {flops, bytes, ops}} of forward + backward (OP_CLASSES); {} when absent
    op_classes: Mapping = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def is_one_gpu(self) -> bool:
        """A run on one GPU with no data, tensor or pipeline parallelism: its step is a one-GPU time (a multi-GPU
        step holds communication and sharding)."""
        par = self.parallelism
        return (self.gpu_count or 1) == 1 and (par is None or (par.data == "none" and par.tensor == 1
                                                                and par.pipeline == 1))

    @property
    def published_micro_step_s(self) -> float | None:
        """Seconds per micro-step on one GPU, derived from a published figure (None when it cannot be).

        Every GPU of the run holds micro_batch samples per micro-step; data-parallel ranks = gpu_count / (tensor ×
        pipeline). A throughput over all GPUs: t = micro × ranks [× seq_len for tokens] / value; per GPU, the
        total is value × gpu_count. A time per iteration is one optimizer step over global_batch, i.e.
        global / (micro × ranks) micro-steps (gradient accumulation), so t = iteration / that count.
        """
        fig = self.provenance.published if self.provenance else None
        if fig is None or self.source != "published":
            return None
        micro: float = self.micro_batch or self.batch_size
        global_batch: float | None = self.global_batch
        if self.batch_unit == "tokens":  # batches counted in tokens: samples = tokens / sequence length
            if not self.seq_len:
                return None
            micro /= self.seq_len
            global_batch = global_batch / self.seq_len if global_batch else None
        count = self.gpu_count or 1
        par = self.parallelism or Parallelism()
        ranks = max(1.0, count / (par.tensor * par.pipeline))
        unit = fig.unit
        total = fig.value * count if unit.endswith("_per_gpu") else fig.value
        if unit.startswith("samples_per_s"):
            return micro * ranks / total
        if unit.startswith("tokens_per_s"):
            return micro * ranks * self.seq_len / total if self.seq_len else None
        iteration_s = {"s_per_iteration": fig.value, "ms_per_iteration": fig.value / 1000.0,
                       "iterations_per_s": 1.0 / fig.value}.get(unit)
        if iteration_s is None:
            return None
        accumulation = (global_batch / (micro * ranks)) if global_batch else 1.0
        return iteration_s / max(1.0, accumulation)

    @property
    def iqr_pct(self) -> float | None:
        """The step times' IQR as a percentage of their median (None without timing)."""
        ratio = self.step_time_s.iqr_over_median if self.step_time_s else None
        return None if ratio is None else 100.0 * ratio


@dataclass(frozen=True)
class ResultFile:
    path: str
    created_utc: str
    partial: bool
    environment: Mapping
    model: Mapping
    settings: Mapping
    measurements: tuple[Measurement, ...]
    max_batch: tuple[Mapping, ...] = ()
    dataloader: tuple[Mapping, ...] = ()
    ddp: Mapping | None = None
    raw: Mapping = field(default_factory=dict, repr=False, compare=False)
    schema: str = SCHEMA_V1
    missing: tuple[MissingPoint, ...] = ()  # /2: requested points a partial file has no row for
    warnings: tuple[str, ...] = ()  # /2: what the writer wants a reader to know (noisy timings, ...)
    # The reasons as keys (planner.inputs.reasons), one per max_batch / dataloader entry and per warning, and the
    # environment's unmeasured fields'.
    max_batch_reasons: tuple[Parts, ...] = ()
    dataloader_reasons: tuple[Parts, ...] = ()
    warning_parts: tuple[Parts, ...] = ()
    environment_unmeasured: Mapping = field(default_factory=dict)
    # What is wrong with a file that still loads (an unknown reason key, a parameter missing or extra): one line each
    # naming the file and the field; scan_results lists them with the bad files.
    problems: tuple[str, ...] = ()
    # SHA-256 of the file's bytes as read ("" for one built in memory): the same file in two folders counts once,
    # and a user names a file to use anyway by its first 12 digits (content_id).
    sha256: str = ""

    @property
    def content_id(self) -> str:
        """The file's short content id (12 hex digits of its SHA-256), or its path when it was not read from bytes."""
        return self.sha256[:12] if self.sha256 else self.path

    @property
    def model_name(self) -> str:
        return str(self.model.get("name"))

    @property
    def seq_len(self) -> int | None:
        """The sequence length the file measured (model.seq_len, else its transformer shape's); None for others."""
        seq = self.model.get("seq_len") or (self.model.get("transformer") or {}).get("seq_len")
        return int(seq) if seq else None

    @property
    def device(self) -> str:
        return str(self.environment.get("device"))

    @property
    def gpu_profile_id(self) -> str | None:
        return self.environment.get("gpu_profile_id")

    @property
    def is_traced(self) -> bool:
        return any(m.source == "traced" for m in self.measurements)

    @property
    def label(self) -> str:
        """Short provenance text for a user: file name and date."""
        return f"{Path(self.path).name} ({self.created_utc[:10]})"


# ---------------------------------------------------------------- validation

def read_result_file(path: str | Path) -> ResultFile:
    """Read one result file; raises InputError naming the file and the bad field."""
    data = loader.read_file(path, loader.RESULT)
    rf = parse_result(loader.load_bytes(data, str(path), loader.RESULT), str(path))
    return replace(rf, sha256=hashlib.sha256(data).hexdigest())


def parse_result_text(text: str, source: str) -> ResultFile:
    rf = parse_result(loader.load_text(text, source, loader.RESULT), source)
    return replace(rf, sha256=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


def parse_result(data: object, source: str) -> ResultFile:
    if not isinstance(data, Mapping):
        raise InputError(source, None, type(data).__name__, "a JSON object")
    schema = data.get("schema")
    if schema not in SCHEMAS:
        raise InputError(source, "schema", schema, " or ".join(SCHEMAS))
    v2 = schema == SCHEMA
    problems: list[str] = []
    created = data.get("created_utc")
    if not isinstance(created, str) or not re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", created) \
            or len(created) > 40:
        raise InputError(source, "created_utc", created, "an ISO 8601 UTC timestamp such as 2026-11-29T19:40:00Z")
    parse_date(created[:10], source, "created_utc")
    partial = data.get("partial", False)
    if not isinstance(partial, bool):
        raise InputError(source, "partial", partial, "true or false")
    env = _mapping(data, "environment", source)
    if env.get("device") not in ("cuda", "cpu"):
        raise InputError(source, "environment.device", env.get("device"), "cuda or cpu")
    model = _mapping(data, "model", source)
    if not isinstance(model.get("name"), str) or not model.get("name"):
        raise InputError(source, "model.name", model.get("name"), "the model's name")
    model_reader = Reader(model, source, "model")
    for key in ("params", "trainable_params", "flops_per_sample"):
        _optional_number(model_reader, key)
    settings = _mapping(data, "settings", source, required=False)
    raw_meas = data.get("measurements", [])
    if not isinstance(raw_meas, list):
        raise InputError(source, "measurements", raw_meas, "a list")
    measurements = tuple(_measurement(m, source, f"measurements[{i}]", v2, problems)
                         for i, m in enumerate(raw_meas))
    max_batch = _list_of_mappings(data, "max_batch", source)
    max_batch_reasons = []
    for i, mb in enumerate(max_batch):
        r = Reader(mb, source, f"max_batch[{i}]")
        _max_batch_entry(r, v2)
        max_batch_reasons.append(_reason(r, "reason", problems))
        _reason(r, "safe_reason", problems)
    dataloader = _list_of_mappings(data, "dataloader", source)
    dataloader_reasons = []
    for i, row in enumerate(dataloader):
        r = Reader(row, source, f"dataloader[{i}]")
        _optional_number(r, "samples_per_s")
        dataloader_reasons.append(_reason(r, "reason", problems))
    ddp = data.get("ddp")
    if ddp is not None:
        r = Reader(ddp, source, "ddp")
        for key in ("step_time_1_s", "step_time_n_s", "efficiency", "exposed_comm_s"):
            _optional_number(r, key)
        _reason(r, "reason", problems)
        busbw = ddp.get("busbw") if isinstance(ddp, Mapping) else None
        for i, row in enumerate(busbw if isinstance(busbw, list) else []):
            if isinstance(row, Mapping):
                _reason(Reader(row, source, f"ddp.busbw[{i}]"), "reason", problems)
        ddp = _frozen(ddp)
    missing: tuple[MissingPoint, ...] = ()
    warnings: tuple[str, ...] = ()
    warning_parts: tuple[Parts, ...] = ()
    env_unmeasured: Mapping = {}
    if v2:
        top = Reader(data, source)
        env_unmeasured = _environment_v2(Reader(env, source, "environment"), problems)
        requested = _settings_v2(Reader(settings, source, "settings"))
        missing = _missing(top, partial, requested, problems)
        warnings = top.string_list("warnings", ())
        warning_parts = _warning_parts(top, warnings, problems)
    return ResultFile(
        path=source, created_utc=created, partial=partial, environment=_frozen(env), model=_frozen(model),
        settings=_frozen(settings), measurements=measurements, max_batch=tuple(_frozen(m) for m in max_batch),
        dataloader=tuple(_frozen(d) for d in dataloader), ddp=ddp, raw=_frozen(data), schema=schema,
        missing=missing, warnings=warnings, max_batch_reasons=tuple(max_batch_reasons),
        dataloader_reasons=tuple(dataloader_reasons), warning_parts=warning_parts,
        environment_unmeasured=env_unmeasured, problems=tuple(problems),
    )


def _mapping(data: Mapping, key: str, source: str, required: bool = True) -> Mapping:
    value = data.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(source, key, value, "a JSON object")
    return value


def _list_of_mappings(data: Mapping, key: str, source: str) -> list[Mapping]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise InputError(source, key, value, "a list of JSON objects")
    return value


def _optional_number(r: Reader, key: str) -> float | None:
    """A measured figure: a number in [0, MAX_NUMBER], or null (null = unmeasured, with a reason)."""
    return r.number(key, None, minimum=0, maximum=MAX_NUMBER)


def _reasons(r: Reader, key: str = "unmeasured") -> Mapping:
    value = r.data.get(key) or {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise r.fail(key, value, "an object {field: reason}")
    return value


def _reason(r: Reader, name: str, problems: list[str]) -> Parts:
    """`name` (a reason's text) with its `name_keys`, as parts (planner.inputs.reasons)."""
    text = r.data.get(name)
    if text is not None and not isinstance(text, str):
        raise r.fail(name, text, "a string or null")
    return read_reason(text, r.data.get(f"{name}_keys"), r.source, r.field(f"{name}_keys"), problems)


def _unmeasured_parts(r: Reader, unmeasured: Mapping, problems: list[str]) -> Mapping:
    """Each unmeasured field's reason as parts: from `unmeasured_keys` {field: [{key, params}]} where the file
    has it (a field there must be one of `unmeasured`), else from the text."""
    keys = r.data.get("unmeasured_keys")
    if keys is not None and not isinstance(keys, Mapping):
        problems.append(str(r.fail("unmeasured_keys", keys, "an object {field: [{key, params}]}")))
        keys = None
    keys = keys or {}
    for extra in sorted(set(keys) - set(unmeasured)):
        problems.append(str(r.fail(f"unmeasured_keys.{extra}", keys[extra], "a field named in unmeasured")))
    return MappingProxyType({f: read_reason(text, keys.get(f), r.source, r.field(f"unmeasured_keys.{f}"),
                                            problems) for f, text in unmeasured.items()})


def _warning_parts(r: Reader, warnings: tuple[str, ...], problems: list[str]) -> tuple[Parts, ...]:
    keys = r.data.get("warning_keys")
    if keys is not None and (not isinstance(keys, list) or len(keys) != len(warnings)):
        problems.append(str(r.fail("warning_keys", keys, f"a list of {len(warnings)} (one per warning) "
                                                         "lists of {key, params}")))
        keys = None
    return tuple(read_reason(w, keys[i] if keys else None, r.source, f"warning_keys[{i}]", problems)
                 for i, w in enumerate(warnings))


def _measurement(m: object, source: str, path: str, v2: bool = False, problems: list[str] | None = None
                 ) -> Measurement:
    if not isinstance(m, Mapping):
        raise InputError(source, path, m, "a JSON object")
    r = Reader(m, source, path)
    src = r.choice("source", SOURCES_V2 if v2 else SOURCES, "measured")
    precision = r.choice("precision", PRECISIONS)
    batch = r.integer("batch_size", minimum=1, maximum=MAX_BATCH)
    status = r.choice("status", STATUSES)
    problems = [] if problems is None else problems
    reason = m.get("reason")
    reason_parts = _reason(r, "reason", problems)
    stats = None
    st = r.sub("step_time_s")
    if st is not None:
        values = {key: st.number(key, minimum=0, maximum=MAX_NUMBER) for key in STAT_KEYS}
        values["n"] = int(values["n"])
        if values["median"] <= 0:
            raise st.fail("median", values["median"], "a positive time in seconds")
        stats = _step_time_v2(st, values) if v2 else StepTimeStats(**values)
    if status == "ok" and src == "measured" and stats is None:
        raise InputError(source, f"{path}.step_time_s", None, "step-time statistics for an ok measurement")
    numbers: dict[str, Any] = {k: _optional_number(r, k) for k in NUMERIC_FIELDS}
    phases = _number_map(r, "phases_s", PHASES)
    breakdown = _number_map(r, "memory_breakdown_bytes", BREAKDOWN_PARTS)
    unmeasured = _reasons(r)
    unmeasured_parts = _unmeasured_parts(r, unmeasured, problems)
    aten_ops = _number_map(r, "aten_ops", ATEN_OP_PHASES)
    op_classes = _op_classes(r)
    loss_finite = m.get("loss_finite")
    if loss_finite is not None and not isinstance(loss_finite, bool):
        raise InputError(source, f"{path}.loss_finite", loss_finite, "true, false or null")
    extra: dict[str, Any] = {}
    if v2:
        extra = {"noisy": _noisy(r, stats), "provenance": _provenance(r, src, precision, numbers, status=status),
                 **_configuration(r, src)}
    return Measurement(
        source=src, precision=precision, batch_size=batch, status=status, reason=reason, step_time_s=stats,
        phases_s=_frozen(phases), memory_breakdown_bytes=_frozen(breakdown), mfu_peak_key=m.get("mfu_peak_key"),
        loss_finite=loss_finite, unmeasured=_frozen(unmeasured), reason_parts=reason_parts,
        unmeasured_parts=unmeasured_parts, aten_ops=_frozen(aten_ops),
        op_classes=MappingProxyType({k: _frozen(v) for k, v in op_classes.items()}), **numbers, **extra,
    )


def _number_map(r: Reader, key: str, keys: tuple[str, ...]) -> dict:
    value = r.data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise r.fail(key, value, "an object of numbers: " + ", ".join(keys))
    sub = Reader(value, r.source, r.field(key))
    return {k: _optional_number(sub, k) for k in value}


def _op_classes(r: Reader) -> dict[str, dict]:
    """measurements[].op_classes: {class: {flops, bytes, ops}}, classes from OP_CLASSES, non-negative numbers."""
    value = r.data.get("op_classes")
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise r.fail("op_classes", value, "an object {class: {flops, bytes, ops}}; classes: " + ", ".join(OP_CLASSES))
    out: dict[str, dict] = {}
    for name, fields in value.items():
        where = f"{r.field('op_classes')}.{name}"
        if name not in OP_CLASSES:
            raise InputError(r.source, where, name, "one of " + ", ".join(OP_CLASSES))
        if not isinstance(fields, Mapping):
            raise InputError(r.source, where, fields, "an object of numbers: " + ", ".join(OP_CLASS_FIELDS))
        sub = Reader(fields, r.source, where)
        out[name] = {k: sub.number(k, None, minimum=0.0) for k in OP_CLASS_FIELDS if k in fields}
    return out


# ---------------------------------------------------------------- /2 fields

def _environment_v2(r: Reader, problems: list[str]) -> Mapping:
    """Checks the /2 run facts; returns environment.unmeasured's reasons as parts."""
    r.string("trainplan_version")
    unmeasured = _reasons(r)
    threads = r.sub("cpu_threads")
    if threads is not None:
        for key in ("torch_num_threads", "os_cpu_count"):
            threads.integer(key, None, minimum=1, maximum=MAX_COUNT)
    if r.integer("cudnn", None, minimum=0, maximum=MAX_COUNT) is None and "cudnn" not in unmeasured:
        raise r.fail("cudnn", r.data.get("cudnn"), "the cuDNN version (torch.backends.cudnn.version()), or null "
                     "with the reason in environment.unmeasured.cudnn")
    return _unmeasured_parts(r, unmeasured, problems)


def _settings_v2(r: Reader) -> tuple[str, ...] | None:
    """Checks settings.command and settings.requested; returns the requested precisions (None: not given)."""
    r.string_list("command", None)
    req = r.sub("requested")
    if req is None:
        return None
    precisions = req.list_of("precisions", max_items=len(PRECISIONS))
    for i, name in enumerate(precisions):
        if name not in PRECISIONS:
            raise InputError(r.source, f"{req.field('precisions')}[{i}]", name, "one of " + ", ".join(PRECISIONS))
    if req.raw("batch_sizes") != "auto":
        req.integer_list("batch_sizes", minimum=1, maximum=MAX_BATCH, max_items=10_000)
    req.integer("steps", minimum=0, maximum=MAX_COUNT)
    req.integer("warmup", minimum=0, maximum=MAX_COUNT)
    return tuple(precisions)


def _missing(r: Reader, partial: bool, requested: tuple[str, ...] | None, problems: list[str]
             ) -> tuple[MissingPoint, ...]:
    rows = r.raw("missing", [])
    if not isinstance(rows, list):
        raise r.fail("missing", rows, "a list of {precision, batch_size, reason}")
    if rows and not partial:
        raise r.fail("missing", rows, "an empty list in a complete file (partial: false)")
    out = []
    for i, row in enumerate(rows):
        m = Reader(row, r.source, f"missing[{i}]")
        precision = m.choice("precision", requested or PRECISIONS)
        batch = m.integer("batch_size", None, minimum=1, maximum=MAX_BATCH)
        out.append(MissingPoint(precision, batch, m.string("reason"), _reason(m, "reason", problems)))
    return tuple(out)


def _max_batch_entry(r: Reader, v2: bool) -> None:
    r.choice("precision", PRECISIONS)
    largest = r.integer("max_batch", None, minimum=0, maximum=MAX_BATCH)
    if not v2:
        return
    safe = r.integer("safe_batch", None, minimum=0, maximum=MAX_BATCH)
    confirmed = r.boolean("safe_confirmed", False)
    if safe is not None and (largest is None or safe > largest):
        raise r.fail("safe_batch", safe, f"a batch size <= max_batch ({largest})")
    if confirmed and not safe:
        raise r.fail("safe_confirmed", confirmed, "false when there is no safe_batch")


def _step_time_v2(st: Reader, values: dict) -> StepTimeStats:
    """/2 step times: `raw` (every timed step) must agree with n and the median; the IQR is recomputed from it."""
    ratio = st.number("iqr_over_median", None, minimum=0, maximum=MAX_NUMBER)
    raw: tuple[float, ...] = ()
    if st.has("raw"):
        items = st.list_of("raw", max_items=1_000_000)
        for i, t in enumerate(items):
            if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= MAX_NUMBER:
                raise InputError(st.source, f"{st.field('raw')}[{i}]", t, "a positive time in seconds")
        raw = tuple(float(t) for t in items)
        if len(raw) != values["n"]:
            raise st.fail("n", values["n"], f"the number of raw step times ({len(raw)})")
        median = percentile(raw, 50)
        if not math.isclose(median, values["median"], rel_tol=1e-9, abs_tol=1e-15):
            raise st.fail("median", values["median"], f"the median of step_time_s.raw ({median!r})")
        computed = iqr_over_median(raw)
        if ratio is not None and not math.isclose(ratio, computed, rel_tol=1e-6, abs_tol=1e-12):
            raise st.fail("iqr_over_median", ratio, f"the IQR/median of step_time_s.raw ({computed!r})")
        ratio = computed
    return StepTimeStats(**values, raw=raw, iqr_over_median=ratio)


def _noisy(r: Reader, stats: StepTimeStats | None) -> bool:
    noisy = r.boolean("noisy", False)
    ratio = stats.iqr_over_median if stats else None
    if stats and stats.raw and ratio is not None and noisy != is_noisy(ratio):
        raise r.fail("noisy", noisy, f"{str(is_noisy(ratio)).lower()}: IQR/median of step_time_s.raw is "
                     f"{ratio:.3f} (noisy means above {NOISY_IQR_OVER_MEDIAN})")
    if noisy and ratio is None:
        raise r.fail("noisy", noisy, "false, or step_time_s.raw or step_time_s.iqr_over_median to show the noise")
    return noisy


def _provenance(r: Reader, kind: str, precision: str, numbers: Mapping, *, status: str = "ok") -> Provenance | None:
    p = r.sub("provenance")
    if p is None:
        if kind == "published":
            raise r.fail("provenance.source", None, SOURCE_EXPECTED)
        return None
    if p.choice("kind", PROVENANCE_KINDS, kind) != kind:
        raise p.fail("kind", p.data.get("kind"), f"{kind} (the measurement's source)")
    published = kind == "published"
    source = p.string("source", None)
    if published and source is None:
        raise p.fail("source", None, SOURCE_EXPECTED)
    repo = REPO_SOURCE.match(source) if source else None
    if source and not repo and not URL_SOURCE.match(source):
        raise p.fail("source", source, SOURCE_EXPECTED)
    sha256 = p.string("sha256", None)
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise p.fail("sha256", sha256, "the upstream file's SHA-256: 64 lowercase hex digits")
    lines = p.integer("lines", None, minimum=1, maximum=MAX_COUNT)
    if repo:
        first, last = int(repo["start"]), int(repo["end"] or repo["start"])
        if not 1 <= first <= last:
            raise p.fail("source", source, "a line range #Lstart-Lend with 1 <= start <= end")
        if published and (sha256 is None or lines is None):
            raise p.fail("sha256" if sha256 is None else "lines", None, "the upstream file's SHA-256 and line "
                         "count (a published figure read from a repository)")
        if lines is not None and last > lines:
            raise p.fail("source", source, f"a line range within the file's {lines} lines")
    effective = p.choice("precision_effective", EFFECTIVE_PRECISIONS, None)
    why = p.string("precision_reason", None)
    if effective is not None and why is None:
        raise p.fail("precision_reason", None, f"why the run's arithmetic was {effective} (e.g. 'AMP with bf16 "
                     "on A100, per the launch script')")
    if effective not in (None, "unknown") and effective != precision:
        raise p.fail("precision_effective", effective, f"the measurement's precision ({precision}) or unknown")
    meaning = p.choice("memory_meaning", MEMORY_MEANINGS, None)
    if meaning is not None and numbers.get(_MEMORY_FIELD[meaning]) is None:
        raise p.fail("memory_meaning", meaning, f"a memory figure in {r.field(_MEMORY_FIELD[meaning])}")
    if published and meaning is None and any(numbers.get(f) is not None for f in _MEMORY_FIELD.values()):
        raise p.fail("memory_meaning", None, "which counter the published memory figure is: "
                     + ", ".join(MEMORY_MEANINGS))
    figure = p.sub("published")
    if figure is None and published and status != "oom":  # an out-of-memory outcome publishes a word, not a figure
        raise p.fail("published", None, "the value and unit exactly as published: {value, unit}")
    retrieved = p.date("retrieved", None)
    if published and retrieved is None:
        raise p.fail("retrieved", None, "the date the source was read (YYYY-MM-DD)")
    written = p.choice("stack", STACKS, None)
    return Provenance(
        kind=kind, source=source, sha256=sha256, lines=lines, retrieved=retrieved,
        stack=LEGACY_STACKS[written] if written in LEGACY_STACKS else written, stack_as_written=written,
        framework=p.string("framework", None),
        precision_as_published=p.string("precision_as_published", None), precision_effective=effective,
        precision_reason=why, memory_meaning=meaning,
        published=PublishedFigure(figure.number("value", minimum=0, maximum=MAX_NUMBER, exclusive_min=True),
                                  figure.choice("unit", PUBLISHED_UNITS)) if figure else None,
    )


def _configuration(r: Reader, kind: str) -> dict:
    """The run's shape, as a published row states it (optional for measured and traced rows)."""
    out = {key: r.integer(key, None, minimum=1, maximum=MAX_COUNT if key in ("seq_len", "gpu_count") else
                          MAX_BATCH)
           for key in ("seq_len", "gpu_count", "global_batch", "micro_batch")}
    if kind == "published" and out["gpu_count"] is None:
        raise r.fail("gpu_count", None, "how many GPUs the published run used")
    if out["global_batch"] is not None and out["micro_batch"] is not None \
            and out["micro_batch"] > out["global_batch"]:
        raise r.fail("micro_batch", out["micro_batch"], f"at most global_batch ({out['global_batch']})")
    unit = r.choice("batch_unit", BATCH_UNITS, None)
    if unit is None and (out["global_batch"] is not None or out["micro_batch"] is not None):
        raise r.fail("batch_unit", None, "what global_batch and micro_batch count: " + ", ".join(BATCH_UNITS))
    par = r.sub("parallelism")
    parallelism = None
    if par is not None:
        parallelism = Parallelism(par.choice("data", DATA_PARALLELISMS, "none"),
                                  par.integer("tensor", 1, minimum=1, maximum=MAX_COUNT),
                                  par.integer("pipeline", 1, minimum=1, maximum=MAX_COUNT))
    return {**out, "batch_unit": unit, "parallelism": parallelism,
            "attention": r.choice("attention", ATTENTION_KINDS, None)}


# ---------------------------------------------------------------- scanning

def scan_results(*dirs: str | Path) -> tuple[list[ResultFile], list[str]]:
    """Every valid result file under the folders, and one problem line per bad file (never hides the others).

    Whatever goes wrong with one file (a bad field, unreadable, not UTF-8, too deep, out of memory) it is listed
    and skipped; hidden files and folders (temporaries of the atomic writer, editors) are left out.
    """
    good: list[ResultFile] = []
    problems: list[str] = []
    for root in dirs:
        root = Path(root)
        try:
            if not root.is_dir():
                continue
            paths = sorted(root.rglob("*.json"))
        except OSError as exc:
            problems.append(skipped(root, exc))
            continue
        for path in paths:
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            try:
                result = read_result_file(path)
                good.append(result)
                problems.extend(result.problems)
            except InputError as exc:
                problems.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - one bad file must never abort the scan
                problems.append(skipped(path, exc))
    return good, problems


# ---------------------------------------------------------------- writing

def timestamp_for_filename(created_utc: str) -> str:
    """2026-11-29T19:40:00.123Z -> 20261129T194000Z (sortable, portable)."""
    digits = re.sub(r"[^0-9T]", "", created_utc.split(".")[0].replace("Z", ""))
    return digits + "Z"


def result_path(root: str | Path, device_dir: str, model: str, created_utc: str) -> Path:
    return Path(root) / slug(device_dir) / f"{slug(model)}-{timestamp_for_filename(created_utc)}.json"


def _json_bytes(data: Mapping) -> bytes:
    # allow_nan=False: NaN and Infinity are not JSON; a reader elsewhere would reject the file.
    return json.dumps(data, indent=1, sort_keys=False, allow_nan=False).encode("utf-8")


def write_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Write JSON atomically and never overwrite: a taken name gets a -2, -3 ... suffix. Mode 0644 minus umask."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, _json_bytes(data), if_exists="suffix")


def replace_result_atomic(data: Mapping, path: str | Path) -> Path:
    """Rewrite the same run's file in place (atomic): used to grow a partial file as a sweep proceeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(target, _json_bytes(data), if_exists="replace")
