"""Measurements combined, not overwritten (issue 34; docs/methods.md#pooling): every bench-run step time of one
GPU, model, precision, stack and micro-batch is read; those that agree within their noise are pooled, one that
disagrees or lies outside the physics bounds is set aside with a note, and a file read twice counts once."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from planner.engine import physics_bounds, steptime
from planner.engine.notes import Note
from planner.inputs.profiles import GpuProfile
from planner.inputs.resultfile import Measurement, ResultFile
from planner.inputs.zoo_catalog import canonical_id

# Two step times of the same configuration agree when |ln(t1 / t2)| <= max(AGREE_K × IQR/median, AGREE_FLOOR),
# IQR/median the larger of the two runs' own spread of per-step times (0 for a file without them). Assumptions
# (docs/methods.md#pooling): a run's own spread is the scale of run-to-run differences on a machine too (clocks,
# thermals, neighbours), so k = 3 of it separates a unit error or another machine's speed from noise (a median's
# own standard error, about 0.93 × IQR / sqrt(n), is far smaller: 0.21 × IQR at n = 20); the floor of 10 % is the
# spread between quiet runs of one model on two machines, below which no two files are told apart.
AGREE_K = 3.0
AGREE_FLOOR = 0.10


@dataclass(frozen=True)
class Candidate:
    """One file's step time at one (GPU, precision, stack, micro-batch), as pooling judges it."""

    file_id: str  # ResultFile.content_id: what a user names to use a set-aside point anyway
    label: str  # the file's name and date (ResultFile.label)
    created_utc: str
    median_s: float
    spread: float = 0.0  # IQR / median of its per-step times; 0 when the file has none
    plausible_s: tuple[float, float] = (0.0, math.inf)  # physics_bounds.plausible_micro_s
    estimate_s: float | None = None  # physics_bounds.typical_micro_s
    partial: bool = False


@dataclass(frozen=True)
class Verdict:
    """Which candidates (by index) are pooled, and one note per candidate set aside."""

    used: tuple[int, ...]
    set_aside: tuple[tuple[int, Note], ...] = ()


def tolerance(a: Candidate, b: Candidate) -> float:
    """The largest |ln ratio| at which `a` and `b` agree (AGREE_K, AGREE_FLOOR)."""
    return max(AGREE_K * max(a.spread, b.spread), AGREE_FLOOR)


def agree(a: Candidate, b: Candidate) -> bool:
    return abs(math.log(a.median_s / b.median_s)) <= tolerance(a, b)


def plausible(c: Candidate) -> bool:
    low, high = c.plausible_s
    return low <= c.median_s <= high


def _distance(c: Candidate) -> float:
    """How far a candidate lies from the physics estimate, in |ln ratio| (0 without an estimate)."""
    return abs(math.log(c.median_s / c.estimate_s)) if c.estimate_s else 0.0


def pool(cands: Sequence[Candidate], *, trusted: frozenset[str] = frozenset(), where: Mapping[str, object]) -> Verdict:
    """The pooled candidates and the set-aside ones with their notes; `where` (gpu, precision, batch) goes into
    every note. A candidate whose file id is in `trusted` is used whatever it says (a user's choice, shown where
    it was set aside); the others that disagree with it are set aside."""
    if all(plausible(c) for c in cands) and all(agree(cands[0], c) for c in cands[1:]) \
            and all(agree(a, b) for i, a in enumerate(cands[1:], 1) for b in cands[i + 1:]):
        return Verdict(tuple(range(len(cands))))  # the common case (one file, or files that agree), at once
    sure = [i for i, c in enumerate(cands) if c.file_id in trusted]
    voters = [i for i, c in enumerate(cands) if i in sure or plausible(c)]
    notes: dict[int, Note] = {}
    used: list[int] = []
    if voters:
        anchor, reason = _anchor(cands, voters, sure)
        used = [i for i in voters if i in sure or agree(cands[i], cands[anchor])]
        for i in voters:
            if i not in used:
                notes[i] = _disagrees(cands, i, used, reason, where)
    for i, c in enumerate(cands):
        if i not in voters:
            notes[i] = _implausible(c, [cands[j] for j in used], where)
    return Verdict(tuple(used), tuple(sorted(notes.items())))


def _anchor(cands: Sequence[Candidate], voters: Sequence[int], sure: Sequence[int]) -> tuple[int, str]:
    """The candidate the pooled ones agree with, and why it won: a trusted one ('trusted'); else the one most others
    agree with ('majority'); a tie (two files that disagree, say) goes to the one nearer the physics estimate
    ('physics'), and without an estimate to the older file, the one the plan used before ('older')."""
    if sure:
        return sure[0], "trusted"
    support = {i: sum(agree(cands[i], cands[j]) for j in voters) for i in voters}
    best = max(support.values())
    tied = [i for i in voters if support[i] == best]
    top = [i for i in tied if all(agree(cands[i], cands[j]) for j in tied)]
    if len(top) == len(tied) and best > 1:  # one group most files agree with
        return tied[0], "majority"
    if all(cands[i].estimate_s for i in tied):
        return min(tied, key=lambda i: (_distance(cands[i]), cands[i].created_utc)), "physics"
    return min(tied, key=lambda i: (cands[i].created_utc, cands[i].label)), "older"


def _nearest(c: Candidate, others: Sequence[Candidate]) -> Candidate | None:
    return min(others, key=lambda o: abs(math.log(c.median_s / o.median_s)), default=None)


def _disagrees(cands: Sequence[Candidate], i: int, used: Sequence[int], reason: str,
               where: Mapping[str, object]) -> Note:
    c = cands[i]
    sibling = _nearest(c, [cands[j] for j in used])
    assert sibling is not None  # the anchor is always used
    params = dict(where, file=c.label, median=c.median_s, sibling=sibling.label, sibling_median=sibling.median_s,
                  ratio=c.median_s / sibling.median_s, tolerance_pct=round(100 * tolerance(c, sibling)))
    if reason == "physics":
        return Note("point_set_aside_physics", **params, estimate=sibling.estimate_s)
    return Note(f"point_set_aside_{reason}", **params)


def _implausible(c: Candidate, used: Sequence[Candidate], where: Mapping[str, object]) -> Note:
    low, high = c.plausible_s
    params = dict(where, file=c.label, median=c.median_s, low=low, high=high)
    sibling = _nearest(c, used)
    if sibling is None:
        return Note("point_implausible", **params)
    return Note("point_implausible_sibling", **params, sibling=sibling.label, sibling_median=sibling.median_s,
                ratio=c.median_s / sibling.median_s)


# ---------------------------------------------------------------- from result files

def unique_files(results: Iterable[ResultFile]) -> tuple[list[ResultFile], list[tuple[ResultFile, ResultFile]]]:
    """The files with distinct content (the first of each, in the order given: the folders' order), and (copy, the
    file it repeats) per repeat: the same file in two folders (shipped and $TRAINPLAN_HOME, a shared folder) counts
    once."""
    first: dict[str, ResultFile] = {}
    repeats: list[tuple[ResultFile, ResultFile]] = []
    for rf in results:
        if not rf.sha256:  # built in memory, not read from a file: nothing to compare
            first[f"path:{rf.path}"] = rf
        elif rf.sha256 in first:
            repeats.append((rf, first[rf.sha256]))
        else:
            first[rf.sha256] = rf
    return list(first.values()), repeats


def measured_stack(m: Measurement) -> str:
    """The stack a bench-run row ran: its provenance's, else plain eager PyTorch (bench run's harness)."""
    return (m.provenance.stack if m.provenance is not None else None) or "pytorch_eager"


def work_factor(rf: ResultFile) -> float:
    """A file's forward + backward work over 3 forward units, recompute and frozen weights counted as it ran them
    (steptime.compute_factor): its micro-step's FLOPs are flops_per_sample × batch × this."""
    params = float(rf.model.get("params") or 0.0)
    trainable = float(rf.model.get("trainable_params") or params)
    return steptime.compute_factor(bool(rf.settings.get("activation_checkpointing", False)),
                                   min(1.0, trainable / params) if params else 1.0)


def candidate(rf: ResultFile, m: Measurement, *, gpu: GpuProfile | None, flops_per_sample: float | None,
              family: str, label: str | None = None, factor: float | None = None) -> Candidate:
    """A bench-run row as pooling judges it: its median and spread, and the physics bounds and estimate of its work
    (`flops_per_sample`: the file's, else the model's; × the file's work_factor). `label` and `factor`: the file's,
    when the caller has them (worked out once per file, not per row)."""
    assert m.step_time_s is not None
    st = m.step_time_s
    bounds: tuple[float, float] = (0.0, math.inf)
    estimate = None
    if gpu is not None and flops_per_sample:
        flops = steptime.flops_per_step(flops_per_sample, m.batch_size) * (factor or work_factor(rf))
        bounds = physics_bounds.plausible_micro_s(flops, gpu, m.precision)
        estimate = physics_bounds.typical_micro_s(flops, gpu, m.precision, family=family)
    return Candidate(rf.content_id, label or rf.label, rf.created_utc, st.median, st.iqr_over_median or 0.0, bounds,
                     estimate, rf.partial)


def timed_rows(rf: ResultFile) -> Iterable[Measurement]:
    """The rows of a file that give a one-GPU step time: measured, ok, timed, not an N-process DDP step."""
    if rf.device != "cuda" or not rf.gpu_profile_id or rf.settings.get("sync_method") == "ddp":
        return
    for m in rf.measurements:
        if m.ok and m.source == "measured" and m.step_time_s is not None:
            yield m


@dataclass(frozen=True)
class GroupVerdict:
    """One configuration's pooling verdict in a folder: what `python -m planner results check` prints."""

    gpu_id: str
    model: str
    precision: str
    stack: str
    batch_size: int
    candidates: tuple[Candidate, ...]
    verdict: Verdict


@dataclass(frozen=True)
class FolderVerdict:
    groups: tuple[GroupVerdict, ...]
    repeats: tuple[tuple[str, str], ...]  # (the copy's path, the path of the file it repeats)


def _config_key(rf: ResultFile) -> tuple[str, ...]:
    """What a file's times depend on besides GPU, precision, stack and batch (the files a plan reads together)."""
    s = rf.settings
    adapter = s.get("adapter")
    kind = adapter.get("kind") if isinstance(adapter, Mapping) else adapter
    return (canonical_id(rf.model_name)[0], str(rf.model.get("params")), str(rf.seq_len),
            str(bool(s.get("activation_checkpointing", False))), str(float(s.get("frozen_fraction") or 0.0)),
            str(kind), str(s.get("sharding") or "none"))


def folder_verdicts(results: Sequence[ResultFile], profiles: Mapping[str, GpuProfile], *,
                    trusted: frozenset[str] = frozenset()) -> FolderVerdict:
    """The pooling verdict of every configuration the files time (the plan's, for any scenario of that model)."""
    files, repeats = unique_files(results)
    groups: dict[tuple[str, ...], list[Candidate]] = defaultdict(list)
    for rf in sorted(files, key=lambda r: (r.created_utc, r.path)):
        config, label, gpu = (*_config_key(rf), str(rf.gpu_profile_id)), rf.label, profiles.get(str(rf.gpu_profile_id))
        family, flops = str(rf.model.get("family") or "custom"), _float(rf.model.get("flops_per_sample"))
        factor = work_factor(rf)
        for m in timed_rows(rf):
            key = (*config, m.precision, measured_stack(m), str(m.batch_size))
            groups[key].append(candidate(rf, m, gpu=gpu, family=family, flops_per_sample=flops, label=label,
                                         factor=factor))
    out = []
    for key, cands in sorted(groups.items(), key=lambda kv: (kv[0][7], kv[0][0], kv[0][8], kv[0][9],
                                                              int(kv[0][10]))):
        gpu_id, precision, stack, batch = key[7], key[8], key[9], int(key[10])
        verdict = pool(cands, trusted=trusted, where={"gpu": gpu_id, "precision": precision, "batch": batch})
        out.append(GroupVerdict(gpu_id, key[0], precision, stack, batch, tuple(cands), verdict))
    return FolderVerdict(tuple(out), tuple((a.path, b.path) for a, b in repeats))


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value else None
