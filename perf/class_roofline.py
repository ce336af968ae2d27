"""Where the analytic step time misses, by architecture and operator class, and whether a roofline by operator
class (issue 15) does better on the same held-out published runs.

For every one-GPU published point whose model and precision have a trace (results/traced/, `bench trace`
records forward + backward FLOPs, bytes moved and ops per class: matmul, attention, elementwise, embedding_loss),
the trace rows are fitted per class as a line in the batch (per-sample slope + intercept) and read at the point's
micro-batch. Each class then has a time at 100% of the GPU's dense peak and bandwidth; the class whose time is
largest names the point's bound (matmul/conv-bound, elementwise-bound...).

1. The analytic path's held-out errors (perf/calibration_report.py, leave-one-source-out) by architecture group
   and bound: where the residual lives.
2. The roofline by operator class, fitted and held out the same way (leave one source out):

       t = max(F_mm / (P e[g] f[p]), B_mm / (BW m)) + max(F_att / (P e_att f[p]), B_att / (BW m))
           + (B_elementwise + B_embedding_loss) / (BW m),   floored by ops x 5 us (the launch floor)

   e[g]: one matmul efficiency per architecture group with data when the points allow one parameter per ten of
   them, else one shared efficiency (bounded 0.2-0.87 as the shipped calibration);
   f[p]: tf32 and fp32 factors; m: one memory efficiency (bytes are logical tensor sizes, an upper bound on DRAM
   traffic, so m absorbs cache reuse and fusion); e_att = 0.5 fixed (FlashAttention-2 reaches 50-73% of the A100's
   peak forward+backward: Dao 2023, arXiv:2307.08691, abstract). Parameters: at most one per ten points.
   Compared with the shipped analytic path on exactly the same points.

    .venv/bin/python perf/class_roofline.py          # the two tables
    .venv/bin/python perf/class_roofline.py --json   # the metrics

Points without a trace of their model at their sequence length (BERT SQuAD at 384 tokens, typed shapes) are
counted and left out: tracing them (or deriving the split per layer for typed shapes) is what would cover them.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

import calibration_report as report  # noqa: E402

from planner.engine import steptime  # noqa: E402
from planner.engine.calibration import EFFICIENCY_BOUNDS, PRECISION_FACTOR_BOUNDS, _bounded, _nelder_mead  # noqa: E402
from planner.engine.plan import roofline_terms  # noqa: E402
from planner.inputs.folders import Inputs  # noqa: E402
from planner.inputs.resultfile import OP_CLASSES, ResultFile, percentile  # noqa: E402

ATTENTION_EFFICIENCY = 0.5  # Dao 2023 (FlashAttention-2): 50-73% of A100 peak; the low end for a fixed prior
MEMORY_EFFICIENCY_BOUNDS = (0.05, 1.0)


@dataclass(frozen=True)
class ClassPoint:
    point: report.Point
    group: str
    precision: str
    mm_s: float  # matmul FLOPs at 100% of dense peak
    att_s: float
    mm_bytes_s: float  # bytes at 100% of bandwidth
    att_bytes_s: float
    other_bytes_s: float  # elementwise + embedding/loss
    launch_s: float
    target_s: float  # the published forward+backward micro-step (optimizer taken out)

    @property
    def bound(self) -> str:
        times = {"matmul": self.mm_s, "attention": self.att_s, "elementwise": self.other_bytes_s}
        return max(times, key=lambda k: times[k])


def _class_lines(results: Sequence[ResultFile]) -> dict[tuple[str, str], dict[str, tuple[float, float]]]:
    """(model, precision) -> class field -> (per-sample slope, intercept), least squares over the traced batches."""
    rows: dict[tuple[str, str], list] = {}
    for rf in results:
        if not rf.is_traced:
            continue
        for m in rf.measurements:
            if m.ok and m.op_classes:
                rows.setdefault((rf.model_name, m.precision), []).append((m.batch_size, m.op_classes))
    out = {}
    for key, pts in rows.items():
        if len({b for b, _ in pts}) < 2:
            continue
        fields = {}
        for c in OP_CLASSES:
            for f in ("flops", "bytes", "ops"):
                xs = [float(b) for b, _ in pts]
                ys = [float(oc.get(c, {}).get(f, 0.0)) for _, oc in pts]
                mx, my = statistics.fmean(xs), statistics.fmean(ys)
                slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
                fields[f"{c}.{f}"] = (slope, my - slope * mx)
        out[key] = fields
    return out


def class_points(points: Sequence[report.Point], inputs: Inputs) -> tuple[list[tuple[int, ClassPoint]], int]:
    lines = _class_lines(inputs.results)
    out, missing = [], 0
    for i, p in enumerate(points):
        traced_seq = (report.load_catalog().get(p.model) or {}).get("transformer", {}) or {}
        line = lines.get((p.model, p.precision))
        if line is None or (p.seq_len and traced_seq.get("seq_len") not in (None, p.seq_len)):
            missing += 1
            continue
        terms = roofline_terms(report.scenario_for(p), inputs, gpu_id=p.gpu, precision=p.precision,
                               micro_batch=p.micro_batch)
        if terms.peak_tflops <= 0:
            missing += 1
            continue

        def at(name: str, line: dict = line, b: int = p.micro_batch) -> float:
            slope, intercept = line[name]
            return max(0.0, slope * b + intercept)

        peak, bw = terms.peak_tflops * 1e12, terms.bandwidth_gb_per_s * 1e9
        ops = sum(at(f"{c}.ops") for c in OP_CLASSES)
        target = p.published_s - terms.optimizer_s / max(1, p.global_batch // p.micro_batch)
        if target <= 0:
            missing += 1
            continue
        out.append((i, ClassPoint(
            p, terms.group, p.precision, at("matmul.flops") / peak, at("attention.flops") / peak,
            at("matmul.bytes") / bw, at("attention.bytes") / bw,
            (at("elementwise.bytes") + at("embedding_loss.bytes")) / bw, steptime.launch_s(ops), target)))
    return out, missing


@dataclass(frozen=True)
class ClassFit:
    efficiency: dict[str, float]
    factor: dict[str, float]
    memory: float

    def predict(self, c: ClassPoint, prior: float) -> float:
        e = self.efficiency.get(c.group, prior) * self.factor.get(c.precision, 1.0)
        m = self.memory
        device = (max(c.mm_s / e, c.mm_bytes_s / m)
                  + max(c.att_s / (ATTENTION_EFFICIENCY * self.factor.get(c.precision, 1.0)), c.att_bytes_s / m)
                  + c.other_bytes_s / m)
        return max(device, c.launch_s)


def fit(samples: Sequence[ClassPoint]) -> ClassFit:
    # one matmul efficiency per architecture group only when the points allow one parameter per ten of them;
    # else one shared efficiency (the traced points alone cover six groups with 41 points: 4 parameters)
    per_group = sorted({s.group for s in samples})
    groups = per_group if (len(per_group) + 3) * 10 <= len(samples) else ["*"]
    precisions = [p for p in ("tf32", "fp32") if any(s.precision == p for s in samples)]

    def unpack(x: list[float]) -> ClassFit:
        eff = ({g: _bounded(x[i], *EFFICIENCY_BOUNDS) for i, g in enumerate(groups)} if groups != ["*"] else
               {g: _bounded(x[0], *EFFICIENCY_BOUNDS) for g in per_group})
        fac = {p: _bounded(x[len(groups) + j], *PRECISION_FACTOR_BOUNDS) for j, p in enumerate(precisions)}
        return ClassFit(eff, fac, _bounded(x[-1], *MEMORY_EFFICIENCY_BOUNDS))

    def loss(x: list[float]) -> float:
        f = unpack(x)
        return sum(math.log(f.predict(s, 0.5) / s.target_s) ** 2 for s in samples)

    return unpack(_nelder_mead(loss, [0.0] * (len(groups) + len(precisions) + 1), iterations=4000))


def n_params(samples: Sequence[ClassPoint]) -> int:
    groups = len({s.group for s in samples})
    return groups + 3 if (groups + 3) * 10 <= len(samples) else 4


def held_out(cps: Sequence[ClassPoint]) -> list[float]:
    """Leave one source out: refit without the source, predict its points (prior: the median group efficiency)."""
    errors = []
    for source in sorted({c.point.source for c in cps}):
        kept = [c for c in cps if c.point.source != source]
        f = fit(kept)
        prior = statistics.median(f.efficiency.values())
        errors += [f.predict(c, prior) / c.target_s - 1.0 for c in cps if c.point.source == source]
    return errors


def _stats(errors: Sequence[float]) -> dict[str, float]:
    if not errors:
        return {"n": 0}
    a = [abs(e) for e in errors]
    return {"n": len(errors), "median_abs": round(statistics.median(a), 4), "p90_abs": round(percentile(a, 90), 4),
            "mean_signed": round(statistics.fmean(errors), 4)}


def compute() -> dict:
    results, problems = report.load_results()
    if problems:
        raise SystemExit("\n".join(problems))
    inputs = report.corpus_inputs()
    points, preds = report.run(results, inputs)
    cps, missing = class_points(points, inputs)
    analytic = {i: preds["analytic"][i].error(points[i].published_s) for i, _ in cps}
    by_cell: dict[tuple[str, str], list[float]] = {}
    for i, c in cps:
        by_cell.setdefault((c.group, c.bound), []).append(analytic[i])
    order = [c for _, c in cps]
    class_errors = dict(zip([id(c) for c in order], held_out(order), strict=False))
    errs = [class_errors[id(c)] for c in order]
    return {
        "n_points": len(points), "n_traced": len(cps), "n_untraced": missing,
        "analytic_same_points": _stats(list(analytic.values())),
        "class_roofline_heldout": _stats(errs),
        "by_architecture_and_bound": {f"{g} / {b}": _stats(v) for (g, b), v in sorted(by_cell.items())},
        "class_roofline_by_architecture": {
            g: _stats([class_errors[id(c)] for c in order if c.group == g]) for g in sorted({c.group for c in order})},
        "n_params": n_params(order),
        "full_fit": _fit_dict(fit(order)),
    }


def _fit_dict(f: ClassFit) -> dict:
    return {"matmul_efficiency": {k: round(v, 4) for k, v in f.efficiency.items()},
            "precision_factor": {k: round(v, 4) for k, v in f.factor.items()}, "memory_efficiency": round(f.memory, 4)}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


def lines(m: dict) -> list[str]:
    def row(name: str, s: dict) -> str:
        if not s.get("n"):
            return f"| {name} | 0 | — | — | — |"
        return (f"| {name} | {s['n']} | {100 * s['median_abs']:.1f}% | {100 * s['p90_abs']:.1f}% | "
                f"{_pct(s['mean_signed'])} |")

    out = [f"{m['n_traced']} of {m['n_points']} published points have a trace of their model at their precision "
           f"({m['n_untraced']} without: typed shapes or another sequence length).", "",
           "| held out (leave one source out) | n | median abs | p90 abs | mean signed |", "|---|---|---|---|---|",
           row("analytic path (shipped)", m["analytic_same_points"]),
           row(f"roofline by operator class ({m['n_params']} parameters)", m["class_roofline_heldout"]), "",
           "| analytic residuals by architecture / bound | n | median abs | p90 abs | mean signed |",
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
