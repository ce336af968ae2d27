"""Every input a plan reads besides the scenario: shipped (or given) folders + $TRAINPLAN_HOME, read once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from planner.inputs.errors import InputError
from planner.inputs.profiles import GpuProfile, PriceQuote, load_profiles
from planner.inputs.resultfile import ResultFile, scan_results
from planner.inputs.userdata import (
    SHIPPED_PROFILES_DIR,
    SHIPPED_RESULTS_DIR,
    load_price_overrides,
    user_profiles_dir,
    user_results_dir,
)


@dataclass(frozen=True)
class Inputs:
    """Everything a plan reads besides the scenario: profiles, result files, user price overrides."""

    profiles: dict[str, GpuProfile]
    results: tuple[ResultFile, ...] = ()
    price_overrides: dict[str, list[PriceQuote]] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    profile_dirs: tuple[str, ...] = ()
    result_dirs: tuple[str, ...] = ()


def load_inputs(result_dirs: Sequence[str | Path] | None = None, profile_dirs: Sequence[str | Path] | None = None,
                include_user_data: bool = True) -> Inputs:
    """Shipped folders (or the given ones) + $TRAINPLAN_HOME; bad files become problems, never hide the rest."""
    rdirs = [Path(d) for d in (result_dirs or [SHIPPED_RESULTS_DIR])]
    pdirs = [Path(d) for d in (profile_dirs or [SHIPPED_PROFILES_DIR])]
    overrides: dict[str, list[PriceQuote]] = {}
    problems: list[str] = []
    if include_user_data:
        rdirs.append(user_results_dir())
        pdirs.append(user_profiles_dir())
        try:
            overrides = load_price_overrides()
        except InputError as exc:
            problems.append(str(exc))
    profiles, profile_problems = load_profiles(*[d for d in pdirs if d.is_dir()])
    results, result_problems = scan_results(*rdirs)
    return Inputs(
        profiles=profiles, results=tuple(results), price_overrides=overrides,
        problems=tuple(profile_problems + result_problems + problems),
        profile_dirs=tuple(str(d) for d in pdirs), result_dirs=tuple(str(d) for d in rdirs),
    )
