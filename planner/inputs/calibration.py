"""The step-time calibration the analytic path uses (planner/inputs/step_calibration.json, written by
`python calibration/calibrate.py` from the published corpus): its parameters, what they were fitted on, and its residuals.
Data only; the model and the fit are planner/engine/calibration.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from planner.inputs import loader
from planner.inputs.check import Reader

SCHEMA = "trainplan.step-calibration/1"
CALIBRATION_PATH = Path(__file__).resolve().parent / "step_calibration.json"
CALIBRATION_FILE = loader.FileKind("step-time calibration (JSON)", "json", 1 * loader.MIB)


@dataclass(frozen=True)
class StepCalibration:
    """t(fwd+bwd) = F / (P_dense(precision) × e[group] × f[precision]) + traffic × A / BW.

    e: the fraction of the dense peak an architecture group reaches on the corpus's runs; f: a factor for tf32 and
    fp32 relative to 16-bit (1 for fp16/bf16); traffic: DRAM bytes moved per byte of stored activations (one global
    number: writes in the forward, reads in the backward, the elementwise passes in between); A: the activation bytes
    of the micro-batch (planner memory model); BW: the profile's memory bandwidth.
    """

    compute_efficiency: Mapping[str, float]
    precision_factor: Mapping[str, float]
    activation_traffic: float
    prior_efficiency: float  # for an architecture group without data: the fitted ones' 25th percentile (flagged)
    residual_p10: float  # held-out (leave-one-source-out) error quantiles: predicted / published - 1
    residual_p90: float
    fitted_on: str  # date of the fit (YYYY-MM-DD)
    n_points: int
    sources: tuple[str, ...]
    counts: Mapping[str, int] = field(default_factory=dict)  # points per architecture group
    # Held-out errors of the transfer path (leave one GPU out): the range a transferred time is given.
    transfer_residual_p10: float | None = None
    transfer_residual_p90: float | None = None
    # The launch term's cost per kernel-launching op the fit used (planner/engine/steptime.py LAUNCH_S_PER_OP, a cited
    # figure, not fitted); None in a file written before the launch term (the engine's constant then applies).
    launch_s_per_op: float | None = None
    # Step-time multiplier of each software stack against plain eager PyTorch (planner.vocab.SOFTWARE_STACKS; 1 for
    # pytorch_eager and any stack not listed): cited priors (calibration/stack_priors.yaml) refined by the corpus's
    # same-source pairs of stacks (calibration/stack_priors.py). The roofline above is fitted on eager-equivalent times.
    stack_factor: Mapping[str, float] = field(default_factory=dict)
    stack_basis: Mapping[str, str] = field(default_factory=dict)  # per stack: "prior" or "prior + N pairs"

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "fitted_on": self.fitted_on, "n_points": self.n_points,
                "n_params": len(self.compute_efficiency) + len(self.precision_factor) + 1,
                "sources": list(self.sources), "points_per_group": dict(sorted(self.counts.items())),
                "compute_efficiency": {k: round(v, 4) for k, v in sorted(self.compute_efficiency.items())},
                "precision_factor": {k: round(v, 4) for k, v in sorted(self.precision_factor.items())},
                "activation_traffic": round(self.activation_traffic, 3),
                **({} if self.launch_s_per_op is None else {"launch_s_per_op": self.launch_s_per_op}),
                "prior_efficiency": round(self.prior_efficiency, 4),
                "heldout_residual_p10": round(self.residual_p10, 4),
                "heldout_residual_p90": round(self.residual_p90, 4),
                "transfer_residual_p10": None if self.transfer_residual_p10 is None else
                round(self.transfer_residual_p10, 4),
                "transfer_residual_p90": None if self.transfer_residual_p90 is None else
                round(self.transfer_residual_p90, 4),
                **({"stack_factor": {k: round(v, 4) for k, v in sorted(self.stack_factor.items())},
                    "stack_basis": dict(sorted(self.stack_basis.items()))} if self.stack_factor else {})}


def parse_calibration(data: object, source: str) -> StepCalibration:
    r = Reader(data, source)
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)

    def numbers(key: str, lo: float, hi: float) -> Mapping[str, float]:
        sub = r.sub(key)
        if sub is None:
            raise r.fail(key, None, "an object of numbers")
        return MappingProxyType({k: float(sub.number(k, minimum=lo, maximum=hi)) for k in sub.data})

    counts = r.sub("points_per_group")
    fitted = r.date("fitted_on")
    return StepCalibration(
        compute_efficiency=numbers("compute_efficiency", 0.01, 1.0),
        precision_factor=numbers("precision_factor", 0.1, 10.0),
        activation_traffic=float(r.number("activation_traffic", minimum=0.0, maximum=1000.0)),
        prior_efficiency=float(r.number("prior_efficiency", minimum=0.01, maximum=1.0)),
        residual_p10=float(r.number("heldout_residual_p10", minimum=-1.0, maximum=10.0)),
        residual_p90=float(r.number("heldout_residual_p90", minimum=-1.0, maximum=10.0)),
        fitted_on=fitted.isoformat() if isinstance(fitted, dt.date) else str(fitted),
        n_points=int(r.integer("n_points", minimum=0, maximum=10**7)),
        sources=tuple(str(s) for s in r.list_of("sources", max_items=1000)),
        counts=MappingProxyType({k: int(counts.integer(k, minimum=0, maximum=10**7)) for k in counts.data})
        if counts else MappingProxyType({}),
        transfer_residual_p10=r.number("transfer_residual_p10", None, minimum=-1.0, maximum=10.0),
        transfer_residual_p90=r.number("transfer_residual_p90", None, minimum=-1.0, maximum=10.0),
        launch_s_per_op=r.number("launch_s_per_op", None, minimum=0.0, maximum=1e-3),
        stack_factor=numbers("stack_factor", 0.05, 20.0) if "stack_factor" in r.data else MappingProxyType({}),
        stack_basis=MappingProxyType({str(k): str(v) for k, v in r.data["stack_basis"].items()})
        if isinstance(r.data.get("stack_basis"), dict) else MappingProxyType({}),
    )


def load_calibration(path: str | Path = CALIBRATION_PATH) -> StepCalibration | None:
    """The committed calibration, or None when the file is absent (plans fall back to the default MFUs)."""
    if not Path(path).is_file():
        return None
    return parse_calibration(loader.load_file(path, CALIBRATION_FILE), str(path))
