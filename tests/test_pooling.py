"""Issue 34: measurements are combined, not overwritten (planner/engine/pooling.py; docs/methods.md#pooling).

Every fixture here is built in a temporary folder from tests/fixtures/make_fixtures.py's synthetic ResNet-50 on an
H100 (0.004 s + 0.42 ms per sample in bf16: 111.5 ms at batch 256)."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planner.engine import physics_bounds
from planner.engine.plan import build_plan
from planner.engine.pooling import AGREE_FLOOR, AGREE_K, Candidate, agree, folder_verdicts, pool
from planner.inputs.folders import load_inputs
from planner.inputs.scenario import parse_scenario
from planner.present.notes import render_note
from planner.present.planjson import option_to_dict
from planner.present.report import render_report
from tests.fixtures.make_fixtures import measurement_v2, resnet50_h100, result_v2
from tests.notes_support import detail_en

ROOT = Path(__file__).resolve().parent.parent
TODAY = dt.date(2026, 11, 29)
H100 = "h100-sxm-80gb-x1-bf16"
A100 = "a100-sxm-80gb-x1-bf16"
ORIGINAL = "resnet50-20261120T100000Z.json"


def _scenario():
    return parse_scenario({
        "schema": "trainplan.scenario/1", "name": "pooling",
        "model": {"name": "resnet50", "activation_bytes_per_sample": 1.1e8, "activation_precision": "bf16"},
        "training": {"global_batch": 256, "micro_batch": 256, "precisions": ["bf16"], "optimizer": "sgd_momentum"},
        "workload": {"dataset_samples": 1281167, "epochs": 90},
        "hardware": {"gpus": ["h100-sxm-80gb", "a100-sxm-80gb"], "gpu_counts": [1]},
    }, "pooling.yaml")


def _scaled(data: dict, factor: float, created: str) -> dict:
    """The same run with every time × factor (milliseconds written as seconds: × 1000), written later."""
    out = copy.deepcopy(data)
    out["created_utc"] = created
    for m in out["measurements"]:
        st = m["step_time_s"]
        for key in ("median", "p10", "p90", "mean", "std"):
            st[key] *= factor
        if "raw" in st:
            st["raw"] = [t * factor for t in st["raw"]]
        m["phases_s"] = {k: v * factor for k, v in m["phases_s"].items()}
        m["samples_per_s"] /= factor
    return out


def _write(folder: Path, data: dict) -> Path:
    stamp = data["created_utc"].replace("-", "").replace(":", "")
    path = folder / data["environment"]["gpu_profile_id"] / f"resnet50-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _plan(*folders: Path, trusted: frozenset[str] = frozenset()):
    inputs = load_inputs(list(folders), include_user_data=False)
    assert not inputs.result_problems  # every file here is valid: the reader's contract is unchanged
    inputs = dataclasses.replace(inputs, trusted_results=trusted)
    return build_plan(_scenario(), inputs, TODAY), inputs


def _notes(plan) -> list[str]:
    return [render_note(n, "en") for n in plan.assumptions]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    folder = tmp_path_factory.mktemp("original")
    _write(folder, resnet50_h100())
    return _plan(folder)[0]


def test_newer_x1000_file_is_set_aside_with_both_names(tmp_path, baseline):
    """A newer complete file with every time × 1000 used to win: 111.5 s 'measured' on the H100, and the A100
    inherited it 'transferred'."""
    _write(tmp_path, resnet50_h100())
    _write(tmp_path, _scaled(resnet50_h100(), 1000.0, "2026-11-25T10:00:00Z"))
    plan, _ = _plan(tmp_path)
    h100 = plan.option(H100)
    assert h100.step.source.kind == "measured"
    assert h100.step.micro_step_time_s == pytest.approx(baseline.option(H100).step.micro_step_time_s)
    assert "resnet50-20261125T100000Z.json" not in detail_en(h100.step.source)
    # the A100's transfer reads only the original: exactly the plan without the bad file
    assert plan.option(A100).step.step_time_s == pytest.approx(baseline.option(A100).step.step_time_s)
    aside = [n for n in _notes(plan) if "resnet50-20261125T100000Z.json" in n and "bf16 at batch 256" in n]
    assert len(aside) == 1 and ORIGINAL in aside[0] and "1e+03×" in aside[0], aside
    spanish = [render_note(n, "es-AR") for n in plan.assumptions]
    assert any("límites físicos" in n and ORIGINAL in n and "resnet50-20261125T100000Z.json" in n
               and "bf16 con lote 256" in n for n in spanish)


@pytest.mark.parametrize("slow_is_newer", [True, False])
def test_two_disagreeing_files_the_one_nearer_physics_is_used(tmp_path, baseline, slow_is_newer):
    """Two plausible files 1.5× apart (beyond 10 % and 3 × their spread): the one nearer the physics estimate,
    F / (P × default MFU), is used whichever is newer, and the note says so, naming both."""
    slow_created, fast_created = ("2026-11-25T10:00:00Z", "2026-11-20T10:00:00Z") if slow_is_newer else (
        "2026-11-20T10:00:00Z", "2026-11-25T10:00:00Z")
    fast = resnet50_h100()
    fast["created_utc"] = fast_created
    _write(tmp_path, fast)
    _write(tmp_path, _scaled(resnet50_h100(), 1.5, slow_created))
    plan, inputs = _plan(tmp_path)
    gpu = inputs.profiles["h100-sxm-80gb"]
    estimate = physics_bounds.typical_micro_s(2.46e10 * 256, gpu, "bf16", family="cnn")
    assert estimate is not None
    t_fast, t_slow = 0.004 + 0.00042 * 256, 1.5 * (0.004 + 0.00042 * 256)
    nearer = min((t_fast, t_slow), key=lambda t: abs(math.log(t / estimate)))
    assert plan.option(H100).step.micro_step_time_s == pytest.approx(
        baseline.option(H100).step.micro_step_time_s * nearer / t_fast)
    stamp = {t_fast: fast_created, t_slow: slow_created}
    used_name = f"resnet50-{stamp[nearer].replace('-', '').replace(':', '')}.json"
    other = t_slow if nearer == t_fast else t_fast
    aside_name = f"resnet50-{stamp[other].replace('-', '').replace(':', '')}.json"
    note = next(n for n in _notes(plan) if n.startswith(aside_name) and "bf16 at batch 256" in n)
    assert used_name in note and "nearer the physics estimate" in note
    assert ("1.5×" if other == t_slow else "0.667×") in note, note


def test_duplicates_count_once_whichever_folder(tmp_path, baseline):
    a, b = tmp_path / "shipped", tmp_path / "home"
    path = _write(a, resnet50_h100())
    (b / "h100-sxm-80gb").mkdir(parents=True)
    shutil.copy(path, b / "h100-sxm-80gb" / "renamed-copy.json")
    plan, inputs = _plan(a, b)
    assert len(inputs.results) == 2  # both read ...
    assert len(plan.result_files_used) == 1  # ... one counted
    h100 = plan.option(H100)
    assert "renamed-copy" not in detail_en(h100.step.source)
    assert h100.step.step_time_s == pytest.approx(baseline.option(H100).step.step_time_s)
    assert any("renamed-copy.json" in n and "same content" in n for n in _notes(plan))


def test_agreeing_files_are_pooled_with_every_file_named(tmp_path, baseline):
    _write(tmp_path, resnet50_h100())
    _write(tmp_path, _scaled(resnet50_h100(), 1.04, "2026-11-25T10:00:00Z"))
    plan, _ = _plan(tmp_path)
    h100 = plan.option(H100)
    source = detail_en(h100.step.source)
    assert ORIGINAL in source and "resnet50-20261125T100000Z.json" in source
    # the median of the two, between the original and its 4 % slower sibling
    t = baseline.option(H100).step.micro_step_time_s
    assert 1.01 * t < h100.step.micro_step_time_s < 1.03 * t
    assert not any("set aside" in n for n in _notes(plan))


def test_partial_file_is_labelled_in_plan_json_and_report(tmp_path):
    complete = resnet50_h100()
    complete["measurements"] = [m for m in complete["measurements"] if m["batch_size"] != 256]
    _write(tmp_path, complete)
    partial = resnet50_h100()
    partial.update(created_utc="2026-11-25T10:00:00Z", partial=True)
    partial["measurements"] = [m for m in partial["measurements"] if m["batch_size"] == 256]
    _write(tmp_path, partial)
    plan, _ = _plan(tmp_path)
    name = "resnet50-20261125T100000Z.json (2026-11-25)"
    for option_id in (H100, A100):  # its own GPU's figure, and the transfer resting on it
        step = plan.option(option_id).step
        assert "partial file" in detail_en(step.source) and name in detail_en(step.source)
        assert option_to_dict(plan.option(option_id))["partial_files"] == [name]
    report = render_report(plan, _scenario(), "markdown", "en", all_options=True)
    assert "from a partial file" in str(report)
    assert "de un archivo parcial" in str(render_report(plan, _scenario(), "markdown", "es", all_options=True))


def test_median_of_1e17_s_is_read_but_not_used(tmp_path):
    data = resnet50_h100()
    for m in data["measurements"]:
        if (m["precision"], m["batch_size"]) == ("bf16", 256):
            m["step_time_s"].update(median=1e17, p10=1e17, p90=1e17, mean=1e17)
    _write(tmp_path, data)
    plan, inputs = _plan(tmp_path)
    assert len(inputs.results) == 1  # inside the schema's bound (1e18): read
    h100 = plan.option(H100)
    assert h100.step.micro_step_time_s < 1.0  # not used: the other batches are fitted
    assert "1e+17" not in detail_en(h100.step.source)
    note = next(n for n in _notes(plan) if "outside the physics bounds" in n)
    assert ORIGINAL in note and "1e+17 s" in note and "batch 256" in note


def test_a_trusted_file_is_used_anyway(tmp_path, baseline):
    _write(tmp_path, resnet50_h100())
    newer = _write(tmp_path, _scaled(resnet50_h100(), 1000.0, "2026-11-25T10:00:00Z"))
    _, inputs = _plan(tmp_path)
    file_id = next(r.content_id for r in inputs.results if r.path == str(newer))
    plan, _ = _plan(tmp_path, trusted=frozenset({file_id}))
    assert plan.option(H100).step.micro_step_time_s == pytest.approx(1000 * baseline.option(H100).step.micro_step_time_s)
    assert any(n.startswith(ORIGINAL) and "which you chose to use" in n for n in _notes(plan))


def test_majority_sets_aside_the_odd_one_out():
    cands = [Candidate(f"id{i}", f"f{i}.json", f"2026-11-2{i}", t) for i, t in enumerate((1.0, 1.05, 2.0))]
    verdict = pool(cands, where={"gpu": "g", "precision": "bf16", "batch": 8})
    assert verdict.used == (0, 1)
    [(i, note)] = verdict.set_aside
    assert i == 2 and note.key == "point_set_aside_majority" and dict(note.items)["sibling"] == "f1.json"


def test_agreement_is_max_of_k_spread_and_ten_percent():
    a = Candidate("a", "a", "2026-11-20", 1.0, spread=0.05)
    assert agree(a, dataclasses.replace(a, median_s=math.exp(AGREE_K * 0.05) * 0.999))
    assert not agree(a, dataclasses.replace(a, median_s=math.exp(AGREE_K * 0.05) * 1.001))
    quiet = dataclasses.replace(a, spread=0.0)
    assert agree(quiet, dataclasses.replace(quiet, median_s=math.exp(AGREE_FLOOR) * 0.999))
    assert not agree(quiet, dataclasses.replace(quiet, median_s=math.exp(AGREE_FLOOR) * 1.001))


def test_checker_reports_the_same_verdicts(tmp_path):
    _write(tmp_path, resnet50_h100())
    _write(tmp_path, _scaled(resnet50_h100(), 1000.0, "2026-11-25T10:00:00Z"))
    copy_dir = tmp_path / "zz-copy" / "h100-sxm-80gb"  # scanned after the original: the copy is the repeat
    copy_dir.mkdir(parents=True)
    shutil.copy(tmp_path / "h100-sxm-80gb" / ORIGINAL, copy_dir / "again.json")
    proc = subprocess.run([sys.executable, "-m", "planner", "results", "check", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    aside = [ln for ln in lines if ln.startswith("resnet50-20261125T100000Z.json") and "bf16 at batch 256" in ln]
    assert len(aside) == 1 and ORIGINAL in aside[0] and "outside the physics bounds" in aside[0]
    assert any(ln.startswith("h100-sxm-80gb, resnet50, bf16 (pytorch_eager) at batch 256: 1 file(s) pooled")
               for ln in lines)
    assert any("again.json" in ln and "same content" in ln for ln in lines)
    # the same verdicts as a plan reads: a folder of agreeing files passes
    clean = tmp_path / "clean"
    _write(clean, resnet50_h100())
    ok = subprocess.run([sys.executable, "-m", "planner", "results", "check", str(clean), "--lang", "es"],
                        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ok.returncode == 0 and "archivo(s) combinados" in ok.stdout


def test_checker_names_a_missing_folder(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "planner", "results", "check", str(tmp_path / "nope")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "nope" in proc.stderr and "Traceback" not in proc.stderr


def test_folder_verdicts_match_the_plan(tmp_path):
    """The checker and the plan judge with one function: the set-aside file of one is the set-aside file of the
    other."""
    _write(tmp_path, resnet50_h100())
    _write(tmp_path, _scaled(resnet50_h100(), 1.5, "2026-11-25T10:00:00Z"))
    plan, inputs = _plan(tmp_path)
    fv = folder_verdicts(inputs.results, inputs.profiles)
    group = next(g for g in fv.groups if (g.precision, g.batch_size) == ("bf16", 256))
    [(i, _)] = group.verdict.set_aside
    assert not any(group.candidates[i].label.split(" ")[0] in s for s in [detail_en(plan.option(H100).step.source)])


def test_v2_spread_widens_agreement(tmp_path):
    """A noisy /2 file (IQR/median 12 %) agrees with a sibling 30 % away (3 × 12 % = 36 % > ln 1.3)."""
    a = result_v2("resnet50", "h100-sxm-80gb", [measurement_v2("bf16", 256, 0.1115, 1e9, spread=0.12)])
    b = result_v2("resnet50", "h100-sxm-80gb", [measurement_v2("bf16", 256, 0.1115 * 1.3, 1e9, spread=0.02)],
                  created="2026-11-26T10:00:00Z")
    alone = []
    for data in (a, b):
        _write(tmp_path / data["created_utc"][:10], data)
        _write(tmp_path / "both", data)
        alone.append(_plan(tmp_path / data["created_utc"][:10])[0].option(H100).step.micro_step_time_s)
    plan, _ = _plan(tmp_path / "both")
    assert not any("set aside" in n for n in _notes(plan))
    source = detail_en(plan.option(H100).step.source)
    assert "2026-11-21" in source and "2026-11-26" in source
    assert alone[0] < plan.option(H100).step.micro_step_time_s < alone[1]


def test_benchmarks_page_shows_set_aside_points_and_a_session_can_use_one(tmp_path, monkeypatch, baseline):
    """The app lists the set-aside point with why (both files), and a file chosen there reaches every plan of the
    session as data (Inputs.trusted_results)."""
    from streamlit.testing.v1 import AppTest

    from ui import page_data

    home = tmp_path / "home"
    monkeypatch.setenv("TRAINPLAN_HOME", str(home))
    _write(home / "results", resnet50_h100())
    newer = _write(home / "results", _scaled(resnet50_h100(), 1000.0, "2026-11-25T10:00:00Z"))
    at = AppTest.from_file(str(ROOT / "ui" / "benchmarks_page.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value.replace("\\", "") for w in at.warning]
    bf16 = [w for w in warnings if "bf16 at batch 256" in w]
    assert len(bf16) == 1 and "resnet50-20261125T100000Z.json" in bf16[0] and ORIGINAL in bf16[0]
    file_id = next(i for i in at.multiselect(key="bench_trust").options if "20261125" in i)
    at.multiselect(key="bench_trust").set_value([file_id.rsplit("[", 1)[1].rstrip("]")])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    chosen = list(at.session_state[page_data.TRUSTED_KEY])
    assert chosen == [next(r.content_id for r in load_inputs([home / "results"], include_user_data=False).results
                           if r.path.endswith(newer.name))]
    scenario = _scenario()
    plan = page_data._plan(repr(scenario), page_data.inputs_fingerprint(), TODAY.isoformat(), "test",
                           tuple(chosen), scenario)
    assert plan.option(H100).step.micro_step_time_s == pytest.approx(
        1000 * baseline.option(H100).step.micro_step_time_s)
