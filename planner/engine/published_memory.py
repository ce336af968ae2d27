"""Published memory outcomes that decide a plan's verdict (issue 16): a public run of exactly an option's
configuration (GPU, model and sequence length, precision, micro-batch, adapter kind and rank, checkpointing, one
GPU) that ran, or ran out of memory, settles whether the option fits; the model's figure is kept beside it.

The figures come from `bench published build` (results/published): memory rows carry their counter
(max_memory_allocated, max_memory_reserved or device_used, in the measurement's field for it) and out-of-memory
rows have status "oom". A run that ran says "fits" whatever the model says; one that ran out of memory says "does
not fit". A row with status ok and no memory figure (a throughput benchmark's row) is a run that ran: it decides as
well (issue 33), and the note says it carries no figure.

What must match (docs/methods.md#memory "Published runs decide"): the GPU profile, the model (name, parameter
count within 1%, sequence length when the file states one), precision, micro-batch, activation checkpointing, the
adapter (none, or the same kind, rank and targets), frozen fraction, no sharding, one GPU. What a row may leave out:
its memory figure (status decides), the optimizer and the software stack (rarely published with throughput rows;
they move the peak less than the fields above for the models such rows cover, and the note names the row so a
reader can check). Configurations that differ in anything that must match are never matched: a near miss is the
memory model's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.engine.estimates import MemoryEstimate, ResolvedModel
from planner.engine.measurements import _file_applies, published_label
from planner.engine.notes import Note
from planner.vocab import GIB

if TYPE_CHECKING:
    from planner.inputs.resultfile import Measurement, ResultFile
    from planner.inputs.scenario import Adapter, TrainingSetup

RAN, OOM = "ran", "oom"
# Adapter targets as the published stacks name them -> the planner's (vocab.ADAPTER_TARGETS).
_TARGETS = {"query+value": "qv", "q_proj+v_proj": "qv", "qv": "qv", "attention": "attention",
            "all_linear": "all_linear", "all-linear": "all_linear"}
_FIELDS = {"max_memory_allocated": "peak_allocated_bytes", "max_memory_reserved": "peak_reserved_bytes",
           "device_used": "device_used_bytes"}


@dataclass(frozen=True)
class PublishedMemory:
    """One published outcome for (GPU, precision, micro-batch): it ran (with its peak under `meaning`) or not."""

    outcome: str                 # RAN | OOM
    figure_bytes: float | None   # the published peak (RAN with a figure), bytes
    meaning: str | None          # which counter the figure is (vocab.MEMORY_MEANINGS)
    label: str                   # where it stands: repo@commit:path#line (retrieved ...; file)


def planner_targets(published_targets: str) -> str:
    """A published run's adapter targets in the planner's words (vocab.ADAPTER_TARGETS): named pairs by _TARGETS;
    otherwise every linear layer when an MLP projection is adapted, the attention projections when only they are."""
    text = published_targets.lower()
    known = _TARGETS.get(text)
    if known:
        return known
    mlp = any(word in text for word in ("mlp", "gate_proj", "up_proj", "down_proj", "fc"))
    return "all_linear" if mlp else "attention"


def scenario_adapter(published: object) -> dict[str, object] | None:
    """A result file's settings.adapter as a scenario's training.adapter block (None when the run had none): the
    kind, rank and targets it ran; QLoRA's base is nf4 (the 4-bit storage every published QLoRA row uses)."""
    if not isinstance(published, Mapping) or not published.get("kind"):
        return None
    kind = str(published["kind"])
    block: dict[str, object] = {"kind": kind, "rank": int(published.get("rank") or 8),
                                "targets": planner_targets(str(published.get("targets") or ""))}
    block["base_dtype"] = "nf4" if kind == "qlora" else "bf16"
    return block


def same_adapter(published: object, adapter: Adapter | None) -> bool:
    """Whether a published run's adapter is the scenario's: both none, or the same kind, rank and targets."""
    if adapter is None or not isinstance(published, Mapping):
        return adapter is None and not published
    targets = _TARGETS.get(str(published.get("targets") or "").lower())
    return (published.get("kind") == adapter.kind and published.get("rank") == adapter.rank
            and targets == adapter.targets)


def _outcome(m: Measurement, label: str) -> PublishedMemory | None:
    if m.status == "oom":
        return PublishedMemory(OOM, None, None, label)
    if not m.ok:
        return None
    meaning = m.provenance.memory_meaning if m.provenance else None
    figure = getattr(m, _FIELDS[meaning]) if meaning in _FIELDS else None
    if figure:
        return PublishedMemory(RAN, float(figure), meaning, label)
    # A run published with status ok and no memory figure (a throughput row) still ran at that micro-batch on that
    # GPU: status is evidence (issue 33: ResNet-50 at 512 on an RTX 3090 was "does not fit" beside its own row).
    return PublishedMemory(RAN, None, None, label)


def index_published_memory(results: Sequence[ResultFile], model: ResolvedModel,
                           training: TrainingSetup) -> dict[tuple[str, str, int], PublishedMemory]:
    """(GPU id, precision, micro-batch) -> the published outcome of exactly the scenario's configuration on one GPU.

    Several rows for one key: a run that ran outranks one that did not (a published run proves the fit; e.g. nf4
    with and without double quantisation), and among runs the largest peak is kept."""
    out: dict[tuple[str, str, int], PublishedMemory] = {}
    for rf in results:
        if rf.device != "cuda" or not rf.gpu_profile_id or _file_applies(rf, model, training) is not None:
            continue
        s = rf.settings
        if bool(s.get("activation_checkpointing", False)) != training.activation_checkpointing \
                or not same_adapter(s.get("adapter"), training.adapter):
            continue
        for m in rf.measurements:
            if m.source != "published" or not m.is_one_gpu:
                continue
            found = _outcome(m, published_label(rf, m))
            if found is None:
                continue
            key = (rf.gpu_profile_id, m.precision, m.micro_batch or m.batch_size)
            held = out.get(key)
            if held is None or _rank(found) > _rank(held):
                out[key] = found
    return out


def _rank(p: PublishedMemory) -> tuple[bool, float]:
    return p.outcome == RAN, p.figure_bytes or 0.0


def decided_by(estimate: MemoryEstimate, published: PublishedMemory) -> MemoryEstimate:
    """The estimate with the published outcome as its verdict, and a note saying whose figure decided it."""
    ours = {"max_memory_allocated": estimate.allocated_peak, "max_memory_reserved": estimate.reserved_peak,
            "device_used": estimate.device_total}.get(published.meaning or "", estimate.device_total)
    if published.outcome == OOM:
        note = Note("published_oom", source=published.label, ours=round(estimate.device_total / GIB, 1),
                    capacity=round(estimate.capacity / GIB, 1))
    elif published.figure_bytes is None:
        if estimate.total <= estimate.usable:  # the model agrees: the JSON keeps the row, the notes stay short
            return replace(estimate, published_outcome=published.outcome, published_label=published.label)
        note = Note("published_ran_status", source=published.label, ours=round(estimate.device_total / GIB, 1),
                    capacity=round(estimate.capacity / GIB, 1))
    else:
        note = Note("published_ran", source=published.label, gib=round(published.figure_bytes / GIB, 1),
                    counter=published.meaning or "?", ours=round(ours / GIB, 1))
    return replace(estimate, published_outcome=published.outcome, published_label=published.label,
                   published_figure=published.figure_bytes, published_meaning=published.meaning,
                   notes=(note, *estimate.notes))
