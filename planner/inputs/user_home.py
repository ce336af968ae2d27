"""Where a user's own data lives: $TRAINPLAN_HOME (default ~/.trainplan) and its folders.

Standard library only and below every module that reads or writes user data (userdata, shipped's bench_out_dir,
folders, imports, actuals): bench imports it through planner.inputs.shipped on a GPU box.
"""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("TRAINPLAN_HOME") or Path.home() / ".trainplan")


def user_results_dir() -> Path:
    return home() / "results"


def user_profiles_dir() -> Path:
    return home() / "gpu_profiles"


def user_scenarios_dir() -> Path:
    return home() / "scenarios"


def price_overrides_path() -> Path:
    return home() / "price_overrides.yaml"
