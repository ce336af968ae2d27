"""Result-file schema: round trip, atomic never-overwriting writes, bad files named, scan keeps the good ones."""

from __future__ import annotations

import copy
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.engine.notes import Note
from planner.engine.plan import build_plan
from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.resultfile import (
    SCHEMA,
    SCHEMA_V1,
    Parallelism,
    parse_result,
    read_result_file,
    replace_result_atomic,
    result_path,
    scan_results,
    write_result_atomic,
)
from planner.inputs.scenario import parse_scenario
from planner.vocab import LEGACY_STACKS
from tests.fixtures.make_fixtures import (
    BENCH2,
    FIXTURE_FILES,
    measurement,
    measurement_v2,
    published_file,
    published_row,
    resnet50_h100,
    resnet50_h100_v2,
    result,
    result_v2,
)
from tests.notes_support import english

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


# ---------------------------------------------------------------- schema /2

def test_fixture_files_are_what_make_fixtures_writes():
    for path, make in FIXTURE_FILES.items():
        assert json.loads(path.read_text()) == make(), f"{path}: re-run python -m tests.fixtures.make_fixtures"


def test_v2_round_trip(tmp_path):
    data = resnet50_h100_v2()
    path = write_result_atomic(data, result_path(tmp_path, "h100-sxm-80gb", "resnet50", data["created_utc"]))
    assert json.loads(path.read_text()) == data
    rf = read_result_file(path)
    assert rf.schema == SCHEMA == "trainplan.bench/2" and not rf.partial and rf.missing == ()
    assert rf.environment["trainplan_version"] == "0.1.0" and rf.environment["cudnn"] == 91002
    assert rf.environment["cpu_threads"] == {"torch_num_threads": 16, "os_cpu_count": 32}
    assert rf.settings["command"][:4] == ["python", "-m", "bench", "run"]
    assert rf.settings["requested"]["batch_sizes"] == [64, 128, 256]
    m = rf.measurements[0]
    assert len(m.step_time_s.raw) == m.step_time_s.n == 21 and m.provenance is None
    assert m.step_time_s.median == pytest.approx(0.004 + 0.00042 * 64)
    assert [(m.precision, m.batch_size) for m in rf.measurements if m.noisy] == [("bf16", 256)]
    assert rf.warnings == ("bf16 batch 256: noisy step times",)
    assert rf.max_batch[0]["safe_batch"] == 984 and rf.max_batch[0]["safe_confirmed"] is True


@pytest.mark.parametrize("path", [
    ROOT / "tests" / "fixtures" / "results" / "h100-sxm-80gb" / "resnet50-20261120T100000Z.json",  # measured /1
    ROOT / "tests" / "fixtures" / "traced_v1" / "resnet50-20261129T202235Z.json",  # a /1 trace, as bench wrote it
])
def test_a_v1_file_still_reads_as_before(path):
    rf = read_result_file(path)
    raw = json.loads(Path(path).read_text())
    assert rf.schema == SCHEMA_V1 and rf.missing == () and rf.warnings == ()
    assert len(rf.measurements) == len(raw["measurements"])
    for m, row in zip(rf.measurements, raw["measurements"], strict=True):
        assert (m.precision, m.batch_size, m.status, m.peak_allocated_bytes) == (
            row["precision"], row["batch_size"], row["status"], row["peak_allocated_bytes"])
        assert not m.noisy and m.provenance is None and m.parallelism is None
        assert m.step_time_s is None or (m.step_time_s.raw == () and m.step_time_s.iqr_over_median is None)


def test_a_v1_file_is_not_checked_for_v2_fields_and_cannot_be_published():
    data = resnet50_h100()
    data["measurements"][0]["provenance"] = {"kind": "nonsense"}  # /1: an unknown extra field, tolerated
    data["measurements"][0]["noisy"] = "yes"
    assert parse_result(data, "v1.json").measurements[0].provenance is None
    data["measurements"][1]["source"] = "published"
    with pytest.raises(InputError) as err:
        parse_result(data, "v1.json")
    assert err.value.field == "measurements[1].source"


def test_a_partial_file_names_what_is_missing():
    data = resnet50_h100_v2()
    data["partial"] = True
    data["measurements"] = data["measurements"][:2]
    data["missing"] = [{"precision": "bf16", "batch_size": 256, "reason": "interrupted (Ctrl-C)"},
                       {"precision": "fp32", "batch_size": None, "reason": "batch sizes not chosen yet"}]
    rf = parse_result(data, "partial.json")
    assert rf.partial and [(x.precision, x.batch_size, x.reason) for x in rf.missing] == [
        ("bf16", 256, "interrupted (Ctrl-C)"), ("fp32", None, "batch sizes not chosen yet")]
    data["partial"] = False
    with pytest.raises(InputError) as err:
        parse_result(data, "partial.json")
    assert err.value.field == "missing" and "complete file" in str(err.value)


@pytest.mark.parametrize("spread, noisy", [(0.12, True), (0.05, False), (0.02, False)])
def test_the_noise_flag_follows_the_raw_times(spread, noisy):
    row = measurement_v2("bf16", 64, 0.03, 2e9, spread=spread)
    assert row["noisy"] is noisy
    m = parse_result(result_v2("resnet50", "h100-sxm-80gb", [row]), "n.json").measurements[0]
    assert m.noisy is noisy and m.iqr_pct == pytest.approx(100 * spread)
    row["noisy"] = not noisy  # a flag that contradicts the raw times
    with pytest.raises(InputError) as err:
        parse_result(result_v2("resnet50", "h100-sxm-80gb", [row]), "n.json")
    assert err.value.field == "measurements[0].noisy" and "IQR/median" in str(err.value)


@pytest.mark.parametrize("mutate, field", [
    (lambda st: st.update(median=st["median"] * 1.01), "measurements[0].step_time_s.median"),
    (lambda st: st.update(n=20), "measurements[0].step_time_s.n"),
    (lambda st: st["raw"].__setitem__(3, -0.1), "measurements[0].step_time_s.raw[3]"),
    (lambda st: st.update(raw="fast"), "measurements[0].step_time_s.raw"),
    (lambda st: st.update(iqr_over_median=0.5), "measurements[0].step_time_s.iqr_over_median"),
])
def test_raw_step_times_must_agree_with_the_statistics(mutate, field):
    data = resnet50_h100_v2()
    mutate(data["measurements"][0]["step_time_s"])
    with pytest.raises(InputError) as err:
        parse_result(data, "r.json")
    assert err.value.field == field


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["environment"].pop("trainplan_version"), "environment.trainplan_version"),
    (lambda d: d["environment"].update(cudnn=None), "environment.cudnn"),
    (lambda d: d["environment"].update(cpu_threads={"torch_num_threads": 0}), "environment.cpu_threads.torch_num_threads"),
    (lambda d: d["settings"].update(command="python -m bench"), "settings.command"),
    (lambda d: d["settings"]["requested"].update(precisions=["fp8"]), "settings.requested.precisions[0]"),
    (lambda d: d["settings"]["requested"].update(batch_sizes=[0]), "settings.requested.batch_sizes[0]"),
    (lambda d: d.update(partial=True, missing=[{"precision": "tf32", "batch_size": 8, "reason": "x"}]),
     "missing[0].precision"),  # tf32 was not requested
    (lambda d: d.update(warnings="noisy"), "warnings"),
    (lambda d: d["max_batch"][0].update(safe_batch=2000), "max_batch[0].safe_batch"),
    (lambda d: d["max_batch"][0].update(safe_batch=None), "max_batch[0].safe_confirmed"),
])
def test_v2_fields_are_validated(mutate, field):
    data = resnet50_h100_v2()
    mutate(data)
    with pytest.raises(InputError) as err:
        parse_result(data, "r2.json")
    assert err.value.field == field and "r2.json" in str(err.value)


def test_cudnn_may_be_null_with_a_reason():
    data = resnet50_h100_v2()
    data["environment"].update(cudnn=None, unmeasured={"cudnn": "a CPU build of torch"})
    assert parse_result(data, "r.json").environment["cudnn"] is None


# ---------------------------------------------------------------- provenance (published measurements)

def test_a_published_measurement_reads_with_its_provenance():
    rf = read_result_file(BENCH2 / "published" / "resnet50-20261125T120000Z.json")
    m = rf.measurements[0]
    assert m.source == "published" and m.step_time_s is None and m.gpu_count == 8
    assert m.parallelism == Parallelism("ddp", 1, 1) and (m.global_batch, m.micro_batch) == (2048, 256)
    p = m.provenance
    assert p.kind == "published" and p.source.startswith("example-org/example-benchmarks@")
    assert p.retrieved == dt.date(2026, 11, 25) and p.published.value == 23200.0
    assert p.published.unit == "samples_per_s"
    # the fixture's stack is a class bench/2 files carried before issue 32: read, kept as written, no stack named
    assert p.stack is None and p.stack_as_written == "optimized_pytorch"


@pytest.mark.parametrize("drop", ["provenance", "provenance.source"])
def test_a_published_measurement_without_its_source_is_rejected(drop):
    data = published_file()
    row = data["measurements"][0]
    if drop == "provenance":
        del row["provenance"]
    else:
        del row["provenance"]["source"]
    with pytest.raises(InputError) as err:
        parse_result(data, "results/published/x.json")
    assert err.value.field == "measurements[0].provenance.source"
    assert "results/published/x.json" in str(err.value) and "repository@commit:path" in str(err.value)


@pytest.mark.parametrize("key, value", [
    ("kind", "scraped"), ("stack", "jax"), ("precision_effective", "fp8"), ("memory_meaning", "nvidia_smi"),
    ("published", {"value": 1.0, "unit": "images_per_s"}),
])
def test_unknown_provenance_values_are_rejected(key, value):
    data = published_file()
    data["measurements"][0]["provenance"][key] = value
    with pytest.raises(InputError) as err:
        parse_result(data, "p.json")
    field = f"measurements[0].provenance.{key}" + (".unit" if key == "published" else "")
    assert err.value.field == field and "one of" in str(err.value)


@pytest.mark.parametrize("key, value", [
    ("parallelism", {"data": "megatron"}), ("attention", "xformers"), ("batch_unit", "sequences"),
])
def test_unknown_configuration_values_are_rejected(key, value):
    data = published_file()
    data["measurements"][0][key] = value
    with pytest.raises(InputError) as err:
        parse_result(data, "p.json")
    assert err.value.field.startswith(f"measurements[0].{key}") and "one of" in str(err.value)


@pytest.mark.parametrize("change, field", [
    (lambda p, m: p.update(source="somewhere on the internet"), "provenance.source"),
    (lambda p, m: p.update(source="https://example.org/paper.pdf"), "provenance.source"),  # no table/row
    (lambda p, m: p.pop("sha256"), "provenance.sha256"),
    (lambda p, m: p.update(sha256="abc"), "provenance.sha256"),
    (lambda p, m: p.update(lines=41), "provenance.source"),  # #L40-L42 beyond the file's 41 lines
    (lambda p, m: p.update(precision_effective="fp16"), "provenance.precision_effective"),  # the row says bf16
    (lambda p, m: p.pop("precision_reason"), "provenance.precision_reason"),
    (lambda p, m: p.pop("published"), "provenance.published"),
    (lambda p, m: p.pop("retrieved"), "provenance.retrieved"),
    (lambda p, m: p.update(kind="measured"), "provenance.kind"),  # disagrees with the row's source
    (lambda p, m: m.update(peak_reserved_bytes=7e10), "provenance.memory_meaning"),
    (lambda p, m: m.pop("gpu_count"), "gpu_count"),
    (lambda p, m: m.pop("batch_unit"), "batch_unit"),
])
def test_a_published_row_must_be_checkable(change, field):
    data = published_file()
    row = data["measurements"][0]
    change(row["provenance"], row)
    with pytest.raises(InputError) as err:
        parse_result(data, "p.json")
    assert err.value.field == f"measurements[0].{field}"


def test_a_url_source_with_its_table_and_memory_with_its_meaning_are_accepted():
    row = published_row()
    row["provenance"].update(source="https://arxiv.org/abs/2104.04473 Table 1, row 3", memory_meaning="device_used")
    del row["provenance"]["sha256"], row["provenance"]["lines"]
    row["device_used_bytes"] = 7.1e10
    m = parse_result(result_v2("resnet50", "a100-sxm-80gb", [row]), "u.json").measurements[0]
    assert m.provenance.memory_meaning == "device_used" and m.provenance.sha256 is None


def test_measured_rows_may_carry_provenance_of_their_own_kind():
    data = resnet50_h100_v2()
    data["measurements"][0]["provenance"] = {"kind": "measured", "stack": "torch_compile"}
    assert parse_result(data, "m.json").measurements[0].provenance.stack == "torch_compile"


@pytest.mark.parametrize(("written", "read"), [("vanilla_pytorch", "pytorch_eager"), ("optimized_pytorch", None),
                                               ("other_framework", None), ("pytorch_eager", "pytorch_eager"),
                                               ("vendor_container", "vendor_container")])
def test_a_stack_written_before_issue_32_still_reads(written, read):
    """bench/2's three coarse classes stay valid: vanilla_pytorch is plain eager PyTorch, the other two name no stack
    (None, no error); the value as written is kept for whoever shows the file."""
    data = resnet50_h100_v2()
    data["measurements"][0]["provenance"] = {"kind": "measured", "stack": written}
    p = parse_result(data, "m.json").measurements[0].provenance
    assert (p.stack, p.stack_as_written) == (read, written)
    assert set(LEGACY_STACKS) == {"vanilla_pytorch", "optimized_pytorch", "other_framework"}


# ---------------------------------------------------------------- the noise note reaches a plan

def _noise_scenario(precision: str, batch: int = 256):
    return parse_scenario({
        "schema": "trainplan.scenario/1", "name": "noise",
        "model": {"name": "resnet50", "activation_bytes_per_sample": 1.1e8, "activation_precision": "bf16"},
        "training": {"global_batch": batch, "micro_batch": batch, "precisions": [precision],
                     "optimizer": "sgd_momentum"},
        "workload": {"dataset_samples": 1281167, "epochs": 90},
        "hardware": {"gpus": ["h100-sxm-80gb", "a100-sxm-80gb"], "gpu_counts": [1]},
    }, "noise.yaml")


def test_a_plan_that_uses_a_noisy_measurement_says_so(tmp_path):
    results = tmp_path / "results"
    write_result_atomic(resnet50_h100_v2(), results / "h100-sxm-80gb" / "resnet50-20261121T100000Z.json")
    inputs = load_inputs([results], include_user_data=False)
    plan = build_plan(_noise_scenario("bf16"), inputs, dt.date(2026, 11, 29))
    note = Note("noisy_measurement", file="resnet50-20261121T100000Z.json (2026-11-21)", iqr_pct=12.0)
    h100, a100 = plan.option("h100-sxm-80gb-x1-bf16"), plan.option("a100-sxm-80gb-x1-bf16")
    assert h100.step.source.kind == "measured" and note in h100.notes
    assert a100.step.source.kind == "transferred" and note in a100.notes  # the transfer rests on it too
    assert "12" in english(note) and "noisy" in english(note)
    quiet = build_plan(_noise_scenario("fp32"), inputs, dt.date(2026, 11, 29))
    assert not any(n.key == "noisy_measurement" for o in quiet.options for n in o.notes if isinstance(n, Note))


def test_a_noisy_point_the_plan_does_not_use_adds_no_note(tmp_path):
    data = resnet50_h100_v2()
    data["measurements"] = [copy.deepcopy(m) for m in data["measurements"] if m["precision"] == "bf16"]
    write_result_atomic(data, tmp_path / "h100-sxm-80gb" / "r.json")
    plan = build_plan(_noise_scenario("bf16", batch=128), load_inputs([tmp_path], include_user_data=False),
                      dt.date(2026, 11, 29))
    option = plan.option("h100-sxm-80gb-x1-bf16")
    assert option.step.source.kind == "measured" and option.micro_batch == 128
    assert not any(isinstance(n, Note) and n.key == "noisy_measurement" for n in option.notes)


def test_the_benchmarks_page_rows_show_the_safe_batch_and_whether_a_repeat_run_confirmed_it():
    from types import SimpleNamespace

    from planner.present.result_views import max_batch_rows

    r = SimpleNamespace(max_batch=({"precision": "bf16", "max_batch": 128, "safe_batch": 112, "safe_confirmed": True,
                                    "trials": [{"batch_size": 128, "status": "ok"}]},
                                   {"precision": "fp32", "max_batch": 64, "safe_batch": 56, "safe_confirmed": False},
                                   {"precision": "fp16", "max_batch": 32}), max_batch_reasons=((), (), ()))
    assert [row["safe_batch"] for row in max_batch_rows(r)] == ["112 ✓", "56 ?", "—"]
