"""planner.inputs.imports: a teammate's result file is validated, then copied under $TRAINPLAN_HOME/results/<device dir>/."""

from __future__ import annotations

import copy
import json

import pytest

from planner.inputs.errors import InputError
from planner.inputs.folders import load_inputs
from planner.inputs.imports import MAX_IMPORT_BYTES, device_dir, import_result
from planner.inputs.resultfile import parse_result
from tests.fixtures.make_fixtures import measurement, resnet50_h100, result


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _bytes(data: dict) -> bytes:
    return json.dumps(data).encode("utf-8")


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_a_good_file_lands_under_its_gpu_folder_and_the_planner_reads_it(home):
    data = resnet50_h100()
    done = import_result("teammate.json", _bytes(data))
    assert done.path == home / "results" / "h100-sxm-80gb" / "resnet50-20261120T100000Z.json"
    assert not done.already_there
    assert json.loads(done.path.read_text()) == data
    inputs = load_inputs()
    assert str(done.path) in [r.path for r in inputs.results]
    assert not [p for p in inputs.problems if str(home) in p]


def test_the_same_file_twice_writes_nothing_new(home):
    first = import_result("a.json", _bytes(resnet50_h100()))
    again = import_result("a-copy.json", _bytes(resnet50_h100()))
    assert again.already_there and again.path == first.path
    assert _files(home) == ["results/h100-sxm-80gb/resnet50-20261120T100000Z.json"]


def test_a_different_file_with_the_same_name_never_overwrites(home):
    first = import_result("a.json", _bytes(resnet50_h100()))
    other = resnet50_h100()
    other["measurements"] = other["measurements"][:2]
    second = import_result("b.json", _bytes(other))
    assert second.path.name == "resnet50-20261120T100000Z-2.json"
    assert json.loads(first.path.read_text()) == resnet50_h100()
    assert json.loads(second.path.read_text()) == other


@pytest.mark.parametrize("env, expected", [
    ({"device": "cpu", "gpu_profile_id": None, "gpu_name": None}, "cpu"),
    ({"device": "cuda", "gpu_profile_id": None, "gpu_name": "NVIDIA GeForce RTX 5090"}, "unknown-nvidia-geforce-rtx-5090"),
    ({"device": "cuda", "gpu_profile_id": "l4-24gb", "gpu_name": "NVIDIA L4"}, "l4-24gb"),
])
def test_device_folder(env, expected, home):
    data = resnet50_h100()
    data["environment"].update(env)
    assert device_dir(parse_result(data, "x.json")) == expected
    assert import_result("x.json", _bytes(data)).path.parent == home / "results" / expected


def test_a_traced_file_goes_to_traced(home):
    data = result("gpt2", None, [measurement("bf16", 8, 0.0, 5e9, source="traced")], device="cpu")
    assert import_result("trace.json", _bytes(data)).path.parent == home / "results" / "traced"


def _broken(change) -> bytes:
    data = copy.deepcopy(resnet50_h100())
    change(data)
    return _bytes(data)


@pytest.mark.parametrize("data, field, words", [
    (b"{\"schema\": \"trainplan.bench/1\", \"created_utc\": ", None, "truncated"),
    (b"not json at all", None, "JSON error"),
    (b"", None, "empty"),
    (b"\xff\xfe\x00bad", None, "UTF-8"),
    (b"[1, 2, 3]", None, "JSON object"),
    (_broken(lambda d: d.update(schema="trainplan.bench/0")), "schema", "trainplan.bench/1"),
    (_broken(lambda d: d["measurements"][3].update(batch_size=0)), "measurements[3].batch_size", "integer between 1 and"),
    (_broken(lambda d: d["measurements"][0].update(status="fine")), "measurements[0].status", "ok, oom"),
    (_broken(lambda d: d["environment"].update(device="tpu")), "environment.device", "cuda or cpu"),
    (_broken(lambda d: d["environment"].update(notes=float("nan"))), None, "finite numbers"),
])
def test_a_bad_file_names_the_problem_and_nothing_is_touched(data, field, words, home, tmp_path):
    import_result("keep.json", _bytes(resnet50_h100()))
    before = _files(home)
    with pytest.raises(InputError) as e:
        import_result("teammate.json", data)
    assert e.value.source == "teammate.json"
    assert e.value.field == (field or "")
    assert words in str(e.value)
    assert _files(home) == before


def test_size_limit(home):
    with pytest.raises(InputError, match="at most 64 MiB"):
        import_result("big.json", b" " * (MAX_IMPORT_BYTES + 1))
    assert not home.exists()
