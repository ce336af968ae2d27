"""Where the analytic step time misses, by architecture and operator class, and whether a roofline by operator
class (issue 15) does better on the same held-out published runs.

For every one-GPU published point whose model has a trace at its precision and sequence length, or whose typed
transformer shape has a traced twin (results/traced/: `bench trace` records forward + backward FLOPs, bytes moved
and ops per class: matmul, attention, elementwise, embedding_loss), the planner reads the per-class split at the
point's micro-batch (planner/engine/measurements.py OpClassLine, plan.roofline_terms): each class's time at 100% of
the GPU's dense peak and bandwidth; the class whose time is largest names the point's bound.

1. The analytic path's held-out errors (calibration/calibration_report.py, leave-one-source-out) by architecture group
   and bound: where the residual lives.
2. The roofline by operator class, fitted and held out the same way (leave one source out):

       t = max(F_mm / (P e[g] f[p]), B_mm / (BW m)) + max(F_att / (P e_att f[p]), B_att / (BW m))
           + (B_elementwise + B_embedding_loss) / (BW m),   floored by ops x 5 us (the launch floor)

   e[g]: one matmul efficiency per architecture group with data when the points allow one parameter per ten of
   them, else one shared efficiency (bounded 0.2-0.87 as the shipped calibration) — planner/engine/calibration.py
   ClassRoofline, class_fwd_bwd_s, fit_class;
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
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (python calibration/class_roofline.py) as well as a module

from calibration import calibration_report as report  # noqa: E402
from planner.engine.calibration import Sample, class_predict, fit_class, fit_samples  # noqa: E402
from planner.inputs.resultfile import percentile  # noqa: E402


def bound(s: Sample) -> str:
    c = s.classes
    assert c is not None
    times = {"matmul": max(c.matmul_s, c.matmul_bytes_s), "attention": max(c.attention_s, c.attention_bytes_s),
             "elementwise": c.other_bytes_s}
    return max(times, key=lambda k: times[k])


def held_out(samples: Sequence[Sample], *, by_class: bool) -> list[float]:
    """Leave one source out: refit without the source, predict its points (in input order), by the class roofline
    or by the two-term formula (planner/engine/calibration.py fit_samples), fitted on exactly the same points."""
    errors: dict[int, float] = {}
    for source in sorted({s.source for s in samples}):
        kept = [s for s in samples if s.source != source]
        predict: Callable[[Sample], float]
        if by_class:
            cr = fit_class(kept)
            predict = partial(class_predict, cr)
        else:
            fit = fit_samples(kept)
            predict = fit.predict
        for i, s in enumerate(samples):
            if s.source == source:
                errors[i] = predict(s) / s.target_s - 1.0
    return [errors[i] for i in range(len(samples))]


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
    rows = [(i, s) for i, s in ((i, report.sample_of(p, inputs)) for i, p in enumerate(points))
            if s is not None and s.classes is not None]
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
