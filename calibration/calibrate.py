"""Fit the analytic step time's few parameters on the published corpus and write planner/inputs/step_calibration.json.

The model (planner/engine/calibration.py): t(fwd+bwd) = F / (P × e[architecture] × f[precision]) + traffic × A / BW,
fitted on every one-GPU published figure the planner reads (results/published/) except those of the held-out
sources (calibration/heldout.yaml: the fit refuses them, and the transfer range below is chosen without them): one
compute efficiency per architecture group with data, a tf32 and an fp32 factor, one activation-traffic figure — at
most one parameter per ten points. Every development source's stack is used (today all optimized-stack rows: the
plain-PyTorch timm rows are held out); calibration/calibration_report.py reports the residuals of each stack apart.
Deterministic: the same data gives the same file (tests check it).

    .venv/bin/python calibration/calibrate.py            # fit and write
    .venv/bin/python calibration/calibrate.py --check    # exit 1 when the committed file is not what the data gives
    .venv/bin/python calibration/calibrate.py --include ~/.trainplan/results   # also your measured and recorded runs

`--include PATH` (repeatable) adds the one-GPU figures of `bench run` result files and of runs recorded on the Runs
page (labelled sources "measured" and "recorded" in the written file); the committed file is fitted without them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script (python calibration/calibrate.py) as well as a module

from calibration import calibration_report as report  # noqa: E402
from calibration.heldout import HeldOut, fit_points, load_heldout  # noqa: E402
from planner.engine.calibration import Sample  # noqa: E402
from planner.inputs.atomic import atomic_write, refuse_empty  # noqa: E402
from planner.inputs.calibration import CALIBRATION_PATH  # noqa: E402
from planner.inputs.errors import InputError  # noqa: E402
from planner.inputs.folders import Inputs  # noqa: E402
from planner.inputs.resultfile import percentile  # noqa: E402


def samples_of(points, inputs: Inputs) -> list[Sample]:
    """The calibration's view of every point (calibration_report.sample_of), those it cannot read left out."""
    return [s for s in (report.sample_of(p, inputs) for p in points) if s is not None]


def fitted_text(fitted_on: str, include: list[str] | None = None) -> str:
    results, problems = report.load_results(include or ())
    if problems:
        raise SystemExit("\n".join(problems))
    return fitted_text_of(results, report.corpus_inputs(), fitted_on, load_heldout())


def fitted_text_of(results, inputs: Inputs, fitted_on: str, heldout: HeldOut) -> str:
    """The calibration file fitted on `results` with the held-out sources' points left out (and refused)."""
    points = fit_points(report.load_points(results, inputs), heldout)
    samples = samples_of(points, inputs)
    # No point to fit: refused (exit 2) before the fit, so the committed calibration is never replaced by nothing.
    refuse_empty(len(samples), what=f"one-GPU published points to fit ({len(results)} result files read)",
                 source=report.PUBLISHED, target=CALIBRATION_PATH)
    cal = report.fit(samples, heldout, fitted_on=fitted_on, points=points)
    # The transfer path's held-out errors (leave one GPU out, its figures and its calibration points hidden):
    # their p10-p90 is the range a transferred time is given, chosen on the development sources' rows only.
    points, preds = report.run(results, dataclasses.replace(inputs, calibration=cal), heldout, paths=("transfer",))
    errors = [pr.error(p.published_s) for p, pr in zip(points, preds["transfer"], strict=True)
              if pr.kind == "transferred" and not heldout.holds(p.source)]
    cal = dataclasses.replace(cal, transfer_residual_p10=percentile(errors, 10),
                              transfer_residual_p90=percentile(errors, 90)) if errors else cal
    return json.dumps(cal.to_dict(), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    ap.add_argument("--fitted-on", default=None, help="the fit date to record (default: the committed file's)")
    ap.add_argument("--include", action="append", default=[], metavar="PATH",
                    help="also a result file or folder of them: measured (bench run) and recorded runs (repeatable)")
    args = ap.parse_args(argv)
    if args.check and args.include:
        ap.error("--check compares the committed file, fitted on the published corpus alone: drop --include")
    committed = json.loads(CALIBRATION_PATH.read_text(encoding="utf-8")) if CALIBRATION_PATH.is_file() else {}
    try:
        text = fitted_text(args.fitted_on or committed.get("fitted_on") or "2026-12-01", args.include)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        same = CALIBRATION_PATH.is_file() and CALIBRATION_PATH.read_text(encoding="utf-8") == text
        print("calibration: the committed file is what the data gives" if same else
              "calibration: stale — run `python calibration/calibrate.py` and commit planner/inputs/step_calibration.json")
        return 0 if same else 1
    atomic_write(CALIBRATION_PATH, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
