"""Result-file schema: round trip, atomic never-overwriting writes, bad files named, scan keeps the good ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.inputs.errors import InputError
from planner.inputs.resultfile import (
    parse_result,
    read_result_file,
    replace_result_atomic,
    result_path,
    scan_results,
    write_result_atomic,
)
from tests.fixtures.make_fixtures import measurement, resnet50_h100, result

ROOT = Path(__file__).resolve().parent.parent


def test_round_trip(tmp_path):
    data = resnet50_h100()
    path = write_result_atomic(data, result_path(tmp_path, "h100-sxm-80gb", "resnet50", data["created_utc"]))
    assert path.name == "resnet50-20261120T100000Z.json"
    rf = read_result_file(path)
    assert rf.gpu_profile_id == "h100-sxm-80gb" and rf.model_name == "resnet50"
    assert len(rf.measurements) == 12
    m = rf.measurements[0]
    assert m.step_time_s.median == pytest.approx(0.004 + 0.00042 * 64)
    assert json.loads(path.read_text()) == data


def test_writer_never_overwrites(tmp_path):
    data = resnet50_h100()
    target = tmp_path / "x" / "r.json"
    first = write_result_atomic(data, target)
    second = write_result_atomic(data, target)
    assert first != second and first.exists() and second.exists()
    assert second.name == "r-2.json"
    assert not list(target.parent.glob(".tmp-*"))


def test_replace_grows_a_partial_file(tmp_path):
    data = resnet50_h100()
    data["partial"] = True
    data["measurements"] = data["measurements"][:1]
    p = replace_result_atomic(data, tmp_path / "run.json")
    assert read_result_file(p).partial
    data["measurements"] = resnet50_h100()["measurements"]
    data["partial"] = False
    replace_result_atomic(data, p)
    rf = read_result_file(p)
    assert not rf.partial and len(rf.measurements) == 12


def test_unknown_extra_fields_are_tolerated():
    data = resnet50_h100()
    data["future_section"] = {"x": 1}
    data["measurements"][0]["new_metric"] = 3.5
    assert parse_result(data, "f.json").measurements[0].batch_size == 64


def test_truncated_file_is_named(tmp_path):
    p = tmp_path / "cut.json"
    text = json.dumps(resnet50_h100())
    p.write_text(text[: len(text) // 2])
    with pytest.raises(InputError) as err:
        read_result_file(p)
    assert "cut.json" in str(err.value) and "truncated" in str(err.value)


def test_wrong_type_in_one_measurement_names_the_field():
    data = resnet50_h100()
    data["measurements"][3]["peak_allocated_bytes"] = "lots"
    with pytest.raises(InputError) as err:
        parse_result(data, "bad.json")
    assert err.value.field == "measurements[3].peak_allocated_bytes"


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(schema="other/1"), "schema"),
    (lambda d: d["environment"].update(device="tpu"), "environment.device"),
    (lambda d: d["measurements"][0].update(precision="fp8"), "measurements[0].precision"),
    (lambda d: d["measurements"][0].update(batch_size=0), "measurements[0].batch_size"),
    (lambda d: d["measurements"][0].update(status="fine"), "measurements[0].status"),
    (lambda d: d["measurements"][0].update(step_time_s=None), "measurements[0].step_time_s"),
    (lambda d: d["measurements"][0]["step_time_s"].update(median=-1), "measurements[0].step_time_s.median"),
    (lambda d: d.update(created_utc="yesterday"), "created_utc"),
    (lambda d: d["model"].update(name=""), "model.name"),
    (lambda d: d.update(max_batch=[{"precision": "bf16", "max_batch": -3}]), "max_batch[0].max_batch"),
])
def test_validation_names_file_and_field(mutate, field):
    data = resnet50_h100()
    mutate(data)
    with pytest.raises(InputError) as err:
        parse_result(data, "r.json")
    assert err.value.field == field and "r.json" in str(err.value)


def test_unmeasured_is_null_not_zero_and_oom_rows_need_no_timing():
    data = result("mlp", None, [measurement("fp32", 8, 0.01, None)], device="cpu")
    data["measurements"].append({"source": "measured", "precision": "bf16", "batch_size": 4096, "status": "oom",
                                 "reason": "CUDA out of memory"})
    rf = parse_result(data, "cpu.json")
    assert rf.measurements[0].peak_allocated_bytes is None
    assert rf.measurements[1].status == "oom" and rf.measurements[1].step_time_s is None


def test_scan_keeps_good_files_and_lists_bad_ones(tmp_path):
    good = write_result_atomic(resnet50_h100(), tmp_path / "h100-sxm-80gb" / "a.json")
    (tmp_path / "h100-sxm-80gb" / "b.json").write_text("{not json")
    bad = resnet50_h100()
    bad["measurements"][0]["precision"] = "int4"
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "c.json").write_text(json.dumps(bad))
    files, problems = scan_results(tmp_path)
    assert [Path(f.path) for f in files] == [good]
    assert len(problems) == 2
    assert any("b.json" in p for p in problems) and any("c.json" in p and "precision" in p for p in problems)


def test_shipped_results_are_all_valid():
    files, problems = scan_results(ROOT / "results")
    assert problems == []
    for f in files:
        assert "fixture" not in f.environment.get("hostname", ""), f"synthetic file in results/: {f.path}"


def test_resultfile_module_needs_only_the_standard_library():
    code = ("import sys; import planner.inputs.resultfile; "
            "bad = [m for m in ('yaml','pandas','torch','streamlit','pynvml') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_import_planner_pulls_in_no_torch_streamlit_or_pynvml():
    code = ("import sys; import planner, planner.engine.plan, planner.cli, planner.present.planjson; "
            "print([m for m in ('torch','streamlit','pynvml') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
