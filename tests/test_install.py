"""`pip install .` gives a `trainplan` command that works from any folder: packaging, data lookup, the launcher."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from planner import launcher
from planner.inputs import shipped
from tests.browser_support import free_port

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "resnet50-imagenet.yaml"
BENCH_ONLY = {"torch", "nvidia-ml-py"}  # requirements.txt pins them for bench; the package has them as [bench]
# What a copy of the checkout leaves out before `pip install` (a copy, so the build writes nothing in the checkout).
NOT_SOURCE = (".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis",
              ".benchmarks", "test-artifacts", "tests", "perf", "build", "*.egg-info", "out", ".gl")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirements(name: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / name).read_text(encoding="utf-8").splitlines())
    return sorted(line for line in lines if line and not line.startswith("-"))


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~\[ ;]", requirement, maxsplit=1)[0].lower()


def test_the_package_pins_are_the_requirements_pins_with_torch_only_in_the_bench_extra():
    project = _pyproject()["project"]
    runtime = _requirements("requirements.txt")
    assert sorted(project["dependencies"]) == [r for r in runtime if _name(r) not in BENCH_ONLY]
    extras = project["optional-dependencies"]
    assert sorted(extras["bench"]) == [r for r in runtime if _name(r) in BENCH_ONLY]
    assert "torch==2.13.0" in extras["bench"]  # exact: a looser spec pulls a multi-GB CUDA build
    assert sorted(extras["dev"]) == _requirements("requirements-dev.txt")
    assert sorted(extras["prices"]) == _requirements("requirements-prices.txt")


def test_the_version_and_the_command_come_from_the_code():
    config = _pyproject()
    assert config["project"]["dynamic"] == ["version"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "planner.vocab.VERSION"}
    assert config["project"]["scripts"] == {"trainplan": "planner.launcher:main"}


def test_every_code_package_is_packaged():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("planner", "bench", "ui", "calibration")
             for p in (ROOT / top).rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)


def test_the_app_server_options_are_the_checkout_config():
    """`trainplan app` starts from any folder, so it passes .streamlit/config.toml's settings as flags."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    flat = {f"{section}.{key}": (str(value).lower() if isinstance(value, bool) else str(value))
            for section, values in config.items() for key, value in values.items()}
    assert launcher.STREAMLIT_OPTIONS == flat
    argv = launcher.streamlit_argv(8600)
    assert argv[:2] == ["run", str(ROOT / "ui" / "app_main.py")]
    assert "--server.address=127.0.0.1" in argv and "--server.port=8600" in argv


def test_the_bench_commands_that_need_torch_are_all_but_list_and_published():
    from bench.__main__ import SUBCOMMANDS

    assert set(launcher.TORCH_COMMANDS) | set(launcher.TORCH_FREE_COMMANDS) == set(SUBCOMMANDS)
    assert not set(launcher.TORCH_COMMANDS) & set(launcher.TORCH_FREE_COMMANDS)


def test_trainplan_bench_list_runs_without_torch(monkeypatch, capsys):
    monkeypatch.setattr(launcher, "_has", lambda module: False)  # as on a machine without the bench extra
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert launcher.main(["bench", "list"]) == 0
    assert "resnet50" in capsys.readouterr().out


def test_bench_without_torch_names_the_extra_to_install(monkeypatch, capsys):
    monkeypatch.setattr(launcher, "_has", lambda module: False)
    assert launcher.main(["bench", "run", "--model", "mlp"]) == 2
    assert 'pip install "trainplan[bench]"' in capsys.readouterr().err


def test_trainplan_plan_is_python_m_planner(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the launcher hands its arguments on in sys.argv
    assert launcher.main(["plan", str(SCENARIO), "--format", "json", "--no-user-data"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"]["primary"]
    assert launcher.main(["plan", "no-such.yaml"]) == 2
    with pytest.raises(SystemExit) as exited:
        launcher.main(["nonsense"])
    assert exited.value.code == 2


def test_a_checkout_reads_its_own_folders(tmp_path):
    from bench import cli_run
    from planner.inputs import profiles, userdata

    assert shipped.IN_CHECKOUT and shipped.ROOT == ROOT
    assert userdata.SHIPPED_PROFILES_DIR == profiles.DEFAULT_PROFILES_DIR == ROOT / "gpu_profiles"
    assert userdata.SHIPPED_RESULTS_DIR == ROOT / "results" == cli_run.DEFAULT_OUT
    assert userdata.SHIPPED_SCENARIOS_DIR == ROOT / "scenarios" and userdata.PROJECT_ROOT == ROOT
    # an installed copy: no gpu_profiles/ beside planner/, the data package there instead
    (tmp_path / "trainplan_data" / "gpu_profiles").mkdir(parents=True)
    assert shipped.data_root(tmp_path) == tmp_path / "trainplan_data"
    (tmp_path / "gpu_profiles").mkdir()
    assert shipped.data_root(tmp_path) == tmp_path


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def _wait_until_serving(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 90) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return r.read().decode(errors="replace")
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"trainplan app did not serve {url}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.25)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=15)


@pytest.mark.slow
def test_pip_install_gives_a_trainplan_command_that_works_from_any_folder(tmp_path):
    """A fresh venv, `pip install <copy of the checkout>` with its dependencies from the package index (not torch:
    the command plans and serves without it), then `trainplan` run from an unrelated folder."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["TRAINPLAN_HOME"] = str(tmp_path / "home")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py, trainplan = venv / "bin" / "python", venv / "bin" / "trainplan"
    pip = subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], env=env, cwd=elsewhere,
                         capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], env=env, cwd=elsewhere, capture_output=True, text=True,
                              timeout=300)

    # the installed copy is what runs: code and data inside the venv, no torch
    where = run(py, "-c", "import importlib.util, planner; from planner.inputs import shipped; "
                          "print(planner.__file__, shipped.ROOT, shipped.IN_CHECKOUT, importlib.util.find_spec('torch'))")
    code_file, data_root, in_checkout, torch = where.stdout.split()
    site = Path(code_file).parent.parent
    assert site.is_relative_to(venv) and Path(data_root) == site / "trainplan_data", where.stdout + where.stderr
    assert in_checkout == "False" and torch == "None"
    for folder in shipped.FOLDERS:  # the shipped data and every file of the code packages travel
        assert _files(src / folder) == _files(site / "trainplan_data" / folder), folder
    for package in ("planner", "bench", "ui", "calibration"):
        assert _files(src / package) == _files(site / package), package

    from planner.vocab import VERSION
    assert run(trainplan, "--version").stdout.strip() == f"trainplan {VERSION}"
    planned = run(trainplan, "plan", SCENARIO, "--format", "json", "--no-user-data")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["recommendation"]["primary"] and plan["inputs"]["result_files"]
    assert all(f.startswith("results/") for f in plan["inputs"]["result_files"])  # the packaged results/
    no_torch = run(trainplan, "bench", "run", "--model", "mlp")
    assert no_torch.returncode == 2 and 'pip install "trainplan[bench]"' in no_torch.stderr
    corpus = run(trainplan, "bench", "published", "check")  # the corpus (calibration/published/) travels too
    assert corpus.returncode == 0, corpus.stderr
    rendered = run(py, "-c", "import ui.app_main as m; from streamlit.testing.v1 import AppTest; "
                             "at = AppTest.from_file(m.__file__, default_timeout=120).run(); "
                             "print([e.value for e in at.exception], [t.value for t in at.title])")
    assert rendered.stdout.startswith("[] ['ResNet-50"), rendered.stdout + rendered.stderr[-3000:]

    # `trainplan app --no-browser` serves on 127.0.0.1 and opens nothing; without the flag it opens the URL
    browser, opened = tmp_path / "browser.sh", tmp_path / "opened"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    env["BROWSER"] = str(browser)
    for flags in (["--no-browser"], []):
        port, log = free_port(), tmp_path / f"app{len(flags)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([str(trainplan), "app", "--port", str(port), *flags], cwd=elsewhere, env=env,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}/"
        try:
            assert "<title>" in _wait_until_serving(url, proc, log)
            assert _wait_until_serving(f"{url}_stcore/health", proc, log) == "ok"
            if flags:
                time.sleep(1)
                assert not opened.exists()
            else:
                deadline = time.monotonic() + 30
                while not opened.exists() and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert opened.read_text().strip() == url
        finally:
            _stop(proc)


def test_the_server_upload_limit_is_the_uploaders_one_plus_framing():
    """One upload limit (planner/vocab.py): the uploaders say UPLOAD_MAX_MB, and the server, in config.toml and in
    the launcher's flags, takes that plus 1 MB, since Streamlit refuses a request whose Content-Length (the file and
    its multipart framing) exceeds server.maxUploadSize: equal caps refused a file just under the stated limit."""
    from planner.vocab import UPLOAD_MAX_MB, UPLOAD_SERVER_MAX_MB

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == UPLOAD_SERVER_MAX_MB == UPLOAD_MAX_MB + 1
    assert launcher.STREAMLIT_OPTIONS["server.maxUploadSize"] == str(UPLOAD_SERVER_MAX_MB)
    assert UPLOAD_MAX_MB >= 2  # a 2 MB result file is uploaded in tests/test_browser_upload.py
