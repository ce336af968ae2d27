"""How far the memory model is from published peak-memory measurements, like with like.

Every case of calibration/memory_cases.yaml names one verified corpus row (calibration/published/sources/) and sets every knob
from the published configuration. The planner's memory estimate is compared on the counter the source printed:

- max_memory_allocated → the estimate's allocated_peak (goal: within 5%);
- max_memory_reserved → reserved_peak (allocated + the allocator's fragmentation);
- device_used (nvidia-smi / NVML) → device_total (reserved + CUDA context + NCCL; goal: within 10%);
- an out-of-memory row → the verdict: it must not fit; a row that ran must fit (a published step time is a run
  that ran: its verdict only). An inferred out-of-memory row (`unit: oom_inferred`: a failure implied by the
  source's own batch-retry ladder, not printed; calibration/corpus.py) is compared like one and said so in the table.

A case with `estimate: plan` is estimated as a plan estimates it: `planner.engine.plan.build_plan` over the shipped
published figures and traces (results/published, results/traced), one option, its memory estimate, so a CNN gets
the activation line fitted on its trace; a published outcome of exactly that configuration must not decide it (the
model's own verdict is what is compared). The other cases call estimate_memory with the case's knobs.

A case may name `boundary`: the case of the same configuration that ran one step below it (a smaller batch, or
more GPUs); the report counts such fit/OOM boundaries and how many it predicts right on both sides.

error = predicted / published − 1. `half: fit` rows may set a free constant, `half: check` rows only check it; the
table reports both halves apart.

    .venv/bin/python calibration/memory_report.py           # the Markdown table (the README's)
    .venv/bin/python calibration/memory_report.py --json    # every case's numbers

Deterministic (no timing); tests/test_published_memory.py asserts each row and that the README table is this one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from calibration.corpus import OOM_INFERRED_UNIT, OOM_UNIT, Row, check_corpus  # noqa: E402
from planner.engine.estimates import BORDERLINE_FRACTION, MemoryEstimate  # noqa: E402
from planner.engine.memory import RESERVED_OVER_CHURNED, estimate_memory  # noqa: E402
from planner.engine.models import resolve_model  # noqa: E402
from planner.engine.option import OptionPlan  # noqa: E402
from planner.engine.plan import build_plan  # noqa: E402
from planner.inputs.folders import Inputs, load_inputs  # noqa: E402
from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles  # noqa: E402
from planner.inputs.scenario import parse_scenario  # noqa: E402
from planner.vocab import GIB, MEMORY_UNIT_BYTES  # noqa: E402

CASES = ROOT / "calibration" / "memory_cases.yaml"
CORPUS = ROOT / "calibration" / "published"
UNIT_BYTES = MEMORY_UNIT_BYTES  # planner.vocab owns the conversion
FIGURE_OF = {"max_memory_allocated": "allocated_peak", "max_memory_reserved": "reserved_peak",
             "device_used": "device_total"}
TOLERANCE = {"allocated_peak": 0.05, "reserved_peak": 0.10, "device_total": 0.10}
PLAN_RESULTS = (ROOT / "results" / "published", ROOT / "results" / "traced")  # what an `estimate: plan` case reads


@dataclass(frozen=True)
class Result:
    case: str
    half: str
    source: str  # slug:line
    figure: str  # allocated_peak | reserved_peak | device_total | verdict
    published_gib: float | None  # None for an out-of-memory row
    predicted_gib: float
    fits: bool
    ran: bool  # the published run ran (False: out of memory)
    estimate: MemoryEstimate
    inferred: bool = False  # an out-of-memory outcome inferred from a retry ladder (unit oom_inferred), not printed
    band: float = BORDERLINE_FRACTION  # the borderline band its verdict is read with (a LOSO pass refits it)

    @property
    def source_slug(self) -> str:
        return self.source.split(":", 1)[0]

    @property
    def verdict(self) -> str | None:
        return self.estimate.verdict_at(self.band)

    @property
    def error(self) -> float | None:
        return None if self.published_gib is None else self.predicted_gib / self.published_gib - 1


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    return list(yaml.safe_load(path.read_text(encoding="utf-8"))["cases"])


def find_row(rows: Sequence[Row], ref: dict[str, Any], gpu: str) -> Row:
    """The corpus row a case names: source, line and unit, on the case's GPU when the row names one (a source
    cites several files, so a line number alone can repeat: `excerpt` names the raw file then), at `batch` when a
    line holds several rows, of `stack` when one raw file holds one excerpt per stack (a table's columns)."""
    found = [r for r in rows if r.source_slug == ref["source"] and r.fields.get("line") == ref["line"]
             and r.unit == ref["unit"] and ("batch" not in ref or r.fields.get("batch_per_gpu") == ref["batch"])
             and r.gpu_profile_id in (None, gpu)
             and ("excerpt" not in ref or (r.excerpt is not None and r.excerpt.raw.endswith(ref["excerpt"])))
             and ("stack" not in ref or (r.excerpt is not None and r.excerpt.stack == ref["stack"]))]
    if len(found) != 1:
        raise SystemExit(f"{CASES}: row {ref}: {len(found)} corpus rows match (expected exactly one)")
    return found[0]


def plan_inputs() -> Inputs:
    """The shipped profiles, calibration, published figures and traces, and nothing else (no user data, no bench
    run left under results/): what an `estimate: plan` case is planned with."""
    return load_inputs(list(PLAN_RESULTS), include_user_data=False)


def _scenario(case: dict[str, Any], *, fixed_micro_batch: bool = False):
    training = {"global_batch": case["micro_batch"] * case.get("grad_accum", 1) * case.get("n_gpus", 1),
                **case["scenario"]["training"]}
    if fixed_micro_batch:
        training["micro_batch"] = case["micro_batch"]
    return parse_scenario({
        "schema": "trainplan.scenario/1", "name": case["id"], "model": case["scenario"]["model"],
        "training": training, "workload": {"dataset_samples": 1000, "epochs": 1},
        "hardware": {"gpus": [case["gpu"]], "gpu_counts": [case.get("n_gpus", 1)]}}, f"{CASES}:{case['id']}")


def plan_memory(case: dict[str, Any], inputs: Inputs) -> MemoryEstimate:
    """The memory estimate of the one option a plan makes of the case (its GPU, GPU count, precision and
    micro-batch): planner.engine.plan.build_plan, as the app and the CLI plan it."""
    for knob in ("context_gib", "cuda_generation"):
        if knob in case:
            raise SystemExit(f"{CASES}: {case['id']}: `{knob}` is not a plan's knob (estimate: plan)")
    plan = build_plan(_scenario(case, fixed_micro_batch=True), inputs, source=f"{CASES}:{case['id']}")
    if len(plan.options) != 1 or plan.options[0].memory is None:
        raise SystemExit(f"{CASES}: {case['id']}: the plan has {len(plan.options)} options (expected one with a "
                         "memory estimate)")
    est = plan.options[0].memory
    # A published outcome decides the plan's verdict (status rows included, issue 33); the report compares the
    # model's own, which the estimate keeps beside it.
    return replace(est, published_outcome=None, published_label=None, published_figure=None, published_meaning=None)


def predict(case: dict[str, Any], row: Row, profiles: dict, inputs: Inputs | None = None) -> Result:
    if case.get("estimate", "memory") == "plan":
        est = plan_memory(case, inputs if inputs is not None else plan_inputs())
    else:
        scenario = _scenario(case)
        model = resolve_model(scenario.model)
        option = OptionPlan(gpu=profiles[case["gpu"]], n_gpus=case.get("n_gpus", 1),
                            precision=scenario.training.precisions[0], micro_batch=case["micro_batch"],
                            grad_accum=case.get("grad_accum", 1))
        est = estimate_memory(model, scenario.training, option, context_gib=case.get("context_gib"),
                              cuda_generation=case.get("cuda_generation", "lazy"))
    ran = row.unit not in (OOM_UNIT, OOM_INFERRED_UNIT)
    meaning = row.excerpt.memory_meaning if row.excerpt is not None else None
    # A figure is compared on its counter; a run published without one (a step time) ran: its verdict only.
    figure = FIGURE_OF.get(meaning or "", "verdict") if ran and row.unit in UNIT_BYTES else "verdict"
    published = (float(row.value.replace(",", "")) * UNIT_BYTES[row.unit] / GIB
                 if ran and row.unit in UNIT_BYTES else None)
    predicted = getattr(est, figure if figure != "verdict" else "device_total") / GIB
    return Result(case=case["id"], half=case["half"], source=f"{row.source_slug}:L{row.fields.get('line')}",
                  figure=figure, published_gib=published, predicted_gib=predicted, fits=est.fits is True, ran=ran,
                  estimate=est, inferred=row.unit == OOM_INFERRED_UNIT)


def run() -> list[Result]:
    rows, problems = check_corpus(CORPUS)
    if problems:
        raise SystemExit("the corpus does not check: " + problems[0])
    profiles = load_profiles(DEFAULT_PROFILES_DIR)[0]
    cases = load_cases()
    inputs = plan_inputs() if any(c.get("estimate") == "plan" for c in cases) else None
    return [predict(case, find_row(rows, case["row"], case["gpu"]), profiles, inputs) for case in cases]


def boundaries(results: Sequence[Result], cases: Sequence[dict[str, Any]] | None = None) -> list[tuple[str, str, bool]]:
    """(ran case, out-of-memory case, both verdicts right) for every case that names its `boundary`: the same
    configuration one step below it that ran."""
    by_id = {r.case: r for r in results}
    out = []
    for case in cases if cases is not None else load_cases():
        if "boundary" not in case:
            continue
        oom, ran = by_id[case["id"]], by_id.get(case["boundary"])
        if ran is None or not ran.ran or oom.ran:
            raise SystemExit(f"{CASES}: {case['id']}: boundary {case['boundary']!r} must name a case that ran, "
                             "on an out-of-memory case")
        out.append((ran.case, oom.case, ran.fits and not oom.fits))
    return out


def implied_reserved_fraction(r: Result) -> float | None:
    """The fragmentation a reserved or device figure implies, per byte the allocator churns: (published reserved −
    predicted allocated) / predicted churned bytes (the device figure less the predicted context and NCCL first);
    None for an allocated figure or a verdict."""
    if r.published_gib is None or r.figure not in ("reserved_peak", "device_total") or r.estimate.churned <= 0:
        return None
    reserved = r.published_gib * GIB
    if r.figure == "device_total":
        reserved -= r.estimate.context + r.estimate.nccl
    return (reserved - r.estimate.allocated_peak) / r.estimate.churned


def fit_reserved_fraction(results: Sequence[Result]) -> tuple[float, list[str]]:
    """memory.RESERVED_OVER_CHURNED fitted on the `fit` half: the median implied fragmentation of its reserved and
    device rows (rounded to 0.01), and the cases it used."""
    used = [(r.case, f) for r in results if r.half == "fit" and (f := implied_reserved_fraction(r)) is not None]
    if not used:
        raise SystemExit(f"{CASES}: no fit-half row with a reserved or device figure to fit the fragmentation on")
    return round(statistics.median(f for _, f in used), 2), [c for c, _ in used]


def borderline_fraction(results: Sequence[Result]) -> float:
    """estimates.BORDERLINE_FRACTION from the held-out (`check`) half: the 90th percentile of its absolute errors
    (nearest rank, rounded to 0.01), capped at 0.10."""
    errs = sorted(abs(r.error) for r in results if r.half == "check" and r.error is not None)
    if not errs:
        raise SystemExit(f"{CASES}: no check-half row with a figure to size the borderline band on")
    p90 = errs[max(0, -(-9 * len(errs) // 10) - 1)]
    return min(0.10, round(p90, 2))


def verdict_right(r: Result) -> bool:
    """Whether the model's verdict is right: fits for a run that ran, does not fit for one that did not; a borderline
    verdict only when the published run's device total (the model's, less its error on the published figure) lies
    inside the band around the capacity, so a row with no figure never makes a borderline verdict right."""
    verdict = r.verdict
    if verdict == "borderline":
        if r.published_gib is None:
            return False
        published_total = r.estimate.total - (r.predicted_gib - r.published_gib) * GIB
        return abs(published_total - r.estimate.capacity) <= r.band * r.estimate.capacity
    return (verdict == "fits") == r.ran


def summary(results: Sequence[Result]) -> dict[str, Any]:
    fitted, used = fit_reserved_fraction(results)
    pairs = boundaries(results)
    out: dict[str, Any] = {"n_cases": len(results), "verdicts_right": sum(verdict_right(r) for r in results),
                           "borderline": sum(r.verdict == "borderline" for r in results),
                           "borderline_fraction_fit": borderline_fraction(results),
                           "boundaries": len(pairs), "boundaries_right": sum(ok for _, _, ok in pairs),
                           "reserved_over_churned_fit": fitted, "reserved_fit_cases": used}
    for figure in ("allocated_peak", "reserved_peak", "device_total"):
        for half in ("fit", "check", "all"):
            errs = [abs(r.error) for r in results if r.figure == figure and r.error is not None
                    and (half == "all" or r.half == half)]
            if errs:
                out[f"{figure}_{half}_median_abs"] = round(statistics.median(errs), 4)
                out[f"{figure}_{half}_max_abs"] = round(max(errs), 4)
                out[f"{figure}_{half}_n"] = len(errs)
    return out


def table_lines(results: Sequence[Result]) -> list[str]:
    lines = ["| case | half | published row | compared | published GiB | predicted GiB | error | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        pub = (f"{r.published_gib:.2f}" if r.published_gib is not None else "ran" if r.ran else
               "out of memory (inferred)" if r.inferred else "out of memory")
        err = f"{r.error * 100:+.1f}%" if r.error is not None else "—"
        verdict = {"fits": "fits", "borderline": "borderline", "does_not_fit": "does not fit"}.get(
            r.verdict or "", "unknown") + (" ✓" if verdict_right(r) else " ✗")
        lines.append(f"| {r.case} | {r.half} | {r.source} | {r.figure} | {pub} | {r.predicted_gib:.2f} | {err} | "
                     f"{verdict} |")
    return lines


def p90_abs(errors: Sequence[float]) -> float:
    """The 90th percentile of absolute errors, nearest rank (borderline_fraction's rule)."""
    errs = sorted(abs(e) for e in errors)
    return errs[max(0, -(-9 * len(errs) // 10) - 1)]


def with_constants(r: Result, *, reserved_over_churned: float, band: float) -> Result:
    """The case's estimate with other free constants: its fragmentation is `reserved_over_churned` × the bytes the
    allocator churns (exactly how planner/engine/memory.py charges RESERVED_OVER_CHURNED), its verdict read with
    `band`. The case's configuration is held (a plan's micro-batch is fixed), so nothing else moves."""
    est = replace(r.estimate, fragmentation=reserved_over_churned * r.estimate.churned)
    predicted = getattr(est, r.figure if r.figure != "verdict" else "device_total") / GIB
    return replace(r, estimate=est, predicted_gib=predicted, fits=est.fits is True, band=band)


@dataclass(frozen=True)
class HeldOut:
    """One leave-one-source-out fold: the constants refitted without `source`'s cases, and its cases predicted."""

    source: str
    reserved_over_churned: float
    band: float
    results: tuple[Result, ...]


def loso(results: Sequence[Result]) -> list[HeldOut]:
    """Leave one corpus source out: for each source, refit the model's free constants on every case of the other
    sources (both halves: the `fit` half's reserved rows all come from one source, so the halves cannot be kept) and
    predict the source's cases with them. Fragmentation (memory.RESERVED_OVER_CHURNED): the median implied by the
    other sources' reserved and device rows (fit_reserved_fraction's rule); the borderline band
    (estimates.BORDERLINE_FRACTION): the 90th percentile of the other sources' absolute errors under that
    fragmentation, rounded to 0.01 and capped at 0.10 (borderline_fraction's rule)."""
    folds = []
    for source in dict.fromkeys(r.source_slug for r in results):
        others = [r for r in results if r.source_slug != source]
        implied = [f for r in others if (f := implied_reserved_fraction(r)) is not None]
        fraction = round(statistics.median(implied), 2) if implied else RESERVED_OVER_CHURNED
        refitted = [with_constants(r, reserved_over_churned=fraction, band=0.0) for r in others]
        errs = [r.error for r in refitted if r.error is not None]
        band = min(0.10, round(p90_abs(errs), 2)) if errs else BORDERLINE_FRACTION
        folds.append(HeldOut(source, fraction, band, tuple(
            with_constants(r, reserved_over_churned=fraction, band=band) for r in results if r.source_slug == source)))
    return folds


def loso_results(folds: Sequence[HeldOut], order: Sequence[Result]) -> list[Result]:
    """Every fold's predictions, in the order of `order` (the in-sample results)."""
    by_case = {r.case: r for fold in folds for r in fold.results}
    return [by_case[r.case] for r in order]


def accuracy(results: Sequence[Result], pairs: Sequence[tuple[str, str, bool]]) -> dict[str, Any]:
    """The issue-33 figures of a set of cases: memory median and p90 absolute error over every published figure,
    verdicts right (verdict_right: a borderline verdict only inside its band), fit/OOM boundaries right."""
    errs = [abs(r.error) for r in results if r.error is not None]
    ids = {r.case for r in results}
    mine = [ok for ran, oom, ok in pairs if oom in ids or ran in ids]
    return {"cases": len(results), "figures": len(errs),
            "median_abs": round(statistics.median(errs), 4) if errs else None,
            "p90_abs": round(p90_abs(errs), 4) if errs else None,
            "verdicts_right": sum(verdict_right(r) for r in results),
            "boundaries": len(mine), "boundaries_right": sum(mine)}


# Issue 33's goal, on both the in-sample and the leave-one-source-out figures.
GOAL_MEDIAN_ABS = 0.05


def goal_shortfalls(figures: dict[str, Any]) -> list[str]:
    """What of issue 33's goal (memory median ≤ 5%, every verdict right, every boundary right) a set misses."""
    out = []
    if figures["median_abs"] is not None and figures["median_abs"] > GOAL_MEDIAN_ABS:
        out.append(f"median {figures['median_abs'] * 100:.1f}% > {GOAL_MEDIAN_ABS * 100:.0f}%")
    if figures["verdicts_right"] < figures["cases"]:
        out.append(f"{figures['cases'] - figures['verdicts_right']} verdicts wrong")
    if figures["boundaries_right"] < figures["boundaries"]:
        out.append(f"{figures['boundaries'] - figures['boundaries_right']} boundaries wrong")
    return out


def loso_table_lines(results: Sequence[Result], cases: Sequence[dict[str, Any]] | None = None) -> list[str]:
    """In-sample (the shipped constants) next to leave-one-source-out, per corpus source and over all: the README's
    table under the memory table."""
    cases = list(cases) if cases is not None else load_cases()
    folds = loso(results)
    held = loso_results(folds, results)
    pairs_in, pairs_out = boundaries(results, cases), boundaries(held, cases)

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x * 100:.1f}%"

    def cells(a: dict[str, Any], b: dict[str, Any]) -> str:
        bnd = (f"{a['boundaries_right']}/{a['boundaries']} | {b['boundaries_right']}/{b['boundaries']}"
               if a["boundaries"] else "— | —")
        return (f"{pct(a['median_abs'])} | {pct(b['median_abs'])} | {pct(a['p90_abs'])} | {pct(b['p90_abs'])} | "
                f"{a['verdicts_right']}/{a['cases']} | {b['verdicts_right']}/{b['cases']} | {bnd}")

    lines = ["| source held out | cases | figures | LOSO fragmentation | LOSO band | median abs. in-sample | "
             "median abs. LOSO | p90 abs. in-sample | p90 abs. LOSO | verdicts right in-sample | verdicts right LOSO | "
             "boundaries right in-sample | boundaries right LOSO |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for fold in folds:
        mine = [r for r in results if r.source_slug == fold.source]
        a, b = accuracy(mine, pairs_in), accuracy(fold.results, pairs_out)
        lines.append(f"| {fold.source} | {a['cases']} | {a['figures']} | {fold.reserved_over_churned:.2f} | "
                     f"{fold.band:.2f} | {cells(a, b)} |")
    a, b = accuracy(results, pairs_in), accuracy(held, pairs_out)
    lines.append(f"| **all** | {a['cases']} | {a['figures']} | shipped {RESERVED_OVER_CHURNED:.2f} | shipped "
                 f"{BORDERLINE_FRACTION:.2f} | {cells(a, b)} |")
    lines.append("")
    for name, figures in (("in-sample", a), ("leave-one-source-out", b)):
        missed = goal_shortfalls(figures)
        lines.append(f"Goal (memory median ≤ {GOAL_MEDIAN_ABS * 100:.0f}%, every verdict right, every boundary right), "
                     f"{name}: " + ("met." if not missed else "not met: " + "; ".join(missed) + "."))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="every case's numbers and the summary as JSON")
    args = ap.parse_args(argv)
    results = run()
    if args.json:
        folds = loso(results)
        held = loso_results(folds, results)
        pairs_in, pairs_out = boundaries(results), boundaries(held)
        print(json.dumps({"summary": summary(results),
                          "loso": {"all": accuracy(held, pairs_out), "in_sample_all": accuracy(results, pairs_in),
                                   "by_source": [{"source": f.source,
                                                  "reserved_over_churned": f.reserved_over_churned, "band": f.band,
                                                  "in_sample": accuracy([r for r in results
                                                                         if r.source_slug == f.source], pairs_in),
                                                  "loso": accuracy(list(f.results), pairs_out),
                                                  "cases": [{"case": r.case, "predicted_gib": round(r.predicted_gib, 4),
                                                             "error": None if r.error is None else round(r.error, 4),
                                                             "verdict": r.verdict, "verdict_right": verdict_right(r)}
                                                            for r in f.results]} for f in folds]},
                          "cases": [{"case": r.case, "half": r.half, "row": r.source, "figure": r.figure,
                                     "published_gib": r.published_gib, "predicted_gib": round(r.predicted_gib, 4),
                                     "error": None if r.error is None else round(r.error, 4), "fits": r.fits,
                                     "verdict": r.estimate.verdict, "verdict_right": verdict_right(r),
                                     "ran": r.ran, "inferred": r.inferred, "phase": r.estimate.phase,
                                     "parts_gib": {k: round(v, 3) for k, v in r.estimate.parts_gib().items()},
                                     "source": str(r.estimate.source)} for r in results]}, indent=1))
        return 0
    print("\n".join(table_lines(results)))
    pairs = boundaries(results)
    print(f"\nFit/OOM boundaries (a configuration that ran and the next that ran out of memory): "
          f"{sum(ok for _, _, ok in pairs)} of {len(pairs)} predicted right on both sides"
          + "".join(f"\n- {ran} → {oom}: {'right' if ok else 'WRONG'}" for ran, oom, ok in pairs))
    fitted, used = fit_reserved_fraction(results)
    print(f"\nFragmentation ((max_memory_reserved − max_memory_allocated) / churned bytes) fitted on the fit half "
          f"({len(used)} rows: {', '.join(used)}): {fitted:.2f}; the planner uses "
          f"{RESERVED_OVER_CHURNED:.2f} (planner/engine/memory.py).")
    print("\nLeave one source out (each source's cases predicted with the free constants refitted without them), "
          "next to in-sample:\n")
    print("\n".join(loso_table_lines(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
