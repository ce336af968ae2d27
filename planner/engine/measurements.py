"""Select the result-file measurements that apply to a scenario: step-time points and memory peaks per GPU."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.engine import pooling
from planner.engine.estimates import ResolvedModel, TimePoint
from planner.engine.notes import Note
from planner.engine.steptime import TimeSeries, measured_micro_step, time_series
from planner.inputs.profiles import GpuProfile
from planner.inputs.resultfile import OP_CLASS_FIELDS, OP_CLASSES, REPO_SOURCE, Measurement, ResultFile
from planner.inputs.scenario import TrainingSetup
from planner.inputs.zoo_catalog import canonical_id


@dataclass(frozen=True)
class PeakPoint:
    batch_size: int
    peak_bytes: float
    label: str
    optimizer: str
    trainable_params: int | None


@dataclass(frozen=True)
class OpClassLine:
    """A traced model's forward + backward by operator class as lines in the micro-batch: for each 'class.field'
    (matmul.flops, elementwise.bytes, ... of resultfile.OP_CLASSES x OP_CLASS_FIELDS) a per-sample slope and an
    intercept, least squares over the trace's batches (a trace's FLOPs and activation bytes are linear in the
    batch; the intercept holds the weights' reads); read at a batch, never below 0."""

    fields: Mapping[str, tuple[float, float]]
    label: str
    batches: tuple[int, ...]

    def at(self, name: str, batch: float) -> float:
        slope, intercept = self.fields.get(name, (0.0, 0.0))
        return max(0.0, slope * batch + intercept)


def op_class_line(rows: Sequence[tuple[int, Mapping[str, Mapping[str, float]]]], label: str) -> OpClassLine | None:
    """The lines through a trace's rows (batch, op_classes); None with fewer than two distinct batches."""
    batches = sorted({b for b, _ in rows})
    if len(batches) < 2:
        return None
    xs = [float(b) for b, _ in rows]
    mx = sum(xs) / len(xs)
    sxx = sum((x - mx) ** 2 for x in xs)
    fields: dict[str, tuple[float, float]] = {}
    for c in OP_CLASSES:
        for f in OP_CLASS_FIELDS:
            ys = [float((oc.get(c) or {}).get(f) or 0.0) for _, oc in rows]
            my = sum(ys) / len(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
            fields[f"{c}.{f}"] = (slope, my - slope * mx)
    return OpClassLine(fields, label, tuple(batches))


@dataclass
class MeasurementIndex:
    """Measured step times by (gpu id, precision), and peaks by (gpu id | 'traced', precision)."""

    times: dict[tuple[str, str], list[TimePoint]] = field(default_factory=lambda: defaultdict(list))
    peaks: dict[tuple[str, str], list[PeakPoint]] = field(default_factory=lambda: defaultdict(list))
    power_w: dict[tuple[str, str], float] = field(default_factory=dict)
    ddp: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    dataloader: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    files_used: set[str] = field(default_factory=set)
    # Files of this model that were not used, and why: Note("file_not_used", file=..., why=Note("file_...")).
    skipped: list[Note] = field(default_factory=list)
    # Step times whose per-step spread was large (result file `noisy: true`): IQR as % of the median, by
    # (file label, precision, batch); the label is a TimePoint's, so a plan can tell which points it used.
    noisy_pct: dict[tuple[str, str, int], float] = field(default_factory=dict)

    # The same times summarised once per (gpu id, precision), for every option that reads them.
    series: dict[tuple[str, str], TimeSeries] = field(default_factory=dict)
    # Published figures (results/published/) by (gpu id, precision): one series per file (one source's
    # consistent set), used only where no bench run measured that GPU and precision.
    published: dict[tuple[str, str], tuple[TimeSeries, ...]] = field(default_factory=dict)
    # alignment()'s answers by (source, precision), worked out once per index
    alignments: dict[tuple[str, str], tuple[float, str | None, int]] = field(default_factory=dict)
    reaches: dict[str, dict[str, int]] = field(default_factory=dict)  # source_reach's counts by precision
    # Kernel-launching aten ops of one training step, by precision, from the newest applicable trace (bench trace):
    # (forward + backward, optimizer) and the trace's label. The analytic step time's launch term reads them.
    aten_ops: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    # Forward + backward by operator class, by precision, from the same trace (bench trace op_classes):
    # calibration/class_roofline.py reads them (the class roofline, measured held out; plans do not use it).
    op_classes: dict[str, OpClassLine] = field(default_factory=dict)

    def gpus_with_times(self, precision: str) -> list[str]:
        return sorted({g for (g, p), pts in self.times.items() if p == precision and pts}
                      | {g for (g, p) in self.published if p == precision})

    def is_published(self, gpu_id: str, precision: str) -> bool:
        """True when this GPU and precision have published figures only (no bench run)."""
        return not self.times.get((gpu_id, precision)) and (gpu_id, precision) in self.published

    def series_at(self, gpu_id: str, precision: str, micro_batch: int) -> TimeSeries | None:
        """The step times to read at `micro_batch`: the bench runs' series; else a published file: that of the
        source that timed this model on the most GPUs at this precision (so GPU ratios come from one source's same
        code, not from which source happened to time which GPU: issue 32), then the one whose batches come closest
        to `micro_batch` (its own batch first), then the one with more points, then by name."""
        own = self.series.get((gpu_id, precision))
        if own is not None:
            return own
        files = self.published.get((gpu_id, precision))
        if not files:
            return None
        return min(files, key=lambda s: (min(abs(math.log(b / micro_batch)) for b in s.batches),
                                         -self.source_reach(s.points[0].source, precision), -len(s.points),
                                         s.labels))

    def reference_source(self, precision: str) -> str | None:
        """The source that timed this model on the most GPUs at `precision` (ties: by name): the level every other
        source's figures are aligned to (alignment)."""
        sources = {s.points[0].source for (_, p), files in self.published.items() if p == precision
                   for s in files if s.points and s.points[0].source}
        return min(sources, key=lambda src: (-self.source_reach(src, precision), src), default=None)

    def alignment(self, source: str | None, precision: str) -> tuple[float, str | None, int]:
        """(k, reference source, shared GPUs): `source`'s figures × k sit at the reference source's level, k the
        geometric mean over the GPUs both timed at `precision` of reference / source at the source's own batch (a
        per-source offset, fixed from the GPUs they share). (1, None, 0) for the reference itself, a bench run or
        a source that shares no GPU with it."""
        key = (source or "", precision)
        if key not in self.alignments:
            self.alignments[key] = self._alignment(source, precision)
        return self.alignments[key]

    def _alignment(self, source: str | None, precision: str) -> tuple[float, str | None, int]:
        reference = self.reference_source(precision)
        if not source or reference is None or source == reference:
            return 1.0, None, 0
        logs = []
        for (_, p), files in sorted(self.published.items()):
            if p != precision:
                continue
            mine = [s for s in files if s.points and s.points[0].source == source]
            theirs = [s for s in files if s.points and s.points[0].source == reference]
            if not mine or not theirs:
                continue
            batch = mine[0].batches[0]
            t_mine, t_ref = measured_micro_step(mine[0], batch), measured_micro_step(theirs[0], batch)
            if t_mine and t_ref:
                logs.append(math.log(t_ref[0] / t_mine[0]))
        if not logs:
            return 1.0, None, 0
        return math.exp(sum(logs) / len(logs)), reference, len(logs)

    def source_reach(self, source: str | None, precision: str) -> int:
        """On how many GPUs `source`'s published figures time this model at `precision` (counted once per index)."""
        if not source:
            return 0
        if precision not in self.reaches:
            reach: dict[str, int] = defaultdict(int)
            for (_, p), files in self.published.items():
                if p == precision:
                    for src in {s.points[0].source for s in files if s.points and s.points[0].source}:
                        reach[str(src)] += 1
            self.reaches[precision] = dict(reach)
        return self.reaches[precision].get(source, 0)


def _file_applies(rf: ResultFile, model: ResolvedModel, training: TrainingSetup) -> Note | None:
    """None when the file measured this configuration; else why not (shown to the user: note.file_*)."""
    if canonical_id(rf.model_name)[0] != model.name:
        return Note("file_other_model")
    file_params = rf.model.get("params")
    if file_params and abs(float(file_params) - model.params) > 0.01 * model.params:
        return Note("file_other_size", file_params=round(float(file_params)), params=model.params)
    seq = rf.seq_len
    if seq and model.seq_len and seq != int(model.seq_len):
        return Note("file_seq_len", seq=int(seq), scenario_seq=int(model.seq_len))
    s = rf.settings
    if bool(s.get("activation_checkpointing", False)) and not training.activation_checkpointing:
        return Note("file_checkpointing")
    if float(s.get("frozen_fraction") or 0.0) != training.frozen_fraction:
        return Note("file_frozen_fraction")
    if bool(s.get("adapter")) != (training.adapter is not None):
        return Note("file_adapter")
    file_adapter = s.get("adapter")
    if training.adapter is not None and isinstance(file_adapter, Mapping) and file_adapter.get("kind") \
            and file_adapter.get("kind") != training.adapter.kind:
        return Note("file_other_adapter", file_adapter=str(file_adapter.get("kind")), adapter=training.adapter.kind)
    sharding = s.get("sharding") or "none"
    if sharding not in ("none", None):
        return Note("file_sharded", sharding=str(sharding))
    return None


def published_label(rf: ResultFile, m: Measurement) -> str:
    """'<repo>@<commit7>:<path>#L<line> (retrieved <date>; <file>)': where a published figure stands."""
    p = m.provenance
    citation = p.source if p and p.source else "?"
    repo = REPO_SOURCE.match(citation)
    if repo:
        citation = f"{repo['repo']}@{repo['commit'][:7]}:{repo['path']}#L{repo['start']}"
    when = p.retrieved.isoformat() if p and p.retrieved else "date unknown"
    return f"{citation} (retrieved {when}; {Path(rf.path).name})"


def _published_time(rf: ResultFile, m: Measurement) -> TimePoint | None:
    """A one-GPU micro-step time from a published figure; None for multi-GPU runs (their step holds
    communication and sharding: scaling data for the step-time model, not a one-GPU time)."""
    if not m.is_one_gpu:
        return None
    t = m.published_micro_step_s
    stack = m.provenance.stack if m.provenance is not None else None
    slug = rf.settings.get("source_slug")
    return TimePoint(m.batch_size, t, published_label(rf, m), None, "published", stack,
                     str(slug) if slug else None) if t else None


def _trace_key(rf: ResultFile) -> tuple[str, ...]:
    """Traces of one model that answer the same scenarios: a newer one supersedes an older one (a trace at another
    sequence length answers other scenarios)."""
    s = rf.settings
    return (canonical_id(rf.model_name)[0], str(rf.seq_len), str(s.get("attention") or "sdpa"),
            str(bool(s.get("activation_checkpointing", False))), str(s.get("optimizer") or "adamw"),
            str(s.get("optimizer_impl") or "foreach"), str(s.get("frozen_fraction") or 0.0), str(s.get("adapter")))


def _newest_traces(results: Sequence[ResultFile]) -> dict[tuple[str, ...], str]:
    """The newest trace's path per _trace_key (ties: the later path)."""
    newest: dict[tuple[str, ...], ResultFile] = {}
    for rf in sorted((r for r in results if r.is_traced), key=lambda r: (r.created_utc, r.path)):
        newest[_trace_key(rf)] = rf
    return {k: rf.path for k, rf in newest.items()}


def _read_aten_ops(idx: MeasurementIndex, rf: ResultFile, m: Measurement) -> None:
    ops = m.aten_ops
    if m.source == "traced" and ops.get("forward") and ops.get("backward") and m.precision not in idx.aten_ops:
        idx.aten_ops[m.precision] = (float(ops["forward"]) + float(ops["backward"]),
                                     float(ops.get("optimizer") or 0.0), rf.label)


def index_measurements(results: Sequence[ResultFile], model: ResolvedModel, training: TrainingSetup, *,
                       profiles: Mapping[str, GpuProfile] | None = None,
                       trusted: frozenset[str] = frozenset()) -> MeasurementIndex:
    """The measurements of `results` that apply to the model and training set-up. Bench-run step times are pooled
    (planner/engine/pooling.py: a file read twice counts once; points that disagree with their siblings or lie
    outside the physics bounds of `profiles` are set aside with a note, unless their file id is in `trusted`)."""
    idx = MeasurementIndex()
    results, repeats = pooling.unique_files(results)
    for copy, original in repeats:
        if canonical_id(copy.model_name)[0] == model.name:
            idx.skipped.append(Note("file_not_used", file=copy.path, why=Note("file_repeat", original=original.path)))
    newest_trace = _newest_traces(results)
    # Bench-run points by (gpu, precision, stack, batch): every file's, pooled once all are read
    measured: dict[tuple[str, str, str, int], list[tuple[pooling.Candidate, TimePoint, Measurement, str]]] = \
        defaultdict(list)
    # Published points by (gpu, precision), then by file (a series never mixes two sources).
    published: dict[tuple[str, str], dict[str, list[TimePoint]]] = defaultdict(lambda: defaultdict(list))
    class_rows: dict[str, list[tuple[int, Mapping[str, Any], str]]] = defaultdict(list)
    for rf in sorted(results, key=lambda r: r.created_utc):
        if canonical_id(rf.model_name)[0] != model.name:  # a file under an old id ('llama') is the same model
            continue
        why_not = _file_applies(rf, model, training)
        if why_not is None and rf.is_traced and newest_trace.get(_trace_key(rf), rf.path) != rf.path:
            why_not = Note("file_superseded", trace=Path(newest_trace[_trace_key(rf)]).name)
        if why_not is not None:
            idx.skipped.append(Note("file_not_used", file=rf.label, why=why_not))
            continue
        label = rf.label  # once per file: a large file has ~10^5 measurements
        gpu = rf.gpu_profile_id if rf.device == "cuda" else None
        # Memory lines are always taken without checkpointing (planner.engine.memory scales them when it is on);
        # step times only from runs with the scenario's own checkpointing (recompute changes the time).
        file_ckpt = bool(rf.settings.get("activation_checkpointing", False))
        times_apply = file_ckpt == training.activation_checkpointing
        # Peaks hold the run's attention: an eager one (bench trace --attention eager) keeps s² scores that fused
        # kernels do not, so eager files answer eager scenarios (model.attention: eager) and only those.
        file_eager = rf.settings.get("attention") == "eager"
        peaks_apply = not file_ckpt and (model.transformer is None or file_eager == (model.attention == "eager"))
        optimizer = str(rf.settings.get("optimizer") or "adamw")
        gpu_profile, factor = (profiles or {}).get(gpu or ""), pooling.work_factor(rf)  # once per file
        trainable = rf.model.get("trainable_params")
        if rf.ddp:
            idx.ddp.append((label, dict(rf.ddp)))
        for row in rf.dataloader:
            idx.dataloader.append((label, dict(row)))
        if rf.settings.get("sync_method") == "ddp":
            continue  # an N-process DDP step already holds communication: it is scaling data, not a 1-GPU time
        for m in rf.measurements:
            if not m.ok:
                continue
            if times_apply and (model.transformer is None or file_eager == (model.attention == "eager")):
                _read_aten_ops(idx, rf, m)  # ops of the scenario's own checkpointing and attention
                if m.source == "traced" and m.op_classes:
                    class_rows[m.precision].append((m.batch_size, m.op_classes, label))
            if m.source == "published" and gpu and times_apply:
                point = _published_time(rf, m)
                if point:
                    published[(gpu, m.precision)][rf.path].append(point)
                    idx.files_used.add(rf.path)
                continue
            if m.source == "measured" and gpu and m.step_time_s is not None and times_apply:
                opt_s = m.phases_s.get("optimizer") if m.phases_s else None
                # bench run's harness is an eager loop: a file that names no stack ran pytorch_eager
                stack = pooling.measured_stack(m)
                file_flops = rf.model.get("flops_per_sample")
                point = TimePoint(m.batch_size, m.step_time_s.median, label, opt_s, stack=stack,
                                  flops_per_sample=float(file_flops) if file_flops else None, partial=rf.partial)
                judged = pooling.candidate(rf, m, gpu=gpu_profile, family=model.family, label=label, factor=factor,
                                           flops_per_sample=point.flops_per_sample or model.flops_per_sample)
                measured[(gpu, m.precision, stack, m.batch_size)].append((judged, point, m, rf.path))
            key = (gpu, m.precision) if m.source == "measured" and gpu else (
                ("traced", m.precision) if m.source == "traced" else None)
            if key and m.peak_allocated_bytes and peaks_apply:
                idx.peaks[key].append(PeakPoint(m.batch_size, m.peak_allocated_bytes, label, optimizer,
                                                int(trainable) if trainable else None))
                idx.files_used.add(rf.path)
    for precision, rows in class_rows.items():
        newest = [(b, oc) for b, oc, lab in rows if lab == rows[-1][2]]  # one trace: the newest applicable
        line = op_class_line(newest, rows[-1][2])
        if line is not None:
            idx.op_classes[precision] = line
    for key, by_file in published.items():
        idx.published[key] = tuple(time_series(_dedupe_latest(pts)) for _, pts in sorted(by_file.items()))
    _pool_measured(idx, measured, trusted)
    for key in list(idx.times):
        idx.times[key] = sorted(idx.times[key], key=lambda p: p.batch_size)  # stable: files oldest first
        idx.series[key] = time_series(idx.times[key])
    return idx


def _pool_measured(idx: MeasurementIndex,
                   measured: Mapping[tuple[str, str, str, int], Sequence[tuple[pooling.Candidate, TimePoint,
                                                                                Measurement, str]]],
                   trusted: frozenset[str]) -> None:
    """Every file's point at one (GPU, precision, stack, batch) pooled (pooling.pool), the set-aside ones noted; at
    a batch timed on two stacks, the stack of the newest file (a figure never mixes two stacks' times)."""
    newest_stack: dict[tuple[str, str, int], tuple[str, str]] = {}
    power: dict[tuple[str, str], tuple[str, float]] = {}
    for (gpu, precision, stack, batch), rows in measured.items():
        newest = max(c.created_utc for c, _, _, _ in rows)
        key = (gpu, precision, batch)
        newest_stack[key] = max(newest_stack.get(key, ("", "")), (newest, stack))
    for (gpu, precision, stack, batch), rows in sorted(measured.items()):
        if newest_stack[(gpu, precision, batch)][1] != stack:
            continue
        verdict = pooling.pool([c for c, _, _, _ in rows], trusted=trusted,
                               where={"gpu": gpu, "precision": precision, "batch": batch})
        idx.skipped.extend(note for _, note in verdict.set_aside)
        for i in verdict.used:
            judged, point, m, path = rows[i]
            idx.times[(gpu, precision)].append(point)
            if m.noisy and m.iqr_pct is not None:
                idx.noisy_pct[(point.label, precision, batch)] = m.iqr_pct
            if m.power_w:  # the newest file's power reading stands
                power[(gpu, precision)] = max(power.get((gpu, precision), ("", 0.0)), (judged.created_utc, m.power_w))
            idx.files_used.add(path)
    idx.power_w.update({key: watts for key, (_, watts) in power.items()})


def _dedupe_latest(points: list[TimePoint]) -> list[TimePoint]:
    """One point per batch size of one published file: its later row wins (a bench run's points are pooled)."""
    by_batch: dict[int, TimePoint] = {}
    for p in points:
        by_batch[p.batch_size] = p
    return [by_batch[b] for b in sorted(by_batch)]


_TWIN_FIELDS = ("layers", "hidden", "heads", "ffn", "vocab", "seq_len", "mlp")


def shape_twin_op_classes(results: Sequence[ResultFile], model: ResolvedModel,
                          training: TrainingSetup) -> dict[str, OpClassLine]:
    """The operator classes of a typed transformer shape (a model with no trace of its own): those of a traced zoo
    model of exactly that shape (layers, hidden, heads, kv heads, ffn, vocab, sequence length, MLP) and the
    scenario's attention, with nothing the scenario does not do (checkpointing, frozen layers, adapters, sharding)."""
    shape = model.transformer
    if shape is None or training.activation_checkpointing or training.frozen_fraction or training.adapter:
        return {}
    newest = _newest_traces(results)
    out: dict[str, OpClassLine] = {}
    for rf in sorted((r for r in results if r.is_traced), key=lambda r: r.path):
        t = rf.model.get("transformer") or {}
        s = rf.settings
        if newest.get(_trace_key(rf)) != rf.path or any(t.get(k) != getattr(shape, k) for k in _TWIN_FIELDS):
            continue
        if (t.get("kv_heads") or t.get("heads")) != (shape.kv_heads or shape.heads):
            continue
        if (s.get("activation_checkpointing") or s.get("frozen_fraction") or s.get("adapter")
                or (s.get("sharding") or "none") != "none"
                or (s.get("attention") == "eager") != (model.attention == "eager")):
            continue
        rows: dict[str, list[tuple[int, Mapping[str, Any]]]] = defaultdict(list)
        for m in rf.measurements:
            if m.ok and m.source == "traced" and m.op_classes:
                rows[m.precision].append((m.batch_size, m.op_classes))
        for precision, pts in rows.items():
            line = op_class_line(pts, f"{rf.label} (a traced {rf.model_name} of the same shape)")
            if line is not None and precision not in out:
                out[precision] = line
    return out
