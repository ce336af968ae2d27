"""No command writes nothing over something (issue 34): a writer that read no rows, quotes, measurements or points
exits 2 (or raises InputError where the app calls it) with one message naming what was empty and where, and the file
it would have written is byte-for-byte what it was. One test per writer; the rule's owner is
planner.inputs.atomic.refuse_empty."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.inputs.atomic import NothingToWrite, refuse_empty
from planner.inputs.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "fixtures" / "published_example"
BUILT = "results/published/a100-sxm-80gb/example-bench__resnet50.json"
CSV_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region," \
             "AvailabilityZone,Arch\n"


def _cli(module: str, *args: str, home: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if home is not None:
        env["TRAINPLAN_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)


def _existing(path: Path, text: str = "the good file that was here before\n") -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


def _refused(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    for word in words:
        assert word in line, (word, line)
    assert "nothing was written" in line, line
    return line


def test_the_rule_names_what_was_empty_where_and_the_file_kept():
    refuse_empty(1, what="rows", source="a.csv", target="b.yaml")  # something read: no objection
    with pytest.raises(NothingToWrite) as err:
        refuse_empty(0, what="catalog rows", source="prices/", target="snap.yaml")
    assert isinstance(err.value, InputError)  # every CLI's bad-input path: exit 2
    assert str(err.value) == "prices/: read no catalog rows; nothing was written (snap.yaml is unchanged)"
    with pytest.raises(NothingToWrite, match="nothing was written \\(no file was made\\)"):
        refuse_empty(0, what="measurements", source="upload.json")


# ---------------------------------------------------------------- python -m planner prices import

def test_prices_import_of_a_folder_without_csv_keeps_the_snapshot(tmp_path):
    (tmp_path / "typo").mkdir()
    snap = tmp_path / "snapshot.yaml"
    before = _existing(snap)
    done = _cli("planner", "prices", "import", str(tmp_path / "typo"), "--out", str(snap))
    _refused(done, str(tmp_path / "typo"), "vms.csv files", f"{snap} is unchanged")
    assert snap.read_bytes() == before
    assert "quotes written" not in done.stderr


def test_prices_import_of_a_catalog_with_only_a_header_keeps_the_snapshot(tmp_path):
    csv = tmp_path / "aws" / "vms.csv"
    csv.parent.mkdir()
    csv.write_text(CSV_HEADER, encoding="utf-8")
    snap = tmp_path / "snapshot.yaml"
    before = _existing(snap)
    _refused(_cli("planner", "prices", "import", str(csv), "--out", str(snap)), str(csv), "catalog rows")
    assert snap.read_bytes() == before


def test_prices_import_of_rows_that_give_no_quote_keeps_the_snapshot(tmp_path):
    csv = tmp_path / "aws" / "vms.csv"
    csv.parent.mkdir()
    csv.write_text(CSV_HEADER + "m5.large,,,2,8,,0.096,0.04,us-east-1,us-east-1a,x86_64\n", encoding="utf-8")
    snap = tmp_path / "snapshot.yaml"
    before = _existing(snap)
    line = _refused(_cli("planner", "prices", "import", str(csv), "--out", str(snap)), "GPU quotes",
                    "1 rows read, 0 GPU rows")
    assert str(csv) in line and snap.read_bytes() == before


# ---------------------------------------------------------------- python -m planner prices refresh

def test_prices_refresh_of_a_provider_whose_offers_give_no_quote_keeps_todays_snapshot(tmp_path, monkeypatch,
                                                                                       capsys):
    from planner.cli import _run_prices
    from planner.inputs import price_refresh as pr

    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    offers = json.loads((ROOT / "tests" / "fixtures" / "gpuhunt" / "offers.json").read_text())["offers"]

    def fetcher(edit=None):
        def fetch(providers):
            items = [dict(o) for o in offers if o["provider"] in providers]
            return pr.Fetched(version=pr.GPUHUNT_PIN, offers={"aws": [edit(o) if edit else o for o in items]},
                              failed={})
        return fetch

    assert _run_prices(["refresh", "--providers", "aws"], fetcher=fetcher()) == 0
    [snap] = (tmp_path / "home" / "gpu_profiles" / "catalog").iterdir()
    assert snap.name == f"gpuhunt-{dt.date.today().isoformat()}-aws.yaml"
    before = snap.read_bytes()
    capsys.readouterr()

    def unknown_gpu(o: dict) -> dict:
        return {**o, "gpu_name": "NoSuchAccelerator9000"}

    assert _run_prices(["refresh", "--providers", "aws"], fetcher=fetcher(unknown_gpu)) == 2
    err = capsys.readouterr().err
    assert "aws:" in err and "none gave a quote" in err and "nothing was written" in err, err
    assert snap.read_bytes() == before


# ---------------------------------------------------------------- python -m bench published build

def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    return corpus


def test_published_build_of_a_root_without_transcriptions_keeps_the_result_files(tmp_path):
    corpus = _corpus(tmp_path)
    (corpus / "sources" / "example-bench.yaml").unlink()  # e.g. --root naming the wrong folder
    before = (corpus / BUILT).read_bytes()
    done = _cli("bench", "published", "build", "--root", str(corpus))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{corpus / 'sources'}: no transcriptions (*.yaml) found" in done.stderr
    assert (corpus / BUILT).read_bytes() == before


def test_published_build_with_no_buildable_row_keeps_the_out_folder(tmp_path):
    corpus = _corpus(tmp_path)
    source = corpus / "sources" / "example-bench.yaml"
    text = source.read_text(encoding="utf-8")
    # every row an out-of-memory note: read, listed, never built -> build would have removed every file it owns
    source.write_text(text.replace("gpu_profile_id: a100-sxm-80gb", "gpu_profile_id: null"), encoding="utf-8")
    out = tmp_path / "out"
    built = out / "a100-sxm-80gb" / "example-bench__resnet50.json"
    before = _existing(built)
    done = _cli("bench", "published", "build", "--root", str(corpus), "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "read no rows that build into a result file" in done.stderr and f"({out} is unchanged)" in done.stderr
    assert built.read_bytes() == before


# ---------------------------------------------------------------- the calibration writers

def test_calibrate_with_no_published_point_keeps_the_calibration(tmp_path, monkeypatch, capsys):
    from calibration import calibrate
    from calibration import calibration_report as report

    (tmp_path / "published").mkdir()
    target = tmp_path / "step_calibration.json"
    before = _existing(target, (ROOT / "planner" / "inputs" / "step_calibration.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report, "PUBLISHED", tmp_path / "published")
    monkeypatch.setattr(calibrate, "CALIBRATION_PATH", target)
    assert calibrate.main([]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'published'}: read no one-GPU published points to fit (0 result files read)" in err
    assert f"({target} is unchanged)" in err
    assert target.read_bytes() == before


def test_calibration_report_write_with_no_result_file_keeps_the_metrics(tmp_path, monkeypatch, capsys):
    from calibration import calibration_report as report

    (tmp_path / "published").mkdir()
    target = tmp_path / "calibration_metrics.json"
    before = _existing(target, (ROOT / "calibration" / "calibration_metrics.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(report, "PUBLISHED", tmp_path / "published")
    monkeypatch.setattr(report, "METRICS_PATH", target)
    assert report.main(["--write"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'published'}: read no result files; nothing was written ({target} is unchanged)" in err
    assert target.read_bytes() == before


def test_convergence_report_write_with_no_benchmark_keeps_both_files(tmp_path, monkeypatch, capsys):
    from calibration import convergence_report as conv

    calibration = tmp_path / "convergence_calibration.json"
    metrics = tmp_path / "convergence_metrics.json"
    before = (_existing(calibration), _existing(metrics))
    monkeypatch.setattr(conv, "CONVERGENCE_CALIBRATION_PATH", calibration)
    monkeypatch.setattr(conv, "METRICS_PATH", metrics)
    monkeypatch.setattr(conv, "load_sources", lambda: {"commit": "0" * 40, "benchmarks": {}})
    assert conv.main(["--write"]) == 2
    err = capsys.readouterr().err
    assert "SOURCES.yaml: read no benchmarks (SOURCES.yaml lists none); nothing was written" in err
    assert (calibration.read_bytes(), metrics.read_bytes()) == before


# ---------------------------------------------------------------- importing and recording runs (the app's writers)

def test_importing_a_result_file_with_no_measurements_is_refused(tmp_path):
    from planner.inputs.imports import import_result
    from tests.fixtures.bad.make_bad import result_doc

    doc = {**result_doc(), "measurements": []}
    root = tmp_path / "results"
    kept = _existing(root / "h100-sxm-80gb" / "badcase-20261120T100000Z.json")
    with pytest.raises(NothingToWrite) as err:
        import_result("empty.json", json.dumps(doc).encode("utf-8"), root=root)
    assert str(err.value) == ("empty.json: read no measurements (its 'measurements' list is empty); nothing was "
                              "written (no file was made)")
    assert sorted(p.name for p in root.rglob("*") if p.is_file()) == ["badcase-20261120T100000Z.json"]
    assert (root / "h100-sxm-80gb" / "badcase-20261120T100000Z.json").read_bytes() == kept


def test_recording_a_run_with_no_figure_is_refused(tmp_path):
    from planner.inputs import actuals as ia

    day = dt.date(2026, 12, 1)
    predicted = ia.Predicted("trainplan.plan/2", "0.1.0", day, step_time_s=0.5, hours=20.0, cost_usd=100.0)
    run = ia.RecordedRun(day, "s", {}, ia.RunOption("h100-sxm-80gb-x1-bf16", "h100-sxm-80gb", 1, "bf16", 8, 8),
                         ia.RunModel("resnet50", 25557032), ia.ActualFigures(), predicted)
    folder, results = tmp_path / "actuals", tmp_path / "results"
    kept = _existing(folder / "earlier.yaml")
    with pytest.raises(InputError) as err:
        ia.save_run(run, folder=folder, results_root=results)
    assert str(err.value).startswith("recorded run: actual: got None; expected at least one of step_time_s, hours, "
                                     "cost_usd")
    assert [p.name for p in folder.iterdir()] == ["earlier.yaml"] and not results.exists()
    assert (folder / "earlier.yaml").read_bytes() == kept


# ---------------------------------------------------------------- python -m planner --out

def test_planner_out_with_no_option_to_plan_keeps_the_report(tmp_path):
    (tmp_path / "no-profiles").mkdir()
    out = tmp_path / "plan.md"
    before = _existing(out)
    done = _cli("planner", str(ROOT / "scenarios" / "resnet50-imagenet.yaml"), "--no-user-data", "--format",
                "markdown", "--no-shipped-profiles", "--profiles", str(tmp_path / "no-profiles"), "--out", str(out))
    _refused(done, "resnet50-imagenet.yaml", "read no plan options", str(tmp_path / "no-profiles"),
             f"{out} is unchanged")
    assert out.read_bytes() == before
