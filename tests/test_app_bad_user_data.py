"""A broken file under $TRAINPLAN_HOME shows one message naming it on the page that reads it, never a traceback,
and the Plan page still plans when the broken file is not needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

# (what is broken, where it lives under $TRAINPLAN_HOME, its text)
BROKEN = {
    "price_overrides": ("price_overrides.yaml", "h100-sxm-80gb:\n  - {provider: me, usd_per_gpu_hour: [1,\n"),
    "price_date": ("price_overrides.yaml",
                   "h100-sxm-80gb:\n  - {provider: me, instance: x, usd_per_gpu_hour: 1.5, tier: on_demand, "
                   "as_of: 2026-13-01, source: mine}\n"),
    "profile": ("gpu_profiles/broken-gpu.yaml", "id: broken-gpu\nname: [unclosed\n"),
    "result": ("results/cpu/broken-20261201T000000Z.json", '{"schema": "trainplan.bench/1", "measurements": [' * 3),
    "saved_scenario": ("scenarios/broken.yaml", "schema: trainplan.scenario/1\nmodel: {name: [\n"),
}

# Which page must name which broken file (the pages that read it).
PAGES = {
    "plan": ("price_overrides", "price_date"),
    "gpus": ("price_overrides", "price_date", "profile"),
    "benchmarks": ("result",),
    "compare": ("saved_scenario",),
    "report": ("price_overrides", "price_date"),
}
CASES = [(page, broken) for page, kinds in PAGES.items() for broken in kinds]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _break(home: Path, kind: str) -> str:
    rel, text = BROKEN[kind]
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path.name


def _all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [w.value for w in at.warning]
    parts += [i.value for i in at.info] + [c.value for c in at.caption] + [s.value for s in at.subheader]
    for exp in at.expander:
        parts += [m.value for m in exp.markdown]
    for df in at.dataframe:
        parts.append(json.dumps(df.value.astype(str).values.tolist(), ensure_ascii=False))
    return "\n".join(parts).replace("\\", "")


def _open(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "ui" / f"{page}_page.py"), default_timeout=120)
    at.run()
    return at


@pytest.mark.parametrize("page,kind", CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_the_page_that_reads_a_broken_file_names_it(home, page, kind):
    name = _break(home, kind)
    at = _open(page)
    assert not at.exception, [e.value for e in at.exception]
    assert name in _all_text(at), f"{page} page does not name {name}"


@pytest.mark.parametrize("kind", ["profile", "result", "saved_scenario"])
def test_the_plan_page_still_plans_when_the_broken_file_is_not_needed(home, kind):
    _break(home, kind)
    at = _open("plan")
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value.replace("\\", "").startswith("Recommended: ") for s in at.subheader)


def test_train_for_tokens_with_a_model_without_a_sequence_length_names_the_field(home):
    """Issue 13: 'Train for: tokens' with a CNN was an internal error; now the page names the field to fix."""
    at = _open("plan")
    at.radio(key="work_kind").set_value("tokens").run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error).replace("\\", "")
    assert "workload.tokens" in errors and "sequence length" in errors
    assert "internal" not in errors.lower()


def test_tokens_with_a_cnn_is_bad_input_in_the_cli(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setenv("TRAINPLAN_HOME", str(tmp_path / "home"))
    text = (ROOT / "scenarios" / "resnet50-imagenet.yaml").read_text(encoding="utf-8")
    scenario = tmp_path / "cnn-tokens.yaml"
    scenario.write_text(text.replace("epochs: 90", "tokens: 1.0e9"), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "planner", str(scenario), "--no-user-data"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "workload.tokens" in done.stderr and "Traceback" not in done.stderr
