"""The app ↔ bench event stream (planner/inputs/bench_events.py), both ways: what `python -m bench ... --events json`
writes is what the app reads, by keys; a stream in another protocol, or none at all, is a clear failure."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.events import Events, from_argv
from planner.inputs.bench_events import ERROR_KEYS, PROTOCOL, EventReader, StreamProblem, read_events
from ui import bench_runner as br

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(br.PYTHON_ENV, raising=False)
    return tmp_path / "home"


def _bench(*argv: str, python: str = sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def _fake_interpreter(path: Path, lines: list[str], code: int = 0) -> str:
    """An 'interpreter' that prints these stdout lines whatever it is asked, and exits with `code`."""
    path.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + f"\nEOF\nexit {code}\n")
    path.chmod(0o755)
    return str(path)


# ---------------------------------------------------------------- bench writes, the reader reads

@pytest.mark.parametrize("entry", [("bench", "trace"), ("bench.trace",)], ids=["bench trace", "bench.trace"])
def test_a_trace_streams_its_file_in_the_protocol(tmp_path, entry):
    r = _bench(*entry, "--model", "mlp", "--precision", "fp32", "--batch", "2,4", "--out", str(tmp_path),
               "--events", "json")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert json.loads(first) == {"protocol": PROTOCOL}
    events, problem = read_events(r.stdout.splitlines())
    assert problem is None
    assert [e["event"] for e in events] == ["done"]
    assert Path(events[0]["path"]).is_file() and events[0]["failed"] == 0
    assert "wrote" not in r.stdout  # the human lines go to stderr: stdout is the stream alone


def test_bad_input_is_an_error_event_with_its_field(tmp_path):
    r = _bench("bench", "trace", "--model", "nope", "--precision", "fp32", "--batch", "2", "--out", str(tmp_path),
               "--events", "json")
    assert r.returncode == 2
    events, problem = read_events(r.stdout.splitlines())
    assert problem is None
    (error,) = events
    assert (error["event"], error["key"], error["field"], error["value"]) == ("error", "bad_input", "--model",
                                                                              "'nope'")


def test_detect_streams_its_facts():
    r = _bench("bench", "detect", "--events", "json")
    events, problem = read_events(r.stdout.splitlines())
    assert r.returncode == 0 and problem is None
    assert events[-1]["event"] == "done" and events[-1]["facts"]["device"] in ("cpu", "cuda")


def test_a_missing_torch_is_an_event_before_any_command_runs(tmp_path):
    """The stream starts before the command's module is imported, so an interpreter without torch still speaks
    the protocol (what the Benchmarks page turns into its install instructions)."""
    venv = tmp_path / "notorch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    r = _bench("bench", "detect", "--events", "json", python=python)
    assert r.returncode == 2
    events, problem = read_events(r.stdout.splitlines())
    assert problem is None
    assert [(e["event"], e["key"], e["module"], e["python"]) for e in events] == [
        ("error", "missing_module", "torch", python)]


def test_the_events_flag_is_only_taken_as_json():
    assert from_argv(["--model", "mlp", "--events", "json"])[0] == ["--model", "mlp"]
    rest, events = from_argv(["--events", "xml", "--model", "mlp"])
    assert events is None and rest == ["--events", "xml", "--model", "mlp"]  # left for the parser to refuse


def test_every_error_key_bench_writes_is_a_key_of_the_contract():
    """An error event's key decides what the app does: bench may only write keys the contract names."""
    written = set()
    for path in sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "error" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                written.add(node.args[0].value)
    assert written and written <= set(ERROR_KEYS), written - set(ERROR_KEYS)
    with pytest.raises(ValueError):
        Events(out=open("/dev/null", "w")).error("made_up", "no such key")  # noqa: SIM115


# ---------------------------------------------------------------- the reader refuses what it cannot read

def test_another_protocol_is_named_and_not_read():
    events, problem = read_events(['{"protocol": "trainplan.bench-events/2"}', '{"event": "done", "path": "x"}'])
    assert events == [] and problem == StreamProblem("unknown_protocol", "trainplan.bench-events/2")


@pytest.mark.parametrize("lines", [
    [],
    ['{"event": "done", "path": "x"}'],  # the stream of an older bench (--progress-json before the header)
    ["Traceback (most recent call last):", "ModuleNotFoundError: No module named 'bench'"],
], ids=["empty", "no header", "a crash"])
def test_a_stream_without_the_header_is_a_problem(lines):
    events, problem = read_events(lines)
    assert events == [] and problem == StreamProblem("no_header")


def test_unknown_events_and_fields_and_stray_lines_are_tolerated():
    """Additive within a version: a newer bench's extra event or field, or a library's print, breaks nothing."""
    reader = EventReader()
    lines = [json.dumps({"protocol": PROTOCOL}), "some library says hello",
             json.dumps({"event": "progress", "done": 1, "total": 2, "new_field": True}),
             json.dumps({"event": "telemetry", "watts": 300}), json.dumps({"event": "done", "path": "p"})]
    got = [e for e in map(reader.feed, lines) if e is not None]
    assert [e["event"] for e in got] == ["progress", "telemetry", "done"]
    assert reader.finish() is None and reader.other_lines == ["some library says hello"]


# ---------------------------------------------------------------- the app, on streams it cannot read

def test_detect_names_another_protocol(tmp_path):
    python = _fake_interpreter(tmp_path / "py", ['{"protocol": "trainplan.bench-events/9"}',
                                                 '{"event": "done", "facts": {"device": "cpu"}}'])
    found = br.detect(python)
    assert found.status == "failed" and found.problem == StreamProblem("unknown_protocol",
                                                                       "trainplan.bench-events/9")


def test_a_trace_that_crashed_before_its_stream_fails_with_what_it_printed():
    out = br._trace_outcome("py", 1, "", "Traceback (most recent call last):\n  File x\nKeyError: 'a'\n"
                            "bench trace: the tracer died from signal 9", 0.1)
    assert (out.status, out.problem) == ("failed", StreamProblem("no_header"))
    assert out.message == "bench trace: the tracer died from signal 9"


def test_a_run_in_another_protocol_fails(tmp_path):
    python = _fake_interpreter(tmp_path / "py", ['{"protocol": "trainplan.bench-events/2"}',
                                                 '{"event": "done", "path": "/nowhere"}'])
    run = br.BenchRun(br.RunRequest("mlp", ("fp32",), (4,), out=str(tmp_path)), python).start()
    assert run.wait(timeout_s=30) == 0
    assert run.state == "failed" and run.problem == StreamProblem("unknown_protocol", "trainplan.bench-events/2")
    assert run.snapshot()[0] == []  # nothing of that stream is taken as an event
