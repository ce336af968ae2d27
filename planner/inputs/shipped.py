"""Where the shipped data folders (gpu_profiles/, results/, scenarios/) are: the checkout, else the installed copy.

In a checkout they sit at the repository root, next to planner/. `pip install .` copies them into the package
`trainplan_data` (pyproject.toml, [tool.setuptools.package-dir]), installed next to planner/ in site-packages, so
an installed `trainplan` works from any folder. Files inside a package (planner/inputs/*.json, the locales, the
report fonts) travel as its package data and are found next to their module; they need nothing here.
Standard library only: bench imports this on a GPU box.
"""

from __future__ import annotations

from pathlib import Path

from planner.inputs.user_home import user_results_dir

CODE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding planner/, bench/ and ui/
INSTALLED_DATA_PACKAGE = "trainplan_data"
FOLDERS = ("gpu_profiles", "results", "scenarios")


def data_root(code_root: Path = CODE_ROOT) -> Path:
    """The folder that holds gpu_profiles/, results/ and scenarios/: the checkout's root when there is one (so a
    checkout reads and writes its own folders), else the installed `trainplan_data` package beside planner/."""
    installed = code_root / INSTALLED_DATA_PACKAGE
    if not (code_root / FOLDERS[0]).is_dir() and (installed / FOLDERS[0]).is_dir():
        return installed
    return code_root


ROOT = data_root()
IN_CHECKOUT = ROOT == CODE_ROOT
PROFILES_DIR = ROOT / "gpu_profiles"
RESULTS_DIR = ROOT / "results"
SCENARIOS_DIR = ROOT / "scenarios"


def bench_out_dir(*, cpu: bool = False) -> Path:
    """Where bench writes result files unless told (--out): a GPU's in the checkout's results/ (files there are
    committed: REAL GPU data only), else $TRAINPLAN_HOME/results, which the app and the CLI read too (never into an
    installed package). A CPU run's always go to $TRAINPLAN_HOME/results: it is a smoke test of this machine, not data
    to commit (issue 34: CPU runs wrote into the repository's results/)."""
    return RESULTS_DIR if IN_CHECKOUT and not cpu else user_results_dir()
