"""How far the reference-point convergence fit is from MLPerf's reference runs, held out one benchmark at a time.

Data: MLPerf Training's reference convergence points (RCPs), the newest version of every benchmark's
`rcps_*.json` in mlcommons/logging (copied under calibration/convergence_data/, sources and sha256 in SOURCES.yaml):
per global batch, the samples, tokens or epochs each of many seeds took to reach the benchmark's target. The
published value at a batch is the RCP checker's olympic mean (the top and bottom seed dropped, four each for
unet3d: rcp_checker.py compute_rcp_stats). Steps = value x c / B with one constant c per benchmark (dataset size,
1, or 1/sequence length), which cancels in every figure here, so no dataset size is needed.

Held out: for each benchmark, its two smallest batches are the reference points a user would have from their own
small runs; the planner's fit (planner.engine.convergence.fit_reference_points: eq. 2.11 of McCandlish et al. 2018,
S(B) = S_min + E_min/B, or S_min = 0 for perfect scaling) predicts the steps at every larger batch, and the error is
predicted / published - 1 (+10% = 10% more steps than the reference runs took).

- before: eq. 2.11 as fitted.
- after: S(B) = S_min + (E_min/B)·(B/B_max)^gamma past the largest reference batch B_max
  (convergence.steps_past_reference), gamma fitted on the OTHER benchmarks only (leave-one-benchmark-out), by least
  squares of ln(predicted/published) with every benchmark weighted equally (1/points each), golden-section search.

The steps range (convergence.steps_band_log): S·e^(+/-h), h = sqrt(max(h_seed, r_fit)^2 + (k·d)^2), with h_seed from
the pooled seed spread (seed / olympic mean - 1, p10 and p90, each benchmark weighing the same), d = ln(B/B_max) and k the 80th percentile of
sqrt(max(0, r^2 - max(h_seed, r_fit)^2))/d over held-out log errors r (so ~80% fall inside, like a p10-p90 band).
The coverage reported is held out twice over: for benchmark b, gamma, the seed spread and k all come from the other
benchmarks, and k from their own leave-one-out errors with b also left out.

    .venv/bin/python calibration/convergence_report.py            # the tables (README "Measured accuracy of convergence")
    .venv/bin/python calibration/convergence_report.py --json     # the metrics (calibration/convergence_metrics.json)
    .venv/bin/python calibration/convergence_report.py --write    # refit: planner/inputs/convergence_calibration.json and
                                                           # calibration/convergence_metrics.json
    .venv/bin/python calibration/convergence_report.py --check    # exit 1 when the committed calibration is stale

Deterministic; tests/test_convergence_mlperf.py checks the committed files and the README table against a fresh run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine.convergence import (  # noqa: E402
    ReferenceFit,
    fit_reference_points,
    log_batch_distance,
    seed_half_width_log,
    steps_at_batch,
    steps_band_log,
    steps_past_reference,
)
from planner.inputs.atomic import atomic_write, refuse_empty  # noqa: E402
from planner.inputs.convergence_calibration import (  # noqa: E402
    CONVERGENCE_CALIBRATION_PATH,
    ConvergenceCalibration,
)
from planner.inputs.errors import InputError  # noqa: E402
from planner.inputs.resultfile import percentile  # noqa: E402

DATA = ROOT / "calibration" / "convergence_data"
SOURCES = DATA / "SOURCES.yaml"
METRICS_PATH = ROOT / "calibration" / "convergence_metrics.json"
REFERENCE_POINTS = 2  # each benchmark's smallest batches the fit sees
COVERAGE_PERCENTILE = 80.0  # k makes this share of held-out errors fall inside the range
EXPONENT_BOUNDS = (-0.5, 0.95)  # gamma < 1 keeps steps falling with the batch


@dataclass(frozen=True)
class RcpPoint:
    """One RCP: a global batch, the olympic mean of its seeds and every seed, in the benchmark's recorded unit."""

    batch: int
    mean: float
    seeds: tuple[float, ...]

    @property
    def steps(self) -> float:
        """Optimizer steps per unit of c (value / B): c cancels in every ratio this report takes."""
        return self.mean / self.batch


@dataclass(frozen=True)
class Benchmark:
    name: str
    file: str  # under calibration/convergence_data/, e.g. training_5.1.0/rcps_bert.json
    unit: str
    points: tuple[RcpPoint, ...]  # by batch

    @property
    def version(self) -> str:
        return self.file.split("/")[0].removeprefix("training_")

    @property
    def references(self) -> list[tuple[float, float]]:
        return [(float(p.batch), p.steps) for p in self.points[:REFERENCE_POINTS]]

    @property
    def held_out(self) -> tuple[RcpPoint, ...]:
        return self.points[REFERENCE_POINTS:]


@dataclass(frozen=True)
class HeldOut:
    """One held-out batch: the published steps, the fit's prediction before and after the correction, the range."""

    benchmark: str
    batch: int
    high_batch: float  # the largest reference batch
    published: float
    before: float
    after: float
    band_log: float

    @property
    def error_before(self) -> float:
        return self.before / self.published - 1

    @property
    def error_after(self) -> float:
        return self.after / self.published - 1

    @property
    def covered(self) -> bool:
        return abs(math.log(self.after / self.published)) <= self.band_log + 1e-12


# ---------------------------------------------------------------- data

def olympic_mean(values: Sequence[float], benchmark: str) -> float:
    """The RCP checker's mean: sorted, the top and bottom seed dropped (four each for unet3d)
    (mlcommons/logging mlperf_logging/rcp_checker/rcp_checker.py, compute_rcp_stats)."""
    drop = 4 if benchmark == "unet3d" else 1
    ordered = sorted(values)
    return statistics.fmean(ordered[drop:len(ordered) - drop])


def load_sources() -> dict:
    with SOURCES.open(encoding="utf-8") as f:
        return dict(yaml.safe_load(f))


def load_benchmarks() -> list[Benchmark]:
    """Every benchmark in SOURCES.yaml, its RCP file checked against the recorded sha256."""
    out = []
    for name, entry in sorted(load_sources()["benchmarks"].items()):
        raw = (DATA / entry["file"]).read_bytes()
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise SystemExit(f"{entry['file']}: sha256 differs from SOURCES.yaml (the raw copies must not be edited)")
        points = []
        for record in json.loads(raw).values():
            seeds = record.get("samples to converge") or record["Epochs to converge"]
            points.append(RcpPoint(int(record["BS"]), olympic_mean(seeds, name), tuple(float(s) for s in seeds)))
        out.append(Benchmark(name, entry["file"], entry["unit"], tuple(sorted(points, key=lambda p: p.batch))))
    return out


# ---------------------------------------------------------------- fits

def reference_fit(bench: Benchmark) -> ReferenceFit:
    return fit_reference_points(bench.references)


def log_errors(benches: Sequence[Benchmark], exponent: float) -> list[tuple[float, float]]:
    """(weight, ln(predicted/published)) of every held-out point, each benchmark weighing 1 in all."""
    out = []
    for b in benches:
        fit = reference_fit(b)
        for p in b.held_out:
            pred = steps_past_reference(fit.s_min, fit.e_min, p.batch, fit.high_batch, exponent=exponent)
            out.append((1.0 / len(b.held_out), math.log(pred / p.steps)))
    return out


def fit_exponent(benches: Sequence[Benchmark]) -> float:
    """gamma minimising sum w·ln(predicted/published)^2 (golden-section search on EXPONENT_BOUNDS, 1e-7)."""
    def loss(g: float) -> float:
        return sum(w * e * e for w, e in log_errors(benches, g))
    return golden_section_min(loss, *EXPONENT_BOUNDS)


def golden_section_min(f: Callable[[float], float], lo: float, hi: float, tol: float = 1e-7) -> float:
    """The minimum of a unimodal f on [lo, hi] (Kiefer 1953; Press et al., Numerical Recipes 3rd ed. §10.2)."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = f(d)
    return (a + b) / 2


def seed_deviations(benches: Sequence[Benchmark]) -> list[tuple[float, float]]:
    """(weight, seed / olympic mean - 1) for every seed of every RCP, each benchmark weighing 1 in all (unet3d's
    485 seeds at +/-30% would otherwise set the pooled spread: -10.1%/+9.0% unweighted). Steps and the recorded
    unit differ by the factor B x c, so the ratio is the same in both."""
    return [(1.0 / sum(len(p.seeds) for p in b.points), s / p.mean - 1)
            for b in benches for p in b.points for s in p.seeds]


def weighted_percentile(pairs: Sequence[tuple[float, float]], q: float) -> float:
    """The smallest value whose cumulative weight reaches q% of the total (the inverted weighted CDF)."""
    ordered = sorted(pairs, key=lambda wv: wv[1])
    target, total = q / 100 * sum(w for w, _ in ordered), 0.0
    for w, v in ordered:
        total += w
        if total >= target - 1e-12:
            return v
    return ordered[-1][1]


def seed_spread(benches: Sequence[Benchmark]) -> tuple[float, float]:
    devs = seed_deviations(benches)
    return weighted_percentile(devs, 10), weighted_percentile(devs, 90)


def calibration_from(benches: Sequence[Benchmark], exponent: float, k: float, source: str) -> ConvergenceCalibration:
    p10, p90 = seed_spread(benches)
    return ConvergenceCalibration(
        large_batch_exponent=exponent, seed_spread_p10=p10, seed_spread_p90=p90, extrapolation_per_log_batch=k,
        n_benchmarks=len(benches), n_heldout_points=sum(len(b.held_out) for b in benches), source=source)


def k_needed(bench: Benchmark, exponent: float, h_seed: float) -> list[float]:
    """For each held-out point, the smallest k whose range covers it: sqrt(max(0, r^2 - h_in^2)) / d."""
    fit = reference_fit(bench)
    inside = max(h_seed, fit.largest_log_residual)
    out = []
    for p in bench.held_out:
        pred = steps_past_reference(fit.s_min, fit.e_min, p.batch, fit.high_batch, exponent=exponent)
        r = math.log(pred / p.steps)
        d = log_batch_distance(p.batch, fit.low_batch, fit.high_batch)
        out.append(math.sqrt(max(0.0, r * r - inside * inside)) / d)
    return out


def extrapolation_k(benches: Sequence[Benchmark], exponents: dict[str, float], h_seed: float) -> float:
    """k: the COVERAGE_PERCENTILE of k_needed over the benchmarks' held-out points, each with its own held-out gamma."""
    return percentile([k for b in benches for k in k_needed(b, exponents[b.name], h_seed)], COVERAGE_PERCENTILE)


def without(benches: Sequence[Benchmark], *names: str) -> list[Benchmark]:
    return [b for b in benches if b.name not in names]


@dataclass(frozen=True)
class Run:
    benches: tuple[Benchmark, ...]
    held_out: tuple[HeldOut, ...]
    exponents: dict[str, float]  # gamma fitted without each benchmark
    calibration: ConvergenceCalibration  # fitted on every benchmark: the shipped file


def run(benches: Sequence[Benchmark], source: str) -> Run:
    names = [b.name for b in benches]
    exponents = {n: fit_exponent(without(benches, n)) for n in names}
    # gamma without two benchmarks: the held-out errors k is measured on, with the held-out benchmark also left out
    pair = {(a, b): fit_exponent(without(benches, a, b)) for a in names for b in names if a < b}
    rows = []
    for b in benches:
        others = without(benches, b.name)
        h_seed = seed_half_width_log(calibration_from(others, 0.0, 0.0, source))
        k = extrapolation_k(others, {o.name: pair[(min(o.name, b.name), max(o.name, b.name))] for o in others}, h_seed)
        cal = calibration_from(others, exponents[b.name], k, source)
        fit = reference_fit(b)
        for p in b.held_out:
            d = log_batch_distance(p.batch, fit.low_batch, fit.high_batch)
            rows.append(HeldOut(
                benchmark=b.name, batch=p.batch, high_batch=fit.high_batch, published=p.steps,
                before=steps_at_batch(fit.s_min, fit.e_min, p.batch),
                after=steps_past_reference(fit.s_min, fit.e_min, p.batch, fit.high_batch,
                                           exponent=cal.large_batch_exponent),
                band_log=steps_band_log(fit.largest_log_residual, d, cal)))
    gamma_all = fit_exponent(benches)
    h_all = seed_half_width_log(calibration_from(benches, 0.0, 0.0, source))
    calibration = calibration_from(benches, gamma_all, extrapolation_k(benches, exponents, h_all), source)
    return Run(tuple(benches), tuple(rows), exponents, calibration)


# ---------------------------------------------------------------- output

def metrics(r: Run) -> dict[str, float | int | str]:
    before = [h.error_before for h in r.held_out]
    after = [h.error_after for h in r.held_out]

    def by_benchmark(errors: Sequence[float]) -> float:
        per: dict[str, list[float]] = {}
        for h, e in zip(r.held_out, errors, strict=True):
            per.setdefault(h.benchmark, []).append(e)
        return statistics.fmean(statistics.fmean(v) for v in per.values())

    cal = r.calibration
    return {
        "data_commit": load_sources()["commit"], "n_benchmarks": len(r.benches), "n_heldout_points": len(r.held_out),
        "reference_points": REFERENCE_POINTS,
        "before_median_abs": _r(statistics.median(abs(e) for e in before)),
        "before_p90_abs": _r(percentile([abs(e) for e in before], 90)),
        "before_mean_signed": _r(statistics.fmean(before)),
        "before_mean_signed_by_benchmark": _r(by_benchmark(before)),
        "after_median_abs": _r(statistics.median(abs(e) for e in after)),
        "after_p90_abs": _r(percentile([abs(e) for e in after], 90)),
        "after_mean_signed": _r(statistics.fmean(after)),
        "after_mean_signed_by_benchmark": _r(by_benchmark(after)),
        "heldout_coverage": _r(sum(h.covered for h in r.held_out) / len(r.held_out)),
        "large_batch_exponent": _r(cal.large_batch_exponent),
        "large_batch_exponent_heldout_min": _r(min(r.exponents.values())),
        "large_batch_exponent_heldout_max": _r(max(r.exponents.values())),
        "seed_spread_p10": _r(cal.seed_spread_p10), "seed_spread_p90": _r(cal.seed_spread_p90),
        "n_seeds": len(seed_deviations(r.benches)),
        "extrapolation_per_log_batch": _r(cal.extrapolation_per_log_batch),
        **{f"{when}_mean_signed_{name}": _r(v) for name, _, before, after, _, _ in binned(r)
           for when, v in (("before", before), ("after", after))},
    }


RATIO_BINS = (("up_to_2x", 0.0, 2.0), ("2x_to_8x", 2.0, 8.0), ("over_8x", 8.0, math.inf))  # B / B_max


def binned(r: Run) -> list[tuple[str, int, float, float, float, float]]:
    """(bin, points, mean signed before, after, median abs before, after) by B / B_max: where the bias is."""
    out = []
    for name, lo, hi in RATIO_BINS:
        rows = [h for h in r.held_out if lo < h.batch / h.high_batch <= hi]
        if rows:
            out.append((name, len(rows), statistics.fmean(h.error_before for h in rows),
                        statistics.fmean(h.error_after for h in rows),
                        statistics.median(abs(h.error_before) for h in rows),
                        statistics.median(abs(h.error_after) for h in rows)))
    return out


def _r(x: float) -> float:
    return round(x, 4)


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def largest(r: Run, name: str) -> HeldOut:
    """The held-out point at a benchmark's largest batch."""
    return max((h for h in r.held_out if h.benchmark == name), key=lambda h: h.batch)


def report_lines(r: Run) -> list[str]:
    m = metrics(r)
    out = [
        f"MLPerf Training reference convergence points, mlcommons/logging@{str(m['data_commit'])[:7]}: "
        f"{m['n_benchmarks']} benchmarks, {m['n_heldout_points']} held-out batches. Reference points: each "
        f"benchmark's {REFERENCE_POINTS} smallest batches; error = predicted / published steps - 1 (published: the "
        "olympic mean over seeds); gamma, the seed spread and k fitted leave-one-benchmark-out.",
        "",
        "| prediction | median abs error | p90 abs error | mean signed error | mean signed, per benchmark |",
        "|---|---|---|---|---|",
        f"| eq. 2.11 fit (before) | {100 * float(m['before_median_abs']):.1f}% | "
        f"{100 * float(m['before_p90_abs']):.1f}% | {_pct(float(m['before_mean_signed']))} | "
        f"{_pct(float(m['before_mean_signed_by_benchmark']))} |",
        f"| with the large-batch correction (after) | {100 * float(m['after_median_abs']):.1f}% | "
        f"{100 * float(m['after_p90_abs']):.1f}% | {_pct(float(m['after_mean_signed']))} | "
        f"{_pct(float(m['after_mean_signed_by_benchmark']))} |",
        "",
        "| B / B_max | held-out batches | mean signed, before | after | median abs, before | after |",
        "|---|---|---|---|---|---|",
        *(f"| {name.replace('_', ' ')} | {n} | {_pct(mb)} | {_pct(ma)} | {100 * ab:.1f}% | {100 * aa:.1f}% |"
          for name, n, mb, ma, ab, aa in binned(r)),
        "",
        f"Correction: S(B) = S_min + (E_min/B)·(B/B_max)^gamma past the largest reference batch B_max; "
        f"gamma = {float(m['large_batch_exponent']):.3f} fitted on all {m['n_benchmarks']} benchmarks "
        f"(held out: {float(m['large_batch_exponent_heldout_min']):.3f}-"
        f"{float(m['large_batch_exponent_heldout_max']):.3f}). Seed spread of steps to converge (p10/p90 of "
        f"{m['n_seeds']} seeds): {_pct(float(m['seed_spread_p10']))}/{_pct(float(m['seed_spread_p90']))}. "
        f"Range widening k = {float(m['extrapolation_per_log_batch']):.3f} per unit of ln(B/B_max). Held-out "
        f"published means inside the planner's steps range: {100 * float(m['heldout_coverage']):.0f}%.",
        "",
        "| benchmark | RCPs | unit | reference batches | held-out batches | error at the largest, before | after | "
        "in range |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for b in r.benches:
        h = largest(r, b.name)
        held = [p.batch for p in b.held_out]
        span = f"{held[0]:,}" if len(held) == 1 else f"{held[0]:,}-{held[-1]:,}"
        fit = reference_fit(b)
        refs = ", ".join(f"{p.batch:,}" for p in b.points[:REFERENCE_POINTS]) + (" (S_min 0)" if fit.perfect_scaling
                                                                               else "")
        out.append(f"| {b.name} | {b.version} | {b.unit} | {refs} | {span} ({h.batch / h.high_batch:.3g}x) | "
                   f"{_pct(h.error_before)} | {_pct(h.error_after)} | {'yes' if h.covered else 'no'} |")
    return out


def calibration_text(r: Run) -> str:
    return json.dumps(r.calibration.to_dict(), indent=1) + "\n"


def metrics_text(r: Run) -> str:
    return json.dumps(metrics(r), indent=1) + "\n"


def fresh_run(target: Path | None = None) -> Run:
    """The fit on every benchmark of SOURCES.yaml; none (or one without points) is NothingToWrite naming `target`."""
    sources = load_sources()
    source = (f"calibration/convergence_report.py on MLPerf Training RCPs, mlcommons/logging@{sources['commit']} "
              "(calibration/convergence_data/SOURCES.yaml)")
    benches = load_benchmarks()
    refuse_empty(len(benches), what="benchmarks (SOURCES.yaml lists none)", source=SOURCES, target=target)
    for b in benches:
        refuse_empty(len(b.points), what=f"RCP points of {b.name}", source=DATA / b.file, target=target)
    return run(benches, source)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the metrics")
    ap.add_argument("--write", action="store_true", help="write the calibration and the metrics files")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the committed calibration is what the data "
                                                         "gives")
    ap.add_argument("--rows", action="store_true", help="every held-out point")
    args = ap.parse_args(argv)
    try:
        r = fresh_run(CONVERGENCE_CALIBRATION_PATH if args.write else None)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        same = (CONVERGENCE_CALIBRATION_PATH.is_file()
                and CONVERGENCE_CALIBRATION_PATH.read_text(encoding="utf-8") == calibration_text(r))
        print("convergence calibration: the committed file is what the data gives" if same else
              "convergence calibration: stale — run `python calibration/convergence_report.py --write` and commit "
              "planner/inputs/convergence_calibration.json")
        return 0 if same else 1
    if args.write:
        atomic_write(CONVERGENCE_CALIBRATION_PATH, calibration_text(r))
        atomic_write(METRICS_PATH, metrics_text(r))
    if args.json:
        print(metrics_text(r), end="")
    elif args.rows:
        for h in r.held_out:
            print(f"{h.benchmark:18s} B={h.batch:>7,} {h.batch / h.high_batch:6.2f}x before {_pct(h.error_before)}"
                  f" after {_pct(h.error_after)} range +/-{100 * (math.exp(h.band_log) - 1):.0f}% "
                  f"{'in' if h.covered else 'OUT'}")
    else:
        print("\n".join(report_lines(r)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
