"""Every bad input through the real CLI: exit 2 naming file and field, or (folder members) exit 0 with one warning
naming the file; never a traceback, a hang or a blow-up (each run: 1 GiB address space, 30 s).

Cases: tests/fixtures/bad/ (made by make_bad.py: kind x {syntax, type, bounds, unknown key, duplicate key, alias
bomb, depth, encoding, size, date}). Scenarios run one process per case, as a path and on standard input;
folder members (profiles, result files, user data) run one process per kind x category with all its files in
the folder. All processes run up front on a small thread pool; each test then checks its own case.
Then one named test per finding of issue 13.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.bad.make_bad import (
    CATEGORIES,
    Case,
    all_cases,
    flag_cases,
    laughs,
    overrides_text,
    profile_text,
    result_doc,
    result_text,
    scenario_text,
    size_case,
)
from tests.fixtures.bad.make_bad import HERE as BAD_DIR

ROOT = Path(__file__).resolve().parent.parent
LIMIT_BYTES = 1 << 30  # 1 GiB of address space: a bomb or a runaway read fails the run instead of the machine
TIMEOUT_S = 30
CASES = all_cases()
FOLDER_KINDS = ("profile", "user_profile", "result", "user_result")  # many files per run, one warning each


def _limits() -> None:  # runs in the child between fork and exec
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def cli(*args: str, home: Path | None = None, stdin: bytes | None = None, module: str = "planner",
        limit: bool = True, preexec=None) -> Run:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if home is not None:
        env["TRAINPLAN_HOME"] = str(home)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", module, *args], input=stdin if stdin is not None else b"",
                          capture_output=True, cwd=ROOT, env=env, timeout=TIMEOUT_S,
                          preexec_fn=preexec or (_limits if limit else None))
    return Run(list(args), proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"), time.perf_counter() - t0)


def warnings_naming(run: Run, name: str) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("warning:") and name in line]


# ---------------------------------------------------------------- the matrix, run once for the module

class Matrix:
    """Builds the runs, executes them in parallel, and answers 'which run covers this case'."""

    def __init__(self, root: Path):
        self.root = root
        self.jobs: dict[str, dict] = {}
        base = root / "base.yaml"
        base.write_text(scenario_text(), encoding="utf-8")
        self.base = str(base)
        for case in CASES:
            if case.kind == "scenario":
                path = str(BAD_DIR / "scenario" / case.filename)
                self._job(f"path:{case.id}", [path, "--no-user-data"], files=[case.filename])
                self._job(f"stdin:{case.id}", ["-", "--no-user-data"], stdin=case.data, files=["<stdin>"])
            elif case.kind == "overrides":
                home = self._home(f"overrides-{case.name}")
                (home / "price_overrides.yaml").write_bytes(case.data)
                self._job(f"home:{case.id}", [self.base, "--format", "json"], home=home,
                          files=["price_overrides.yaml"])
        by_group: dict[tuple[str, str], list[Case]] = defaultdict(list)
        for case in CASES:
            if case.kind in ("profile", "result"):
                by_group[(case.kind, case.category)].append(case)
        for (kind, category), cases in by_group.items():
            for where in ("folder", "user"):
                self._folder_job(kind, category, cases, where)

    def _home(self, name: str) -> Path:
        home = self.root / "homes" / name
        home.mkdir(parents=True)
        return home

    def _job(self, key: str, args: list[str], *, home: Path | None = None, stdin: bytes | None = None,
             files: list[str]) -> None:
        self.jobs[key] = {"args": args, "home": home or self._home(key.replace("/", "_").replace(":", "_")),
                          "stdin": stdin, "files": files}

    def _folder_job(self, kind: str, category: str, cases: list[Case], where: str) -> None:
        key = f"{where}:{kind}/{category}"
        home = self._home(key.replace("/", "_").replace(":", "_"))
        if kind == "profile":
            folder = home / "gpu_profiles" if where == "user" else self.root / "profiles" / category
            args = [self.base, "--format", "json"]
            if where == "folder":
                args += ["--profiles", str(ROOT / "gpu_profiles"), "--profiles", str(folder)]
        else:
            top = home / "results" if where == "user" else self.root / "results" / category
            folder = top / "h100-sxm-80gb"
            args = [self.base, "--format", "json"] + (["--results", str(top)] if where == "folder" else [])
        folder.mkdir(parents=True, exist_ok=True)
        for case in cases:
            (folder / case.filename).write_bytes(case.data)
        self.jobs[key] = {"args": args, "home": home, "stdin": None, "files": [c.filename for c in cases]}

    def run_all(self) -> dict[str, Run]:
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = {key: pool.submit(cli, *job["args"], home=job["home"], stdin=job["stdin"])
                       for key, job in self.jobs.items()}
            return {key: f.result() for key, f in futures.items()}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> tuple[Matrix, dict[str, Run]]:
    m = Matrix(tmp_path_factory.mktemp("bad-inputs"))
    return m, m.run_all()


def test_the_matrix_covers_every_kind_and_category_with_150_committed_files():
    committed = sorted(p.relative_to(BAD_DIR).as_posix() for p in BAD_DIR.rglob("*") if p.suffix in (".yaml", ".json"))
    assert committed == sorted(f"{c.kind}/{c.filename}" for c in CASES), "run tests/fixtures/bad/make_bad.py"
    for case in CASES:
        assert (BAD_DIR / case.kind / case.filename).read_bytes() == case.data, f"{case.id}: regenerate"
    assert len(CASES) >= 150
    for kind in ("scenario", "profile", "overrides", "result"):
        seen = {c.category for c in CASES if c.kind == kind} | {"size"}  # size: made at test time
        assert seen == set(CATEGORIES), (kind, set(CATEGORIES) - seen)


def _check_bad_scenario(run: Run, name: str, case: Case) -> None:
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    assert run.returncode == 2, (run.returncode, run.stderr)
    [line] = [x for x in run.stderr.splitlines() if x.startswith("error:")]
    assert name in line, line
    if case.field:
        assert case.field in line, line


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "scenario"], ids=lambda c: c.id)
def test_bad_scenario_file_exits_2_naming_file_and_field(matrix, case):
    _, runs = matrix
    _check_bad_scenario(runs[f"path:{case.id}"], case.filename, case)


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "scenario"], ids=lambda c: c.id)
def test_bad_scenario_on_stdin_exits_2_naming_stdin_and_field(matrix, case):
    _, runs = matrix
    _check_bad_scenario(runs[f"stdin:{case.id}"], "<stdin>", case)


def _check_skipped(run: Run, case: Case, name: str | None = None) -> None:
    name = name or case.filename
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    assert run.returncode == 0, (run.returncode, run.stderr)
    lines = warnings_naming(run, name)
    assert len(lines) == 1, (case.id, run.stderr)
    if case.field:
        assert case.field in lines[0], lines[0]
    plan = json.loads(run.stdout)
    assert any(name in w for w in plan["warnings"] if isinstance(w, str))


@pytest.mark.parametrize("case", [c for c in CASES if c.kind == "overrides"], ids=lambda c: c.id)
def test_bad_price_overrides_are_skipped_with_one_warning(matrix, case):
    _, runs = matrix
    _check_skipped(runs[f"home:{case.id}"], case, "price_overrides.yaml")


@pytest.mark.parametrize("where", ["folder", "user"])
@pytest.mark.parametrize("case", [c for c in CASES if c.kind in ("profile", "result")], ids=lambda c: c.id)
def test_bad_folder_member_is_skipped_with_one_warning(matrix, case, where):
    _, runs = matrix
    _check_skipped(runs[f"{where}:{case.kind}/{case.category}"], case)


def test_every_run_stayed_small_and_fast(matrix):
    _, runs = matrix
    slowest = max(runs.values(), key=lambda r: r.seconds)
    assert slowest.seconds < 15, (slowest.args, slowest.seconds)


@pytest.mark.parametrize("kind", ["scenario", "stdin", "profile", "user_profile", "overrides", "result",
                                  "user_result"])
def test_a_file_one_byte_over_its_cap_is_refused_without_reading_it(kind, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    base = tmp_path / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    if kind in ("scenario", "stdin"):
        path = size_case("scenario", tmp_path)
        run = cli("-" if kind == "stdin" else str(path), "--no-user-data", home=home,
                  stdin=path.read_bytes() if kind == "stdin" else None)
        assert run.returncode == 2 and "at most 1 MiB" in run.stderr and "Traceback" not in run.stderr
        return
    folder = {"profile": tmp_path / "profiles", "user_profile": home / "gpu_profiles", "overrides": home,
              "result": tmp_path / "results" / "h100-sxm-80gb",
              "user_result": home / "results" / "h100-sxm-80gb"}[kind]
    folder.mkdir(parents=True, exist_ok=True)
    path = size_case(kind.replace("user_", ""), folder)
    args = [str(base), "--format", "json"]
    if kind == "profile":
        args += ["--profiles", str(ROOT / "gpu_profiles"), "--profiles", str(folder)]
    if kind == "result":
        args += ["--results", str(folder.parent)]
    run = cli(*args, home=home)
    assert run.returncode == 0, run.stderr
    [line] = warnings_naming(run, path.name)
    assert "at most" in line and "Traceback" not in run.stderr


# ---------------------------------------------------------------- one test per finding (issue 13)

def test_billion_laughs_scenario_is_refused_in_milliseconds(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(scenario_text() + laughs("bomb"), encoding="utf-8")
    assert path.stat().st_size < 2048  # the finding: a 1 KB file that took 2.8 GB
    run = cli(str(path), "--no-user-data")
    assert run.returncode == 2 and "laughs.yaml: bomb" in run.stderr and "alias" in run.stderr
    assert run.seconds < 5


def test_billion_laughs_profile_is_skipped_not_a_memory_error(tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "lab-gpu.yaml").write_text(profile_text("lab-gpu") + laughs("extra"), encoding="utf-8")
    base = tmp_path / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    run = cli(str(base), "--no-user-data", "--profiles", str(ROOT / "gpu_profiles"), "--profiles", str(folder))
    assert run.returncode == 0, run.stderr
    [line] = warnings_naming(run, "lab-gpu.yaml")
    assert "extra" in line and "MemoryError" not in run.stderr


@pytest.mark.parametrize("as_of", ["last week", "2026-13-01"])
def test_a_bad_date_in_price_overrides_is_one_warning_naming_file_and_field(tmp_path, as_of):
    home = tmp_path / "home"
    home.mkdir()
    (home / "price_overrides.yaml").write_text(overrides_text(as_of=f"  as_of: {as_of}"), encoding="utf-8")
    base = tmp_path / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    run = cli(str(base), home=home)
    assert run.returncode == 0 and "internal error" not in run.stderr, run.stderr
    [line] = warnings_naming(run, "price_overrides.yaml")
    assert "h100-sxm-80gb[0].as_of" in line and as_of in line


def test_gpus_per_instance_0_in_price_overrides_is_refused(tmp_path):
    from planner.inputs.errors import InputError
    from planner.inputs.userdata import load_price_overrides

    p = tmp_path / "price_overrides.yaml"
    p.write_text(overrides_text(source="  source: x\n  gpus_per_instance: 0"), encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_price_overrides(p)
    assert err.value.field == "h100-sxm-80gb[0].gpus_per_instance" and "integer between 1 and" in str(err.value)
    run = cli(str(ROOT / "scenarios" / "resnet50-imagenet.yaml"), home=tmp_path)
    assert run.returncode == 0
    assert len(warnings_naming(run, "gpus_per_instance")) == 1


def test_an_impossible_exchange_rate_date_is_bad_input_not_an_internal_error(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(scenario_text(pricing="pricing:\n  currency: ARS\n  exchange_rate: 1050\n"
                                          "  exchange_rate_as_of: 2026-02-30"), encoding="utf-8")
    run = cli(str(path), "--no-user-data")
    assert run.returncode == 2, run.stderr
    assert "s.yaml: pricing.exchange_rate_as_of: got '2026-02-30'" in run.stderr


def test_a_deeply_nested_result_file_is_skipped_and_the_others_still_count(tmp_path):
    folder = tmp_path / "results" / "h100-sxm-80gb"
    folder.mkdir(parents=True)
    (folder / "deep-20260101T000000Z.json").write_text("[" * 100_000 + "]" * 100_000)
    from tests.fixtures.make_fixtures import resnet50_h100  # a file the base scenario's plan measures with

    (folder / "good-20261120T100000Z.json").write_text(json.dumps(resnet50_h100()), encoding="utf-8")
    base = tmp_path / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    run = cli(str(base), "--no-user-data", "--format", "json", "--results", str(tmp_path / "results"))
    assert run.returncode == 0, run.stderr
    assert len(warnings_naming(run, "deep-20260101T000000Z.json")) == 1 and "RecursionError" not in run.stderr
    assert any(p.endswith("good-20261120T100000Z.json") for p in json.loads(run.stdout)["inputs"]["result_files"])


def test_bench_detect_reports_a_deeply_nested_profile_without_a_traceback(tmp_path):
    # 100,000 levels crashed libyaml's recursive composer (a segfault, not even a traceback) before the event scan.
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "deep.yaml").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "lab-gpu.yaml").write_text(profile_text("lab-gpu"), encoding="utf-8")
    run = cli("detect", "--profiles", str(folder), module="bench", limit=False)  # torch needs more than 1 GiB
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    [line] = [x for x in run.stdout.splitlines() if "deep.yaml" in x]
    assert line.startswith("profile problem:") and "levels" in line


def test_out_keeps_the_existing_report_when_the_write_fails(tmp_path):
    out = tmp_path / "plan.md"
    good = cli(str(ROOT / "scenarios" / "resnet50-imagenet.yaml"), "--no-user-data", "--format", "markdown",
               "--out", str(out))
    assert good.returncode == 0, good.stderr
    before = out.read_bytes()

    def small_files() -> None:  # the report is ~13 KB: a 4 KiB file-size limit makes its write fail (EFBIG)
        _limits()
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    failed = cli(str(ROOT / "scenarios" / "gpt2-124m-10b-tokens.yaml"), "--no-user-data", "--format", "markdown",
                 "--out", str(out), preexec=small_files)
    assert failed.returncode == 2, failed.stderr
    assert "plan.md" in failed.stderr and "unchanged" in failed.stderr and "Traceback" not in failed.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.md"]  # no temporary file left behind


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o644), (0o077, 0o600)])
def test_result_files_honour_the_umask(tmp_path, umask, mode):
    from planner.inputs.resultfile import replace_result_atomic, write_result_atomic

    old = os.umask(umask)
    try:
        first = write_result_atomic(result_doc(), tmp_path / "gpu" / "r.json")
        grown = replace_result_atomic(result_doc(), tmp_path / "gpu" / "partial.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE(first.stat().st_mode) == mode
    assert stat.S_IMODE(grown.stat().st_mode) == mode


def test_duplicate_keys_and_8e1_agree_across_loaders(tmp_path):
    from planner.inputs.errors import InputError
    from planner.inputs.profiles import load_profile
    from planner.inputs.resultfile import read_result_file
    from planner.inputs.scenario import load_scenario_file
    from planner.inputs.userdata import load_price_overrides

    files = {
        "s.yaml": (scenario_text(workload="workload:\n  dataset_samples: 10000\n  epochs: 8e1"),
                   scenario_text(workload="workload:\n  dataset_samples: 10000\n  epochs: 1\n  epochs: 2")),
        "lab-gpu.yaml": (profile_text("lab-gpu", tdp_w="tdp_w: 3e2"),
                         profile_text("lab-gpu", tdp_w="tdp_w: 300\ntdp_w: 301")),
        "price_overrides.yaml": (overrides_text(usd_per_gpu_hour="  usd_per_gpu_hour: 25e-1"),
                                 overrides_text(tier="  tier: spot\n  tier: on_demand")),
        "r.json": (result_text().replace('"median": 0.02,', '"median": 2e-2,', 1),
                   result_text().replace('"median": 0.02,', '"median": 0.02, "median": 0.01,', 1)),
    }
    readers = {"s.yaml": load_scenario_file, "lab-gpu.yaml": load_profile,
               "price_overrides.yaml": load_price_overrides, "r.json": read_result_file}
    values = {"s.yaml": lambda s: s.workload.epochs, "lab-gpu.yaml": lambda p: p.tdp_w,
              "price_overrides.yaml": lambda o: o["h100-sxm-80gb"][0].usd_per_gpu_hour,
              "r.json": lambda r: r.measurements[0].step_time_s.median}
    expected = {"s.yaml": 80.0, "lab-gpu.yaml": 300.0, "price_overrides.yaml": 2.5, "r.json": 0.02}
    for name, (exponent, duplicate) in files.items():
        path = tmp_path / name
        path.write_text(exponent, encoding="utf-8")
        assert values[name](readers[name](path)) == expected[name], name
        path.write_text(duplicate, encoding="utf-8")
        with pytest.raises(InputError) as err:
            readers[name](path)
        assert "duplicate key" in str(err.value) and "line" in str(err.value), str(err.value)


# ---------------------------------------------------------------- special files and CLI conveniences

def test_a_fifo_or_device_is_refused_at_once(tmp_path):
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/zero", str(tmp_path)):
        run = cli(target, "--no-user-data")
        assert run.returncode == 2 and run.seconds < 10, (target, run.stderr)
        assert "a regular file" in run.stderr


def test_a_fifo_in_a_results_folder_is_skipped_not_waited_on(tmp_path):
    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe-20260101T000000Z.json")
    run = cli(str(ROOT / "scenarios" / "resnet50-imagenet.yaml"), "--no-user-data", "--results",
              str(tmp_path / "results"))
    assert run.returncode == 0 and len(warnings_naming(run, "pipe-20260101T000000Z.json")) == 1


def test_version_stdin_and_several_scenarios(tmp_path):
    from planner import __version__

    assert cli("--version").stdout.strip() == f"trainplan {__version__}"
    assert __version__ in cli("--version", module="bench").stdout
    text = scenario_text().encode("utf-8")
    from_stdin = cli("-", "--no-user-data", "--format", "json", stdin=text)
    assert from_stdin.returncode == 0 and json.loads(from_stdin.stdout)["scenario_name"] == "bad-input base"
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    a.write_bytes(text)
    b.write_text(scenario_text(name="name: second"), encoding="utf-8")
    both = cli(str(a), str(b), "--no-user-data")
    assert both.returncode == 0 and "Plan: bad-input base" in both.stdout and "Plan: second" in both.stdout
    one_report = cli(str(a), str(b), "--no-user-data", "--format", "markdown", "--out", str(tmp_path / "r.md"))
    assert one_report.returncode == 2 and len(one_report.stderr.strip().splitlines()) == 1
    assert "one scenario per markdown report" in one_report.stderr and not (tmp_path / "r.md").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(scenario_text(training="training:\n  global_batch: -1"), encoding="utf-8")
    named = cli(str(bad), str(a), str(BAD_DIR / "scenario" / "feb-30.yaml"), "--no-user-data")
    assert named.returncode == 2 and named.stdout == ""
    assert [x.split(":")[1].strip() for x in named.stderr.splitlines()] == [str(bad),
                                                                             str(BAD_DIR / "scenario" / "feb-30.yaml")]


def test_unknown_lang_is_bad_input(tmp_path):
    run = cli(str(ROOT / "scenarios" / "resnet50-imagenet.yaml"), "--no-user-data", "--lang", "xx")
    assert run.returncode == 2 and "--lang: got 'xx'" in run.stderr


def test_the_fixture_generator_runs(tmp_path):
    from tests.fixtures.bad.make_bad import write_all

    assert write_all(tmp_path) == len(CASES)
    shutil.rmtree(tmp_path)


# ---------------------------------------------------------------- the writers (issue 34): nothing over something

def _writer_cases():
    from tests.fixtures.bad.writer_cases import writer_cases

    return writer_cases()


@pytest.fixture(scope="module")
def writer_runs(tmp_path_factory) -> dict[str, tuple[Run, dict, dict]]:
    """Every writer case in its own folder, run once (3 at a time): the run, and the folder before and after."""
    from tests.fixtures.bad.writer_cases import tree

    def one(case) -> tuple[str, tuple[Run, dict, dict]]:
        folder = tmp_path_factory.mktemp(case.id.replace("/", "-"))
        made = case.make(folder)
        before = tree(folder)
        module, *args = made.args
        run = cli(*args, home=made.home, module=module)
        return case.id, (run, before, tree(folder))

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(one, _writer_cases()))


def test_the_writer_cases_cover_every_writing_surface():
    from tests.fixtures.bad.writer_cases import SURFACES

    cases = _writer_cases()
    assert len(cases) >= 40 and len({c.id for c in cases}) == len(cases)
    assert {c.surface for c in cases} == set(SURFACES)


@pytest.mark.parametrize("case", _writer_cases(), ids=lambda c: c.id)
def test_a_writer_given_nothing_exits_2_naming_it_and_writes_nothing(writer_runs, case):
    run, before, after = writer_runs[case.id]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    assert run.returncode == 2, (run.returncode, run.stderr)
    for word in case.words:
        assert word in run.stderr, (word, run.stderr)
    assert after == before, sorted(set(after) ^ set(before)) or "a file's content changed"
    assert run.seconds < 15, run.seconds


# ---------------------------------------------------------------- command-line flags (issue 34)

def flag_args(case, tmp_path: Path) -> tuple[list[str], Path]:
    """The case's command line with its placeholders filled in, and the --out path that must stay absent."""
    base = tmp_path / "base.yaml"
    base.write_text(scenario_text(), encoding="utf-8")
    (tmp_path / "a-file.txt").write_text("not a folder\n", encoding="utf-8")
    out = tmp_path / "never-written.out"
    fill = {"{base}": str(base), "{dir}": str(tmp_path), "{file}": str(tmp_path / "a-file.txt"), "{out}": str(out)}
    return [fill.get(a, a) for a in case.args], out


@pytest.mark.parametrize("case", flag_cases(),
                         ids=lambda c: c.name)
def test_a_bad_flag_exits_2_naming_it_and_writes_nothing(case, tmp_path):
    args, out = flag_args(case, tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    run = cli(*args, home=home, module=case.module, stdin=b"")
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "Traceback" not in run.stderr and run.seconds < 10, run.stderr
    for word in case.words:
        assert word in run.stderr, (word, run.stderr)
    assert not out.exists() and not any(home.iterdir())  # nothing written, not even into $TRAINPLAN_HOME


def test_there_are_30_or_more_cases_for_the_enumerated_fields_and_flags():
    from tests.fixtures.bad.make_bad import vocabulary_cases

    assert len(vocabulary_cases()) >= 30 and len(flag_cases()) >= 25
