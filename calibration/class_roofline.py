"""Where the analytic step time misses, by architecture and operator class, and whether a roofline by operator
class (issue 15) does better on the same held-out published runs.

For every one-GPU published point whose model has a trace at its precision and sequence length, or whose typed
transformer shape has a traced twin (results/traced/: `bench trace` records forward + backward FLOPs, bytes moved
and ops per class: matmul, attention, elementwise, embedding_loss), the planner reads the per-class split at the
point's micro-batch (planner/engine/measurements.py OpClassLine, class_terms_of below): each class's time at 100% of
the GPU's dense peak and bandwidth; the class whose time is largest names the point's bound.

1. The analytic path's held-out errors (calibration/calibration_report.py, leave-one-source-out) by architecture group
   and bound: where the residual lives.
2. The roofline by operator class, fitted and held out the same way (leave one source out):

       t = max(F_mm / (P e[g] f[p]), B_mm / (BW m)) + max(F_att / (P e_att f[p]), B_att / (BW m))
           + (B_elementwise + B_embedding_loss) / (BW m),   floored by ops x 5 us (the launch floor)

   e[g]: one matmul efficiency per architecture group with data when the points allow one parameter per ten of
   them, else one shared efficiency (bounded 0.2-0.87 as the shipped calibration) — ClassRoofline,
   class_fwd_bwd_s, fit_class below;
   f[p]: tf32 and fp32 factors; m: one memory efficiency (bytes are logical tensor sizes, an upper bound on DRAM
   traffic, so m absorbs cache reuse and fusion); e_att = 0.5 fixed (FlashAttention-2 reaches 50-73% of the A100's
   peak forward+backward: Dao 2023, arXiv:2307.08691, abstract). Parameters: at most one per ten points.
   Compared with the shipped analytic path on exactly the same points.

    .venv/bin/python calibration/class_roofline.py          # the two tables
    .venv/bin/python calibration/class_roofline.py --json   # the metrics

Points without a split (a model traced at no matching sequence length) are counted and left out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (python calibration/class_roofline.py) as well as a module

from calibration import calibration_report as report  # noqa: E402
from calibration import op_classes  # noqa: E402
from planner.engine import steptime  # noqa: E402
from planner.engine.calibration import (  # noqa: E402
    EFFICIENCY_BOUNDS,
    FACTOR_PRECISIONS,
    PRECISION_FACTOR_BOUNDS,
    Sample,
    bounded,
    fit_samples,
    launch_bound_s,
    nelder_mead,
    prior_efficiency,
)
from planner.engine.context import model_facts, trainable_fraction  # noqa: E402
from planner.engine.estimates import ResolvedModel  # noqa: E402
from planner.engine.measurements import OpClassLine, shape_twin_op_classes  # noqa: E402
from planner.engine.micro import MicroContext  # noqa: E402
from planner.engine.physics_bounds import transfer_peak  # noqa: E402
from planner.inputs.folders import Inputs  # noqa: E402
from planner.inputs.profiles import GpuProfile  # noqa: E402
from planner.inputs.resultfile import percentile  # noqa: E402
from planner.inputs.scenario import Scenario, TrainingSetup  # noqa: E402

# ---------------------------------------------------------------- the model

@dataclass(frozen=True)
class ClassTerms:
    """One micro-step's forward + backward by operator class, in seconds at 100% of the dense peak (FLOPs) or of
    the memory bandwidth (bytes): matmul/conv, fused attention, and the memory-bound rest (elementwise, norms,
    softmax, dropout, casts, embedding and loss). From `bench trace`'s op_classes (planner/engine/measurements.py
    OpClassLine) read at the micro-batch."""

    matmul_s: float
    attention_s: float
    matmul_bytes_s: float
    attention_bytes_s: float
    other_bytes_s: float


@dataclass(frozen=True)
class ClassSample:
    """A published point as the two-term fit sees it (Sample) and its per-class split."""

    sample: Sample
    classes: ClassTerms

    @property
    def source(self) -> str:
        return self.sample.source

    @property
    def group(self) -> str:
        return self.sample.group

    @property
    def precision(self) -> str:
        return self.sample.precision

    @property
    def target_s(self) -> float:
        return self.sample.target_s


# Fused attention's efficiency, fixed (not fitted): FlashAttention-2 reaches 50-73% of the A100's peak in forward +
# backward (Dao 2023, arXiv:2307.08691, abstract); the low end.
ATTENTION_EFFICIENCY = 0.5
MEMORY_EFFICIENCY_BOUNDS = (0.05, 1.0)  # traced bytes are logical sizes: fusion and caches move fewer
MIN_POINTS_PER_PARAMETER = 10


@dataclass(frozen=True)
class ClassRoofline:
    """The roofline by operator class (class_fwd_bwd_s), for models whose trace gives the per-class split:

        t = max(F_mm / (P e f), B_mm / (BW m)) + max(F_att / (P e_att f), B_att / (BW m)) + B_other / (BW m)

    e: matmul/conv efficiency (one per architecture group when the points allow ten per parameter, else one shared
    value under the key "*"); f: tf32/fp32 factor; m: memory efficiency on the traced (logical) bytes; e_att: fused
    attention's efficiency, fixed from a cited benchmark, not fitted. Measured against the two-term formula by
    this script; plans do not use it (README: "the roofline by class, tried held out" says why)."""

    matmul_efficiency: Mapping[str, float]
    precision_factor: Mapping[str, float]
    memory_efficiency: float
    attention_efficiency: float
    n_points: int
    residual_p10: float  # held-out errors of this model (one source out and one architecture out, pooled)
    residual_p90: float

    def efficiency(self, group: str) -> tuple[float, bool]:
        """(matmul efficiency, whether the group had points); a group without points takes the shared value or
        the fitted groups' 25th percentile."""
        eff = self.matmul_efficiency
        if group in eff:
            return eff[group], True
        if "*" in eff:
            return eff["*"], False
        return prior_efficiency(eff.values()), False

    @property
    def n_params(self) -> int:
        return len(self.matmul_efficiency) + len(self.precision_factor) + 1


def class_fwd_bwd_s(cr: ClassRoofline, group: str, precision: str, terms: ClassTerms,
                    launch_s: float = 0.0) -> tuple[float, float, bool]:
    """(seconds, matmul efficiency used, whether the group had points) of one micro-step's forward + backward:
    Σ over classes of max(compute, memory), floored by the host's kernel launches (launch_bound_s)."""
    e, known = cr.efficiency(group)
    f = cr.precision_factor.get(precision, 1.0)
    m = cr.memory_efficiency
    device = (max(terms.matmul_s / (e * f), terms.matmul_bytes_s / m)
              + max(terms.attention_s / (cr.attention_efficiency * f), terms.attention_bytes_s / m)
              + terms.other_bytes_s / m)
    return launch_bound_s(device, launch_s), e, known


def fit_class_roofline(samples: Sequence[ClassSample]) -> ClassRoofline:
    """The class roofline's parameters minimising Σ log²(predicted / published) over the samples that have a class
    split: one matmul efficiency per architecture group when there are at least ten points per parameter, else one
    shared efficiency; tf32/fp32 factors; one memory efficiency. Residuals: leave one source out, and one
    architecture group out, pooled."""
    with_classes = list(samples)
    if not with_classes:
        raise ValueError("no samples with a class split")
    fit = fit_class(with_classes)
    held: list[float] = []
    # Held out both ways a plan meets: a source the fit never saw (another software stack) and an architecture it
    # never saw (the prior); one source out alone left the range too narrow for the other sources' runs.
    keys: tuple[Callable[[ClassSample], str], ...] = (_source_of, _group_of)
    for key in keys:
        for value in sorted({key(s) for s in with_classes}):
            kept = [s for s in with_classes if key(s) != value]
            if not kept:
                continue
            other = fit_class(kept)
            held.extend(class_predict(other, s) / s.target_s - 1.0 for s in with_classes if key(s) == value)
    return dataclasses.replace(fit, residual_p10=percentile(held, 10) if held else 0.0,
                               residual_p90=percentile(held, 90) if held else 0.0)


def _source_of(s: ClassSample) -> str:
    return s.source


def _group_of(s: ClassSample) -> str:
    return s.group


def class_predict(cr: ClassRoofline, s: ClassSample) -> float:
    """The class roofline's forward + backward seconds for a sample with a class split."""
    return class_fwd_bwd_s(cr, s.group, s.precision, s.classes, steptime.launch_s(s.sample.kernels))[0]


def fit_class(samples: Sequence[ClassSample]) -> ClassRoofline:
    """The parameters alone (no held-out residuals): fit_class_roofline adds them."""
    groups = sorted({s.group for s in samples})
    factors = [p for p in FACTOR_PRECISIONS if any(s.precision == p for s in samples)]
    per_group = (len(groups) + len(factors) + 1) * MIN_POINTS_PER_PARAMETER <= len(samples)
    keys = groups if per_group else ["*"]

    def unpack(x: Sequence[float]) -> ClassRoofline:
        return ClassRoofline(
            MappingProxyType({g: bounded(x[i], *EFFICIENCY_BOUNDS) for i, g in enumerate(keys)}),
            MappingProxyType({p: bounded(x[len(keys) + i], *PRECISION_FACTOR_BOUNDS) for i, p in enumerate(factors)}),
            bounded(x[-1], *MEMORY_EFFICIENCY_BOUNDS), ATTENTION_EFFICIENCY, len(samples), 0.0, 0.0)

    def loss(x: list[float]) -> float:
        cr = unpack(x)
        return sum(math.log(class_predict(cr, s) / s.target_s) ** 2 for s in samples)

    best = nelder_mead(loss, [0.0] * (len(keys) + len(factors) + 1))
    return unpack(nelder_mead(loss, best, iterations=1500))



# ---------------------------------------------------------------- the split of a published point

def class_terms_of(p: report.Point, inputs: Inputs) -> ClassTerms | None:
    """A published point's micro-step by operator class (None without a split)."""
    return class_terms_for(report.scenario_for(p), inputs, gpu_id=p.gpu, precision=p.precision,
                           micro_batch=p.micro_batch)


def class_terms_for(scenario: Scenario, inputs: Inputs, *, gpu_id: str, precision: str,
                    micro_batch: int) -> ClassTerms | None:
    """One configuration's micro-step by operator class, its model read as a plan reads it (None without a
    split)."""
    t = scenario.training
    ctx = MicroContext(inputs, model_facts(inputs, scenario.model, t, "class_roofline"), t)
    return _class_terms(ctx, inputs.profiles[gpu_id], precision, micro_batch)


def _class_terms(ctx: MicroContext, gpu: GpuProfile, precision: str, micro_batch: int) -> ClassTerms | None:
    """The micro-step by operator class at 100% of this GPU's dense peak and bandwidth (None without a split): the
    model's own trace, else a traced model of the same transformer shape (measurements.shape_twin_op_classes)."""
    # The first split that counts the scenario's FLOPs: the model's own trace, a traced twin, the shape per layer.
    splits: tuple[Callable[[], dict[str, OpClassLine]], ...] = (
        lambda: dict(ctx.idx.op_classes),
        lambda: shape_twin_op_classes(ctx.inputs.results, ctx.model, ctx.training),
        lambda: _analytic_op_classes(ctx))
    classes: dict[str, OpClassLine] = {}
    for split in splits:
        classes = _same_step(split(), ctx.model, ctx.training)
        if classes:
            break
    line = classes.get(precision)
    peak = transfer_peak(gpu, precision)
    if line is None or not peak:
        return None
    flops_per_s, bytes_per_s = peak * 1e12, gpu.memory_bandwidth_gb_per_s * 1e9
    return ClassTerms(
        matmul_s=line.at("matmul.flops", micro_batch) / flops_per_s,
        attention_s=line.at("attention.flops", micro_batch) / flops_per_s,
        matmul_bytes_s=line.at("matmul.bytes", micro_batch) / bytes_per_s,
        attention_bytes_s=line.at("attention.bytes", micro_batch) / bytes_per_s,
        other_bytes_s=(line.at("elementwise.bytes", micro_batch) + line.at("embedding_loss.bytes", micro_batch))
        / bytes_per_s)


# A trace's split is the scenario's step only when it counts the same FLOPs (a sequence classifier traced as the
# zoo's masked-LM model carries a vocabulary projection the scenario does not run, for one).
SAME_STEP_FLOPS_TOLERANCE = 0.05


def _analytic_op_classes(ctx: MicroContext) -> dict[str, OpClassLine]:
    """A typed transformer shape with neither a trace nor a traced twin: its split per layer (op_classes.py), for
    plain training only, as the twin (recompute, frozen layers and adapters change the op mix)."""
    shape, t = ctx.model.transformer, ctx.training
    if shape is None or t.activation_checkpointing or t.frozen_fraction or t.adapter:
        return {}
    out = {}
    for precision in t.precisions:
        line = op_classes.analytic_op_classes(shape, family=ctx.model.family, precision=precision,
                                              attention=ctx.model.attention, parameters=ctx.model.params)
        if line is not None:
            out[precision] = line
    return out


def _same_step(classes: dict[str, OpClassLine], model: ResolvedModel, training: TrainingSetup) -> dict[str, OpClassLine]:
    """The per-class splits whose traced FLOPs per sample (matmul + attention) match the model's within 5%."""
    want = (model.flops_per_sample or 0.0) * steptime.compute_factor(
        training.activation_checkpointing, trainable_fraction(model, training))
    if want <= 0:
        return {}
    out = {}
    for precision, line in classes.items():
        traced = line.fields["matmul.flops"][0] + line.fields["attention.flops"][0]  # per-sample slopes
        if abs(traced / want - 1.0) <= SAME_STEP_FLOPS_TOLERANCE:
            out[precision] = line
    return out




# ---------------------------------------------------------------- the measurement



def bound(s: ClassSample) -> str:
    c = s.classes
    times = {"matmul": max(c.matmul_s, c.matmul_bytes_s), "attention": max(c.attention_s, c.attention_bytes_s),
             "elementwise": c.other_bytes_s}
    return max(times, key=lambda k: times[k])


def held_out(samples: Sequence[ClassSample], *, by_class: bool) -> list[float]:
    """Leave one source out: refit without the source, predict its points (in input order), by the class roofline
    or by the two-term formula (planner/engine/calibration.py fit_samples), fitted on exactly the same points."""
    errors: dict[int, float] = {}
    for source in sorted({s.source for s in samples}):
        kept = [s for s in samples if s.source != source]
        predict: Callable[[ClassSample], float]
        if by_class:
            cr = fit_class(kept)
            predict = partial(class_predict, cr)
        else:
            fit = fit_samples([s.sample for s in kept])
            predict = partial(_two_term, fit.predict)
        for i, s in enumerate(samples):
            if s.source == source:
                errors[i] = predict(s) / s.target_s - 1.0
    return [errors[i] for i in range(len(samples))]


def _two_term(predict: Callable[[Sample], float], s: ClassSample) -> float:
    return predict(s.sample)


def _stats(errors: Sequence[float]) -> dict[str, float]:
    if not errors:
        return {"n": 0}
    a = [abs(e) for e in errors]
    return {"n": len(errors), "median_abs": round(statistics.median(a), 4), "p90_abs": round(percentile(a, 90), 4),
            "mean_signed": round(statistics.fmean(errors), 4)}


def _family(model: str) -> str:
    return "CNN / ViT" if model.startswith(("resnet", "vit")) else "BERT"


def compute() -> dict:
    results, problems = report.load_results()
    if problems:
        raise SystemExit("\n".join(problems))
    inputs = report.corpus_inputs()
    points = report.load_points(results, inputs)
    rows = []
    for i, p in enumerate(points):
        sample, classes = report.sample_of(p, inputs), class_terms_of(p, inputs)
        if sample is not None and classes is not None:
            rows.append((i, ClassSample(sample, classes)))
    samples = [s for _, s in rows]
    analytic = held_out(samples, by_class=False)
    by_class = held_out(samples, by_class=True)
    cells: dict[str, list[float]] = {}
    for (_i, s), e in zip(rows, analytic, strict=True):
        cells.setdefault(f"{s.group} / {bound(s)}", []).append(e)
    families = sorted({_family(points[i].model) for i, _ in rows})
    full = fit_class(samples)
    return {
        "n_points": len(points), "n_split": len(rows), "n_unsplit": len(points) - len(rows),
        "analytic_same_points": _stats(analytic), "class_roofline_heldout": _stats(by_class),
        "by_family": {f: {"analytic": _stats([e for (i, _), e in zip(rows, analytic, strict=True)
                                              if _family(points[i].model) == f]),
                          "class_roofline": _stats([e for (i, _), e in zip(rows, by_class, strict=True)
                                                    if _family(points[i].model) == f])} for f in families},
        "by_architecture_and_bound": {k: _stats(v) for k, v in sorted(cells.items())},
        "class_roofline_by_architecture": {g: _stats([e for s, e in zip(samples, by_class, strict=True)
                                                      if s.group == g]) for g in sorted({s.group for s in samples})},
        "n_params": full.n_params,
        "full_fit": {"matmul_efficiency": {k: round(v, 4) for k, v in sorted(full.matmul_efficiency.items())},
                     "precision_factor": {k: round(v, 4) for k, v in sorted(full.precision_factor.items())},
                     "memory_efficiency": round(full.memory_efficiency, 4)},
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def lines(m: dict) -> list[str]:
    def row(name: str, s: dict) -> str:
        if not s.get("n"):
            return f"| {name} | 0 | — | — | — |"
        return (f"| {name} | {s['n']} | {100 * s['median_abs']:.1f}% | {100 * s['p90_abs']:.1f}% | "
                f"{_pct(s['mean_signed'])} |")

    out = [f"{m['n_split']} of {m['n_points']} published points have a per-class split ({m['n_unsplit']} without).",
           "", "| held out (leave one source out) | n | median abs | p90 abs | mean signed |", "|---|---|---|---|---|",
           row("two-term formula (F/(P·e·f) + traffic·A/BW)", m["analytic_same_points"]),
           row(f"roofline by operator class ({m['n_params']} parameters)", m["class_roofline_heldout"])]
    for f, v in m["by_family"].items():
        out += [row(f"{f}: two-term", v["analytic"]), row(f"{f}: by class", v["class_roofline"])]
    out += ["", "| two-term formula's residuals by architecture / bound | n | median abs | p90 abs | mean signed |",
            "|---|---|---|---|---|"]
    out += [row(k, v) for k, v in m["by_architecture_and_bound"].items()]
    out += ["", "| roofline by class, by architecture | n | median abs | p90 abs | mean signed |", "|---|---|---|---|---|"]
    out += [row(k, v) for k, v in m["class_roofline_by_architecture"].items()]
    f = m["full_fit"]
    out += ["", "Fitted on all of them: matmul efficiency " + ", ".join(
        f"{k} {v:.2f}" for k, v in f["matmul_efficiency"].items()) + "; precision factors " + ", ".join(
        f"{k} {v:.2f}" for k, v in f["precision_factor"].items()) + f"; memory efficiency {f['memory_efficiency']:.2f}"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    m = compute()
    print(json.dumps(m, indent=1) if args.json else "\n".join(lines(m)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
