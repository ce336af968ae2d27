"""`--results DIR` and `--profiles DIR` add to the shipped data; `--no-shipped-results`/`--no-shipped-profiles` make
them replace it (issue 34: --results replaced the shipped results, so pointing at a team folder lost every shipped
measurement)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import cli
from planner.inputs.folders import with_shipped
from tests.fixtures.bad.make_bad import profile_text, scenario_text
from tests.fixtures.make_fixtures import resnet50_h100  # a file the scenario's plan measures with

ROOT = Path(__file__).resolve().parents[1]
TEAM_RESULT = "team-20261120T100000Z.json"


@pytest.fixture
def folders(tmp_path):
    """A scenario, a team result folder with one valid file and a team profile folder with one new GPU."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(scenario_text(hardware="hardware:\n  gpus: all\n  gpu_counts: [1]"), encoding="utf-8")
    results = tmp_path / "team-results"
    (results / "h100-sxm-80gb").mkdir(parents=True)
    (results / "h100-sxm-80gb" / TEAM_RESULT).write_text(json.dumps(resnet50_h100()), encoding="utf-8")
    profiles = tmp_path / "team-profiles"
    profiles.mkdir()
    (profiles / "lab-gpu.yaml").write_text(profile_text("lab-gpu"), encoding="utf-8")
    return scenario, results, profiles


def _plan(capsys, *args: str) -> dict:
    assert cli.run([*args, "--format", "json", "--no-user-data"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _shipped_result_names() -> set[str]:
    return {p.name for p in (ROOT / "results").rglob("*.json")}


def test_results_and_profiles_add_to_the_shipped_ones(folders, capsys):
    scenario, results, profiles = folders
    plain = _plan(capsys, str(scenario))
    added = _plan(capsys, str(scenario), "--results", str(results), "--profiles", str(profiles))
    names = {Path(p).name for p in added["inputs"]["result_files"]}
    assert TEAM_RESULT in names
    assert {Path(p).name for p in plain["inputs"]["result_files"]} <= names  # nothing shipped was lost
    assert set(added["inputs"]["profiles"]) == set(plain["inputs"]["profiles"]) | {"lab-gpu"}
    assert any(o["gpu_id"] == "lab-gpu" for o in added["options"])


def test_no_shipped_flags_make_the_given_folders_replace_the_shipped_ones(folders, capsys):
    scenario, results, profiles = folders
    only = _plan(capsys, str(scenario), "--results", str(results), "--no-shipped-results",
                 "--profiles", str(profiles), "--no-shipped-profiles")
    assert [Path(p).name for p in only["inputs"]["result_files"]] in ([], [TEAM_RESULT])
    assert not {Path(p).name for p in only["inputs"]["result_files"]} & _shipped_result_names()
    assert list(only["inputs"]["profiles"]) == ["lab-gpu"]
    assert {o["gpu_id"] for o in only["options"]} == {"lab-gpu"}


@pytest.mark.parametrize("flag, needs", [("--no-shipped-results", "--results DIR"),
                                         ("--no-shipped-profiles", "--profiles DIR")])
def test_a_no_shipped_flag_without_a_folder_is_one_clear_error(folders, capsys, flag, needs):
    scenario, _, _ = folders
    assert cli.run([str(scenario), flag, "--no-user-data"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {flag}:") and needs in err and len(err.splitlines()) == 1


def test_the_shipped_folder_named_again_is_read_once(tmp_path):
    shipped = ROOT / "gpu_profiles"
    assert with_shipped(shipped, [str(shipped), str(ROOT / "results" / ".." / "gpu_profiles")]) == [shipped]
    assert with_shipped(shipped, [str(tmp_path), str(tmp_path)], keep_shipped=False) == [tmp_path]


def test_naming_the_shipped_profiles_again_adds_no_duplicate_warning(folders, capsys):
    scenario, _, profiles = folders
    assert cli.run([str(scenario), "--profiles", str(ROOT / "gpu_profiles"), "--profiles", str(profiles),
                    "--format", "json", "--no-user-data"]) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err, out.err
    assert "lab-gpu" in json.loads(out.out)["inputs"]["profiles"]
