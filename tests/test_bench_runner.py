"""ui.bench_runner: `python -m bench detect|run` as real subprocesses (CPU, the tiny mlp), progress, cancel."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from planner.inputs.errors import InputError
from planner.inputs.resultfile import read_result_file
from planner.inputs.zoo_catalog import load_catalog
from ui import bench_runner as br


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(br.PYTHON_ENV, raising=False)
    return tmp_path / "home"


@pytest.fixture(scope="session")
def python_without_torch(tmp_path_factory) -> str:
    """A real interpreter with no site packages: what a user without torch has."""
    venv = tmp_path_factory.mktemp("notorch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def _wait_for(predicate, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.2)


# ---------------------------------------------------------------- requests

def test_batches_parse_and_bad_ones_are_named():
    assert br.parse_batches("32, 8,16 8") == (8, 16, 32)
    for bad in ("", "8,x", "0", "70000", ",".join(str(i) for i in range(1, 14))):
        with pytest.raises(InputError):
            br.parse_batches(bad)


def test_make_request_validates_each_field(home):
    catalog = load_catalog()
    req = br.make_request("mlp", catalog, ["bf16", "fp32"], "4,8", 3, 1, home / "results")
    assert req.precisions == ("fp32", "bf16") and req.batches == (4, 8)
    argv = req.argv("py")
    assert argv[:4] == ["py", "-m", "bench", "run"] and argv[-2:] == ["--events", "json"]
    assert argv[argv.index("--out") + 1] == str(home / "results")
    for kwargs, field in (({"model": "nope"}, "model"), ({"precisions": []}, "precisions"),
                          ({"steps": 0}, "steps"), ({"warmup": 0}, "warmup")):
        args = {"model": "mlp", "precisions": ["fp32"], "steps": 3, "warmup": 1, **kwargs}
        with pytest.raises(InputError) as e:
            br.make_request(args["model"], catalog, args["precisions"], "4", args["steps"], args["warmup"], "x")
        assert e.value.field == field


# ---------------------------------------------------------------- detect

def test_detect_on_this_machine_reports_the_cpu():
    found = br.detect()
    assert found.status == "ok", found.message
    assert found.device in ("cpu", "cuda")
    assert "torch" in found.facts and "nvml_available" in found.facts
    if found.device == "cpu":
        assert found.facts["cuda_reason"]


def test_detect_without_torch_says_so(python_without_torch):
    found = br.detect(python_without_torch)
    assert (found.status, found.missing, found.problem) == ("no_torch", "torch", None)  # an error event's key
    assert python_without_torch in found.message  # bench's own sentence names the interpreter
    assert br.install_command(python_without_torch).startswith(f"{python_without_torch} -m pip install torch==")


def test_detect_uses_the_configured_python(monkeypatch, python_without_torch):
    monkeypatch.setenv(br.PYTHON_ENV, python_without_torch)
    assert br.bench_python() == python_without_torch
    assert br.detect().status == "no_torch"


def test_detect_with_a_missing_interpreter_fails_cleanly(tmp_path):
    found = br.detect(str(tmp_path / "no-python"))
    assert found.status == "failed" and "cannot start" in found.message


# ---------------------------------------------------------------- run

def test_run_end_to_end_on_cpu_with_the_tiny_model(home):
    req = br.make_request("mlp", load_catalog(), ["fp32"], "4,8", 2, 1, home / "results")
    req = br.RunRequest(**{**req.__dict__, "phase_steps": 1})
    run = br.start_run(req)
    assert run.running and run.state == "running"
    assert run.wait(180) == 0
    assert run.state == "done"
    events, _ = run.snapshot()
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("progress") == 2
    assert run.progress() == (2, 2)
    path = Path(run.path)
    assert path.parent == home / "results" / "cpu" and path.exists()
    result = read_result_file(path)
    assert not result.partial
    assert [(m.precision, m.batch_size, m.status) for m in result.measurements] == [("fp32", 4, "ok"), ("fp32", 8, "ok")]
    assert br.active_run() is None


def test_cancel_keeps_what_was_measured_and_one_run_at_a_time(home):
    # 400 steps a batch: the run must outlast the first progress event and the cancel on a loaded CI machine
    req = br.RunRequest("mlp", ("fp32",), (2, 4, 8, 16, 32, 64), steps=400, warmup=1, phase_steps=1,
                        out=str(home / "results"))
    run = br.start_run(req)
    try:
        with pytest.raises(br.Busy):
            br.start_run(req)
        assert br.active_run() is run
        _wait_for(lambda: run.progress()[0] >= 1 or not run.running)
        run.cancel()
        assert run.wait(120) is not None
    finally:
        if run.running:
            run.proc.kill()
    assert run.state == "cancelled"
    kept = read_result_file(run.path)
    assert kept.partial
    measured = [m for m in kept.measurements if m.ok]
    assert 1 <= len(measured) < 6
    assert json.loads(Path(run.path).read_text())["partial"] is True
    assert run.last("interrupted") is not None
