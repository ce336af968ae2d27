"""Every input a plan reads besides the scenario: shipped (or given) folders + $TRAINPLAN_HOME, read once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planner.inputs.calibration import StepCalibration, load_calibration
from planner.inputs.errors import InputError, skipped
from planner.inputs.networks import EMPTY as EMPTY_NETWORKS
from planner.inputs.networks import NetworkTable, load_networks
from planner.inputs.profiles import GpuProfile, PriceQuote, load_profiles
from planner.inputs.resultfile import ResultFile, scan_results
from planner.inputs.storage import EMPTY as EMPTY_STORAGE
from planner.inputs.storage import StorageTable, load_storage
from planner.inputs.userdata import (
    SHIPPED_PROFILES_DIR,
    SHIPPED_RESULTS_DIR,
    load_price_overrides,
    price_overrides_path,
    user_profiles_dir,
    user_results_dir,
)


@dataclass(frozen=True)
class Inputs:
    """Everything a plan reads besides the scenario: profiles, result files, user price overrides."""

    profiles: dict[str, GpuProfile]
    results: tuple[ResultFile, ...] = ()
    price_overrides: dict[str, list[PriceQuote]] = field(default_factory=dict)
    profile_dirs: tuple[str, ...] = ()
    result_dirs: tuple[str, ...] = ()
    # Files that were skipped, one message each naming the file and why, by the kind of file: each page shows the
    # kinds it reads (never chosen by matching message text).
    profile_problems: tuple[str, ...] = ()
    result_problems: tuple[str, ...] = ()
    override_problems: tuple[str, ...] = ()
    # The fitted analytic step time (planner/inputs/step_calibration.json); None: the default MFUs.
    calibration: StepCalibration | None = None
    # The network between a provider's instances (gpu_profiles/catalog/networks.yaml): how jobs spread over
    # separate rentals are timed. Empty: such jobs are left out (their network is unknown).
    networks: NetworkTable = EMPTY_NETWORKS
    # Storage and egress prices per provider (gpu_profiles/catalog/storage.yaml): the data line of a cost. Empty:
    # a plan with workload.dataset_gb says which prices it lacks.
    storage: StorageTable = EMPTY_STORAGE
    # Result files (ResultFile.content_id) whose set-aside step times the user chose to use anyway (the app's
    # Benchmarks page; docs/methods.md#pooling): data the engine reads, never a setting of its own.
    trusted_results: frozenset[str] = frozenset()

    @property
    def problems(self) -> tuple[str, ...]:
        """Every skipped file: a plan lists them all in its warnings."""
        return self.profile_problems + self.result_problems + self.override_problems


def with_shipped(shipped: Path, given: Sequence[str | Path] | None, *, keep_shipped: bool = True) -> list[Path]:
    """The folders a command line names: the shipped one plus those given (--results DIR, --profiles DIR add to the
    shipped data), or only those given (--no-shipped-results, --no-shipped-profiles)."""
    return _distinct([*([shipped] if keep_shipped else []), *(Path(d) for d in given or ())])


def _distinct(dirs: Sequence[Path]) -> list[Path]:
    """Each folder once, first place kept: the shipped folder named again (or $TRAINPLAN_HOME's) is read once."""
    seen: set[Path] = set()
    out = []
    for d in dirs:
        key = d.resolve()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def load_inputs(result_dirs: Sequence[str | Path] | None = None, profile_dirs: Sequence[str | Path] | None = None,
                include_user_data: bool = True) -> Inputs:
    """Shipped folders (or the given ones) + $TRAINPLAN_HOME; bad files become problems, never hide the rest."""
    rdirs = [Path(d) for d in (result_dirs or [SHIPPED_RESULTS_DIR])]
    pdirs = [Path(d) for d in (profile_dirs or [SHIPPED_PROFILES_DIR])]
    overrides: dict[str, list[PriceQuote]] = {}
    override_problems: list[str] = []
    if include_user_data:
        rdirs.append(user_results_dir())
        pdirs.append(user_profiles_dir())
        try:
            overrides = load_price_overrides()
        except InputError as exc:
            override_problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a broken user file must never stop a plan
            override_problems.append(skipped(price_overrides_path(), exc))
    rdirs, pdirs = _distinct(rdirs), _distinct(pdirs)
    profiles, profile_problems = load_profiles(*pdirs)
    results, result_problems = scan_results(*rdirs)
    calibration = None
    try:
        calibration = load_calibration()
    except InputError as exc:  # a broken calibration file: plans use the default MFUs and say why
        result_problems.append(str(exc))
    networks = EMPTY_NETWORKS
    try:
        networks = load_networks()
    except InputError as exc:  # broken: jobs over separate rentals are left out, and the plan says why
        profile_problems.append(str(exc))
    storage = EMPTY_STORAGE
    try:
        storage = load_storage()
    except InputError as exc:  # broken: data lines say their prices are missing, and the plan lists the file
        profile_problems.append(str(exc))
    return Inputs(
        profiles=profiles, results=tuple(results), price_overrides=overrides,
        profile_dirs=tuple(str(d) for d in pdirs), result_dirs=tuple(str(d) for d in rdirs),
        profile_problems=tuple(profile_problems), result_problems=tuple(result_problems),
        override_problems=tuple(override_problems), calibration=calibration, networks=networks, storage=storage,
    )
