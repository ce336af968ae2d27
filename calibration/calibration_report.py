"""How far the planner's step times are from published runs: cross-validation on the published corpus.

Every one-GPU published figure the planner can read (results/published/, built by `python -m bench published
build`) is a held-out point: the planner predicts its micro-step time with that figure hidden, by the path a plan
would take, and the error is predicted / published - 1 (so +10% = predicted 10% slower than the published run).

- analytic: no measurement at all (the formula F / (P x MFU) with the default MFUs).
- transfer (leave-one-GPU-out): every figure of the held-out GPU hidden; the planner transfers another GPU's.
- leave-one-source-out: every figure of the held-out source hidden (another source may cover the same GPU).

For each: the median, 90th percentile and mean of the signed error, how often the held-out point lies inside the
plan's step-time range (coverage), and the median high/low ratio of that range. Rows are split by the software
stack that produced them (the planner has no stack factor yet), and by GPU architecture.

    .venv/bin/python calibration/calibration_report.py            # the table
    .venv/bin/python calibration/calibration_report.py --json     # the metrics (keys named in issue 15)
    .venv/bin/python calibration/calibration_report.py --rows     # every held-out point and its three predictions
    .venv/bin/python calibration/calibration_report.py --include ~/.trainplan/results   # + your measured and recorded runs

`--include` (repeatable: a result file or a folder of them) adds one-GPU measured rows (`bench run`) and runs
recorded by hand on the Runs page (their result files) as points of their own source, "measured" or "recorded", and
stack, "vanilla_pytorch" (the bench harness is eager PyTorch) or "recorded"; the default is the published corpus
alone, so the committed metrics stay reproducible.

Deterministic (no timing), so its output can be committed and compared; tests/test_calibration_report.py checks the
committed calibration/calibration_metrics.json against a fresh run (no regression) and the README table against it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine import steptime  # noqa: E402
from planner.engine.calibration import Sample, calibrated_fwd_bwd_s, calibration_of  # noqa: E402
from planner.engine.step_ladder import roofline_terms, step_estimate  # noqa: E402
from planner.inputs.calibration import StepCalibration  # noqa: E402
from planner.inputs.errors import InputError  # noqa: E402
from planner.inputs.folders import Inputs, load_inputs  # noqa: E402
from planner.inputs.resultfile import ResultFile, percentile, read_result_file, scan_results  # noqa: E402
from planner.inputs.scenario import parse_scenario  # noqa: E402
from planner.inputs.zoo_catalog import load_catalog  # noqa: E402

PUBLISHED = ROOT / "results" / "published"
TRACED = ROOT / "results" / "traced"  # the zoo's traces: activation memory, not step times


def corpus_inputs() -> Inputs:
    """The shipped profiles, calibration, published figures and traces, and nothing else: a bench run someone
    left under results/ must not change the fit or stand in for a held-out point (a reviewer found it did)."""
    return load_inputs([PUBLISHED, TRACED], include_user_data=False)
METRICS_PATH = ROOT / "calibration" / "calibration_metrics.json"
SGD_FAMILIES = ("cnn",)  # the published CNN recipes train with SGD + momentum; the transformers with Adam(W)/LAMB


@dataclass(frozen=True)
class Point:
    """One held-out published figure: a one-GPU micro-step time and the configuration it ran."""

    file: ResultFile
    source: str
    model: str
    family: str
    gpu: str
    architecture: str
    stack: str
    precision: str
    micro_batch: int
    global_batch: int
    published_s: float
    citation: str
    seq_len: int | None = None  # the run's sequence length (a transformer trained at another than its default)
    optimizer: str | None = None  # the run's optimizer when its file says (measured, recorded); else by family


@dataclass(frozen=True)
class Prediction:
    path: str
    kind: str  # the planner's source kind for the time (analytic, transferred, published, interpolated...)
    predicted_s: float
    low_s: float
    high_s: float

    def error(self, published_s: float) -> float:
        return self.predicted_s / published_s - 1.0

    def covers(self, published_s: float) -> bool:
        return self.low_s <= published_s <= self.high_s


def source_of(rf: ResultFile) -> str:
    """A point's source: the corpus slug of a published file; "recorded" for a run recorded by hand on the Runs page
    (planner.inputs.actuals.recorded_result marks its environment); "measured" for a `bench run` file."""
    slug = rf.settings.get("source_slug")
    if slug:
        return str(slug)
    return "recorded" if rf.environment.get("recorded_run") else "measured"


def _measured_point(rf: ResultFile, m, profile) -> Point | None:
    """A one-GPU `bench run` or recorded row as a point: its median full step at its batch (no accumulation)."""
    if m.source != "measured" or not m.ok or m.step_time_s is None or not m.is_one_gpu:
        return None
    if (m.global_batch or m.batch_size) != (m.micro_batch or m.batch_size):
        return None  # an accumulated step holds several micro-steps; bench and recorded runs never write one
    source = source_of(rf)
    optimizer = rf.settings.get("optimizer")
    return Point(
        file=rf, source=source, model=rf.model_name, family=str(rf.model.get("family") or "custom"),
        gpu=str(rf.gpu_profile_id), architecture=profile.architecture,
        stack="recorded" if source == "recorded" else "vanilla_pytorch", precision=m.precision,
        micro_batch=m.batch_size, global_batch=m.batch_size, published_s=float(m.step_time_s.median),
        citation=f"{Path(rf.path).name} ({source})", seq_len=m.seq_len or rf.model.get("seq_len"),
        optimizer=str(optimizer) if optimizer else None)


def load_points(results: Sequence[ResultFile], inputs: Inputs) -> list[Point]:
    points = []
    for rf in results:
        gpu = rf.gpu_profile_id
        profile = inputs.profiles.get(gpu or "")
        if profile is None:
            continue
        for m in rf.measurements:
            measured = _measured_point(rf, m, profile)
            if measured is not None:
                points.append(measured)
                continue
            t = m.published_micro_step_s
            if m.source != "published" or not m.is_one_gpu or not t or m.provenance is None:
                continue
            points.append(Point(
                file=rf, source=source_of(rf), model=rf.model_name,
                family=str(rf.model.get("family") or "custom"), gpu=str(gpu), architecture=profile.architecture,
                stack=m.provenance.stack or "?", precision=m.precision, micro_batch=m.batch_size,
                global_batch=m.global_batch or m.batch_size, published_s=t, citation=m.provenance.source or "?",
                seq_len=m.seq_len or rf.model.get("seq_len")))
    # One point per run: a CSV line that publishes both samples/s and ms per iteration (timm) is one run, not two.
    unique = {(p.citation, p.model, p.gpu, p.precision, p.micro_batch): p for p in points}
    return sorted(unique.values(), key=lambda p: (p.source, p.model, p.gpu, p.precision, p.micro_batch, p.citation))


def load_results(include: Sequence[str | Path] = ()) -> tuple[list[ResultFile], list[str]]:
    """The published corpus plus the result files (or folders of them) named by --include; one problem line per
    file that cannot be read (never a traceback)."""
    results, problems = scan_results(PUBLISHED)
    for name in include:
        path = Path(name).expanduser()
        if path.is_dir():
            more, bad = scan_results(path)
            results, problems = [*results, *more], [*problems, *bad]
        elif path.is_file():
            try:
                results.append(read_result_file(path))
            except InputError as exc:
                problems.append(str(exc))
        else:
            problems.append(f"{name}: no such file or folder (--include)")
    return results, problems


def _model_block(p: Point) -> dict:
    """The scenario's model: its id, with the zoo's shape at the run's sequence length when that differs (BERT-large
    pre-training phase 2 runs at 512 where the zoo's bert_large is 128)."""
    entry = load_catalog().get(p.model)
    shape = dict(entry["transformer"]) if entry and entry.get("transformer") else None
    if shape and p.seq_len and shape.get("seq_len") != p.seq_len and shape.get("vocab"):
        keep = ("layers", "hidden", "heads", "vocab", "mlp", "ffn")
        return {"name": p.model, "transformer": {**{k: shape[k] for k in keep if shape.get(k)}, "seq_len": p.seq_len}}
    return {"name": p.model}


def scenario_for(p: Point):
    return parse_scenario({
        "schema": "trainplan.scenario/1", "name": f"held out: {p.citation}", "model": _model_block(p),
        "training": {"global_batch": p.global_batch, "micro_batch": p.micro_batch, "precisions": [p.precision],
                     "optimizer": p.optimizer or ("sgd_momentum" if p.family in SGD_FAMILIES else "adamw")},
        "workload": {"dataset_samples": 1000, "epochs": 1},
        "hardware": {"gpus": [p.gpu], "gpu_counts": [1]},
    }, "calibration_report")


def predict(p: Point, inputs: Inputs, path: str) -> Prediction:
    """The micro-step the planner predicts for p from `inputs` (p's own figure must already be hidden)."""
    step = step_estimate(scenario_for(p), inputs, gpu_id=p.gpu, precision=p.precision, micro_batch=p.micro_batch)
    k = max(1, p.global_batch // p.micro_batch)
    low, high = step.band_s
    return Prediction(path, step.source.kind, step.compute_step_time_s / k, low / k, high / k)


def sample_of(p: Point, inputs: Inputs) -> Sample | None:
    """The calibration's view of one point (calibration/calibrate.py fits on these); None when it cannot be read."""
    terms = roofline_terms(scenario_for(p), inputs, gpu_id=p.gpu, precision=p.precision, micro_batch=p.micro_batch)
    target = p.published_s - terms.optimizer_s / max(1, p.global_batch // p.micro_batch)
    if terms.peak_tflops <= 0 or target <= 0:
        return None
    return Sample(terms.group, p.precision, terms.flops / (terms.peak_tflops * 1e12),
                  terms.activation_bytes / (terms.bandwidth_gb_per_s * 1e9), target, p.source, kernels=terms.kernels)


def run(results: Sequence[ResultFile], inputs: Inputs) -> tuple[list[Point], dict[str, list[Prediction]]]:
    """Every point predicted three ways, each with what it holds out hidden from the figures AND from the
    calibration (refitted without them), so no prediction has seen its own run."""
    points = load_points(results, inputs)
    samples = {i: sample_of(p, inputs) for i, p in enumerate(points)}

    def refit(hidden: Callable[[Point], bool]) -> StepCalibration:
        kept = [s for i, s in samples.items() if s is not None and not hidden(points[i])]
        cal = calibration_of(kept, fitted_on="held-out")
        # the transfer range: the committed held-out quantiles (themselves leave-one-GPU-out errors)
        committed = inputs.calibration
        return cal if committed is None else dataclasses.replace(
            cal, transfer_residual_p10=committed.transfer_residual_p10,
            transfer_residual_p90=committed.transfer_residual_p90)

    def without(keep: Callable[[ResultFile], bool], hidden: Callable[[Point], bool], *, figures: bool) -> Inputs:
        kept = tuple(r for r in results if keep(r)) if figures else ()
        return dataclasses.replace(inputs, results=(*kept, *_non_published(inputs)), calibration=refit(hidden))

    def on_gpu(g: str) -> Inputs:
        return without(lambda r: r.gpu_profile_id != g, lambda p: p.gpu == g, figures=True)

    def from_source(s: str) -> tuple[Inputs, Inputs]:
        return (without(lambda r: source_of(r) != s, lambda p: p.source == s, figures=True),
                without(lambda r: False, lambda p: p.source == s, figures=False))

    by_gpu = {g: on_gpu(g) for g in {p.gpu for p in points}}
    by_source = {s: from_source(s) for s in {p.source for p in points}}
    out: dict[str, list[Prediction]] = {"analytic": [], "transfer": [], "leave_one_source_out": []}
    for p in points:
        out["analytic"].append(predict(p, by_source[p.source][1], "analytic"))
        out["transfer"].append(predict(p, by_gpu[p.gpu], "transfer"))
        out["leave_one_source_out"].append(predict(p, by_source[p.source][0], "leave_one_source_out"))
    out["transfer"] = _nested_transfer_bands(points, out["transfer"], lambda p: p.gpu)
    out["leave_one_source_out"] = _nested_transfer_bands(points, out["leave_one_source_out"], lambda p: p.source)
    return points, out


def _nested_transfer_bands(points: Sequence[Point], preds: list[Prediction],
                           group: Callable[[Point], str]) -> list[Prediction]:
    """A transferred prediction's range from the transfer errors of the OTHER groups only (the committed
    quantiles include the held-out point's own error): p10-p90 of those, as the planner applies them."""
    errors = [(group(p), pr.error(p.published_s)) for p, pr in zip(points, preds, strict=True)
              if pr.kind == "transferred"]
    out = []
    for p, pr in zip(points, preds, strict=True):
        others = [e for g, e in errors if g != group(p)]
        if pr.kind != "transferred" or len(others) < 5:
            out.append(pr)
            continue
        p10, p90 = percentile(others, 10), percentile(others, 90)
        out.append(dataclasses.replace(pr, low_s=pr.predicted_s / (1.0 + max(p90, 0.05)),
                                       high_s=pr.predicted_s / max(1.0 + min(p10, -0.05), 0.2)))
    return out


def _non_published(inputs: Inputs) -> tuple[ResultFile, ...]:
    """The traces (activation memory of the zoo models) stay: they are not step times."""
    return tuple(r for r in inputs.results if r.is_traced)


def summary(points: Sequence[Point], preds: Sequence[Prediction]) -> dict[str, float]:
    errors = [pr.error(p.published_s) for p, pr in zip(points, preds, strict=True)]
    if not errors:
        return {"n": 0}
    return {
        "n": len(errors),
        "median_abs": statistics.median(abs(e) for e in errors),
        "p90_abs": percentile([abs(e) for e in errors], 90),
        "mean_signed": statistics.fmean(errors),
        "coverage": sum(pr.covers(p.published_s) for p, pr in zip(points, preds, strict=True)) / len(errors),
        "median_range_ratio": statistics.median(pr.high_s / pr.low_s for pr in preds if pr.low_s > 0),
    }


def metrics(points: Sequence[Point], preds: dict[str, list[Prediction]]) -> dict[str, float]:
    """The keys issue 15 names; 'transfer' is leave-one-GPU-out, coverage pools the two held-out paths."""
    a, t, s = (summary(points, preds[k]) for k in ("analytic", "transfer", "leave_one_source_out"))
    held = [*preds["transfer"], *preds["leave_one_source_out"]]
    both = [*points, *points]
    return {
        "analytic_median_abs": round(a["median_abs"], 4), "analytic_p90_abs": round(a["p90_abs"], 4),
        "analytic_mean_signed": round(a["mean_signed"], 4),
        "transfer_median_abs": round(t["median_abs"], 4), "transfer_p90_abs": round(t["p90_abs"], 4),
        "transfer_mean_signed": round(t["mean_signed"], 4),
        "loso_median_abs": round(s["median_abs"], 4), "loso_p90_abs": round(s["p90_abs"], 4),
        "loso_mean_signed": round(s["mean_signed"], 4),
        "heldout_coverage": round(summary(both, held)["coverage"], 4),
        "analytic_coverage": round(a["coverage"], 4),
        "median_range_ratio": round(summary(both, held)["median_range_ratio"], 3),
        "n_points": len(points), "n_sources": len({p.source for p in points}),
        "n_gpus": len({p.gpu for p in points}), "n_params": n_params(),
    }


def n_params() -> int:
    """The committed calibration's fitted parameters (0 without one: the default MFUs)."""
    path = ROOT / "planner" / "inputs" / "step_calibration.json"
    return int(json.loads(path.read_text(encoding="utf-8"))["n_params"]) if path.is_file() else 0


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%" if x == x else "—"


def _abs_pct(x: float) -> str:
    return f"{x * 100:.0f}%" if x == x else "—"


def table(points: Sequence[Point], preds: dict[str, list[Prediction]]) -> list[str]:
    """The Markdown table the README carries (tests check it equals a fresh run)."""
    lines = ["| path | rows | median abs. error | p90 abs. error | mean signed error | range covers the run | "
             "median range high/low |", "|---|---:|---:|---:|---:|---:|---:|"]
    names = {"analytic": "analytic (calibrated formula, nothing measured)", "transfer": "transfer (leave one GPU out)",
             "leave_one_source_out": "leave one source out"}
    groups: list[tuple[str, Callable[[Point], bool]]] = [
        ("", lambda p: True), (" · vanilla PyTorch rows", lambda p: p.stack == "vanilla_pytorch"),
        (" · optimized-stack rows", lambda p: p.stack != "vanilla_pytorch")]
    for key, label in names.items():
        for suffix, keep in groups:
            pairs = [(p, pr) for p, pr in zip(points, preds[key], strict=True) if keep(p)]
            if not pairs:
                continue
            s = summary([p for p, _ in pairs], [pr for _, pr in pairs])
            lines.append(f"| {label}{suffix} | {s['n']} | {_abs_pct(s['median_abs'])} | {_abs_pct(s['p90_abs'])} | "
                         f"{_pct(s['mean_signed'])} | {_abs_pct(s['coverage'])} | {s['median_range_ratio']:.2f} |")
    return lines


def by_architecture(points: Sequence[Point], preds: dict[str, list[Prediction]]) -> list[str]:
    lines = ["| architecture | rows | analytic median signed | transfer median signed |", "|---|---:|---:|---:|"]
    for arch in sorted({p.architecture for p in points}):
        idx = [i for i, p in enumerate(points) if p.architecture == arch]
        med = {k: statistics.median(preds[k][i].error(points[i].published_s) for i in idx)
               for k in ("analytic", "transfer")}
        lines.append(f"| {arch} | {len(idx)} | {_pct(med['analytic'])} | {_pct(med['transfer'])} |")
    return lines


def llm_check(results: Sequence[ResultFile], inputs: Inputs) -> list[str]:
    """Out of sample: the multi-GPU LLM runs (FSDP over 8-512 GPUs; none is in the fit), per GPU. The calibrated
    formula's forward+backward against the published per-GPU micro-step (its communication overlapped; activation
    checkpointing, on in some rows, is not modelled here), next to the old default-MFU formula (0.30)."""
    cal = inputs.calibration
    rows: list[tuple[str, float, float]] = []
    for rf in results:
        gpu = inputs.profiles.get(rf.gpu_profile_id or "")
        for m in rf.measurements:
            t = m.published_micro_step_s
            if gpu is None or cal is None or not t or m.is_one_gpu or rf.model.get("family") != "decoder":
                continue
            point = Point(rf, str(rf.settings.get("source_slug")), rf.model_name, "decoder", gpu.id, gpu.architecture,
                          "?", m.precision, m.batch_size, m.batch_size, t, "?", m.seq_len)
            terms = roofline_terms(scenario_for(point), inputs, gpu_id=gpu.id, precision=m.precision,
                                   micro_batch=m.batch_size)
            if not terms.peak_tflops or not terms.activation_bytes:
                continue
            predicted, _, _ = calibrated_fwd_bwd_s(cal, gpu, m.precision, flops=terms.flops,
                                                   peak_tflops=terms.peak_tflops,
                                                   activation_bytes=terms.activation_bytes,
                                                   launch_s=steptime.launch_s(terms.kernels))
            old = terms.flops / (terms.peak_tflops * 1e12 * 0.30)
            rows.append((point.source, predicted / t - 1.0, old / t - 1.0))
    if not rows:
        return []
    out = ["| multi-GPU LLM rows (out of sample) | rows | calibrated: median abs. | median signed | "
           "old default MFU: median abs. | median signed |", "|---|---:|---:|---:|---:|---:|"]
    for source in sorted({r[0] for r in rows}):
        sel = [r for r in rows if r[0] == source]
        out.append(f"| {source} | {len(sel)} | {_abs_pct(statistics.median(abs(r[1]) for r in sel))} | "
                   f"{_pct(statistics.median(r[1] for r in sel))} | "
                   f"{_abs_pct(statistics.median(abs(r[2]) for r in sel))} | "
                   f"{_pct(statistics.median(r[2] for r in sel))} |")
    return out


def report_lines(results: Sequence[ResultFile], inputs: Inputs, points: Sequence[Point],
                 preds: dict[str, list[Prediction]]) -> list[str]:
    """The whole report as the README carries it."""
    m = metrics(points, preds)
    return [*table(points, preds), "", *by_architecture(points, preds), "", *llm_check(results, inputs), "",
            f"{m['n_points']} one-GPU published points, {m['n_sources']} sources, {m['n_gpus']} GPUs; "
            f"{m['n_params']} fitted parameters"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the metrics as JSON")
    ap.add_argument("--rows", action="store_true", help="print every held-out point and its predictions")
    ap.add_argument("--write", action="store_true", help=f"write the metrics to {METRICS_PATH.relative_to(ROOT)}")
    ap.add_argument("--include", action="append", default=[], metavar="PATH",
                    help="also a result file or folder of them: measured (bench run) and recorded runs (repeatable)")
    args = ap.parse_args(argv)
    if args.write and args.include:
        ap.error("--write records the published corpus's metrics: run it without --include")
    results, problems = load_results(args.include)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    inputs = corpus_inputs()
    points, preds = run(results, inputs)
    m = metrics(points, preds)
    if args.write:
        METRICS_PATH.write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    if args.rows:
        for i, p in enumerate(points):
            row = [f"{p.source}", p.model, p.gpu, p.precision, f"b{p.micro_batch}", f"{p.published_s * 1e3:.1f} ms"]
            for k in preds:
                pr = preds[k][i]
                row.append(f"{k}={pr.predicted_s * 1e3:.1f} ms ({pr.kind}, {_pct(pr.error(p.published_s))})")
            print("  ".join(row))
        return 0
    print("\n".join(report_lines(results, inputs, points, preds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
