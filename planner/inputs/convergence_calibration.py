"""The convergence calibration the reference-point fit uses (planner/inputs/convergence_calibration.json, written by
`python calibration/convergence_report.py --write` from MLPerf's reference convergence points): the large-batch exponent,
the seed spread of steps to converge, and how fast the held-out error grows with distance in log batch.
Data only; the model is planner/engine/convergence.py."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.inputs import loader
from planner.inputs.check import Reader

SCHEMA = "trainplan.convergence-calibration/1"
CONVERGENCE_CALIBRATION_PATH = Path(__file__).resolve().parent / "convergence_calibration.json"
CONVERGENCE_CALIBRATION_FILE = loader.FileKind("convergence calibration (JSON)", "json", 64 * 1024)


@dataclass(frozen=True)
class ConvergenceCalibration:
    """S(B) = S_min + (E_min/B)·(B/B_max)^gamma past the largest reference batch B_max, and the steps range.

    large_batch_exponent: gamma (one parameter, fitted on every benchmark's held-out points);
    seed_spread_p10/p90: seed / seed-mean - 1 of steps to converge, pooled over benchmarks and batches;
    extrapolation_per_log_batch: k, the held-out error per unit of ln(batch distance from the reference batches).
    """

    large_batch_exponent: float
    seed_spread_p10: float
    seed_spread_p90: float
    extrapolation_per_log_batch: float
    n_benchmarks: int
    n_heldout_points: int
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "source": self.source, "n_benchmarks": self.n_benchmarks,
                "n_heldout_points": self.n_heldout_points,
                "large_batch_exponent": round(self.large_batch_exponent, 4),
                "seed_spread_p10": round(self.seed_spread_p10, 4),
                "seed_spread_p90": round(self.seed_spread_p90, 4),
                "extrapolation_per_log_batch": round(self.extrapolation_per_log_batch, 4)}


def parse_convergence_calibration(data: object, source: str) -> ConvergenceCalibration:
    r = Reader(data, source)
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    return ConvergenceCalibration(
        large_batch_exponent=float(r.number("large_batch_exponent", minimum=-1.0, maximum=0.99)),
        seed_spread_p10=float(r.number("seed_spread_p10", minimum=-0.99, maximum=0.0)),
        seed_spread_p90=float(r.number("seed_spread_p90", minimum=0.0, maximum=10.0)),
        extrapolation_per_log_batch=float(r.number("extrapolation_per_log_batch", minimum=0.0, maximum=10.0)),
        n_benchmarks=int(r.integer("n_benchmarks", minimum=0, maximum=10**6)),
        n_heldout_points=int(r.integer("n_heldout_points", minimum=0, maximum=10**6)),
        source=str(r.string("source")),
    )


@functools.cache
def load_convergence_calibration(path: str | Path = CONVERGENCE_CALIBRATION_PATH) -> ConvergenceCalibration | None:
    """The committed calibration, or None when the file is absent (the fit then plans with the +/-15% assumption
    and no large-batch correction)."""
    if not Path(path).is_file():
        return None
    return parse_convergence_calibration(loader.load_file(path, CONVERGENCE_CALIBRATION_FILE), str(path))
