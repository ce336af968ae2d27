"""`python -m bench published check`: every transcribed number stands verbatim on the upstream line it cites.
The fixture corpus is SYNTHETIC (tests/fixtures/published_example); the real one is calibration/published/."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.corpus import DEFAULT_ROOT, check_corpus
from tests.corpus_support import rehash_excerpt

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "fixtures" / "published_example"
SOURCE = "sources/example-bench.yaml"
RAW = "raw/example-bench/table.txt"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", "published", *args, "--root", str(root)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "corpus")
    return tmp_path / "corpus"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_sound_corpus_checks_and_lists():
    done = _cli(EXAMPLE, "check")
    assert done.returncode == 0 and "2 rows in 1 sources" in done.stdout, done.stderr
    summary = _cli(EXAMPLE, "list", "--summary").stdout
    assert "measurements: 2 (1 with a caveat: not to be used)" in summary and "by precision: tf32 1, fp16 1" in summary


BROKEN = [
    ("a number not on its line", SOURCE, "value: 19876", "value: 19867", "rows[1].value"),
    ("a number that is only part of one", SOURCE, "value: 19876", "value: 9876", "rows[1].value"),
    ("a line outside the excerpt", SOURCE, "line: 6,", "line: 9,", "rows[1].line"),
    ("no citation", SOURCE, "    source: example-org", "    source: somewhere else example-org", "excerpts[0].source"),
    ("an unknown GPU id", SOURCE, "gpu_profile_id: a100-sxm-80gb, gpu_count: 1", "gpu_profile_id: a100-sxm-96gb, "
     "gpu_count: 1", "rows[0].gpu_profile_id"),
    ("an unknown precision", SOURCE, "precision_effective: fp16", "precision_effective: fp8", "precision_effective"),
    ("an unknown stack", SOURCE, "stack: optimized_pytorch", "stack: jax", "excerpts[0].stack"),
    ("an excerpt header that disagrees", RAW, "# sha256: 5f2b", "# sha256: 6f2b", "header.sha256"),
    ("an excerpt missing a line", RAW, "| 8 | AMP | 256 | 19876 |\n", "", "excerpts[0].raw"),
    ("an excerpt outside its folder", SOURCE, "raw: raw/example-bench/table.txt", "raw: ../../../etc/passwd",
     "excerpts[0].raw"),
    ("an unknown key", SOURCE, "    notes: null", "    note: null", "excerpts[0].note"),
    # Numbers that only start like one (a reviewer found '1.2345e3' built as 1.2345 and 'n/a' crashing build).
    ("an exponent", SOURCE, 'value: "1,234.5"', 'value: "1.2345e3"', "rows[0].value"),
    ("not a number", SOURCE, 'value: "1,234.5"', 'value: "n/a"', "rows[0].value"),
    ("a decimal comma", SOURCE, 'value: "1,234.5"', 'value: "1,5"', "rows[0].value"),
    ("zero", SOURCE, 'value: "1,234.5"', 'value: "0"', "rows[0].value"),
    ("a GPU id that is a list", SOURCE, "gpu_profile_id: a100-sxm-80gb, gpu_count: 1",
     "gpu_profile_id: [a100-sxm-80gb], gpu_count: 1", "rows[0].gpu_profile_id"),
]


@pytest.mark.parametrize("what,rel,old,new,field", BROKEN, ids=[b[0] for b in BROKEN])
def test_a_bad_transcription_is_refused_naming_file_and_field(corpus, what, rel, old, new, field):
    _edit(corpus / rel, old, new)
    done = _cli(corpus, "check")
    assert done.returncode == 2, done.stdout
    assert field in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_shipped_corpus_checks():
    """calibration/published/ holds real transcriptions; each must stand on its cited upstream line."""
    rows, problems = check_corpus(DEFAULT_ROOT)
    assert not problems, problems
    assert rows


@pytest.mark.parametrize("number,line,csv,stands", [
    ("1,234.5", "| 1 | TF32 | 256 | 1,234.5 |", False, True),
    ("234.5", "| 1 | TF32 | 256 | 1,234.5 |", False, False),  # a thousands separator, not a field boundary
    ("12", "| 112 |", False, False),
    ("12", "| 12.5 |", False, False),
    ("833.0", "V100 16GB,1.0,300.0,833.0,12611.0", True, True),  # a whole CSV field
    ("33.0", "V100 16GB,1.0,300.0,833.0,12611.0", True, False),
    ("833", "V100 16GB,1.0,300.0,833.0,12611.0", True, False),
])
def test_a_number_stands_on_its_line_only_whole(number, line, csv, stands):
    from calibration.corpus import _stands_on

    assert _stands_on(number, line, csv=csv) is stands


BUILT = "results/published/a100-sxm-80gb/example-bench__resnet50.json"


def test_build_regenerates_the_result_files_byte_for_byte(corpus):
    shipped = (corpus / BUILT).read_bytes()
    (corpus / BUILT).unlink()
    done = _cli(corpus, "build")
    assert done.returncode == 0 and "wrote 1 result files" in done.stdout and "caveat (not to be used) 1" in done.stdout
    assert (corpus / BUILT).read_bytes() == shipped
    data = json.loads(shipped)
    (m,) = data["measurements"]  # the caveat row is left out of the result file
    assert m["source"] == "published" and m["provenance"]["published"] == {"value": 1234.5, "unit": "samples_per_s"}
    assert m["provenance"]["source"].endswith("docs/RESULTS.md#L5") and m["provenance"]["value_as_published"] == "1,234.5"


@pytest.mark.parametrize("what,change,message", [
    ("edited by hand", lambda p: p.write_text(p.read_text().replace("1234.5", "1243.5")), "differs from what"),
    ("provenance removed", lambda p: p.write_text(re.sub(r'"provenance": \{.*?\n   \}', '"x": 1', p.read_text(),
                                                         flags=re.S)), "differs from what"),
    ("missing", lambda p: p.unlink(), "missing"),
    ("stale", lambda p: shutil.copy(p, p.with_name("example-bench__vit_b16.json")), "no transcription builds it"),
])
def test_check_refuses_result_files_that_are_not_what_build_makes(corpus, what, change, message):
    change(corpus / BUILT)
    done = _cli(corpus, "check")
    assert done.returncode == 2 and message in done.stderr and "python -m bench published build" in done.stderr
    assert _cli(corpus, "build").returncode == 0 and _cli(corpus, "check").returncode == 0


def test_a_published_result_file_without_provenance_is_refused_by_the_reader(corpus):
    from planner.inputs.errors import InputError
    from planner.inputs.resultfile import parse_result

    data = json.loads((corpus / BUILT).read_text(encoding="utf-8"))
    del data["measurements"][0]["provenance"]
    with pytest.raises(InputError, match="provenance.source"):
        parse_result(data, "x.json")


def test_a_model_outside_the_zoo_needs_its_family_and_size(corpus):
    _edit(corpus / SOURCE, "    model_id: resnet50", "    model_id: resnet_custom")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "excerpts[0].model_family" in done.stderr


def test_list_into_a_closed_pipe_ends_quietly():
    """`python -m bench published list | head -1`: no traceback when the reader stops early."""
    proc = subprocess.Popen([sys.executable, "-m", "bench", "published", "list"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_the_summary_counts_what_the_issue_asks_for():
    from calibration.corpus import summary_lines

    rows, _ = check_corpus(DEFAULT_ROOT)
    text = "\n".join(summary_lines(rows))
    assert f"measurements: {len(rows)} " in text and "GPU architectures with 2 or more sources: " in text
    assert f"sources: {len({r.source_slug for r in rows})}" in text


def test_an_excerpt_that_starts_with_a_markdown_heading_keeps_it(corpus):
    """Upstream lines such as '# Results' are excerpt, not header: the header is the five `# key:` lines only."""
    _edit(corpus / RAW, "| GPUs | Precision", "# what: not a second header, a heading\n| GPUs | Precision")
    _edit(corpus / SOURCE, "docs/RESULTS.md#L3-L6", "docs/RESULTS.md#L2-L6")
    _edit(corpus / RAW, "docs/RESULTS.md#L3-L6", "docs/RESULTS.md#L2-L6")
    rehash_excerpt(corpus, SOURCE, RAW)
    done = _cli(corpus, "check")
    assert done.returncode == 0, done.stderr


def test_an_adapter_row_builds_its_own_file_with_the_adapter_in_settings(corpus):
    _edit(corpus / SOURCE, "seq_len: null, value: \"1,234.5\"", "seq_len: null, adapter: {method: lora, rank: 8}, "
          "value: \"1,234.5\"")
    assert _cli(corpus, "build").returncode == 0
    built = corpus / "results/published/a100-sxm-80gb/example-bench__resnet50__lora8.json"
    assert not (corpus / BUILT).exists()
    assert json.loads(built.read_text())["settings"]["adapter"] == {"kind": "lora", "rank": 8, "targets": None}
    assert _cli(corpus, "check").returncode == 0


def test_an_unknown_adapter_method_is_refused(corpus):
    _edit(corpus / SOURCE, "seq_len: null, value: \"1,234.5\"", "seq_len: null, adapter: {method: magic}, "
          "value: \"1,234.5\"")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "rows[0].adapter.method" in done.stderr


def test_build_refuses_a_row_the_planner_could_not_read(corpus):
    """What build writes must parse: a batch per GPU above the global batch is refused naming the row."""
    _edit(corpus / SOURCE, "batch_per_gpu: 256, global_batch: 256", "batch_per_gpu: 512, global_batch: 256")
    done = _cli(corpus, "build")
    assert done.returncode == 2 and "micro_batch" in done.stderr and "example-bench line 5" in done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- the excerpts themselves (issue 34)

def test_an_excerpt_edited_together_with_its_row_and_rebuilt_is_caught_by_check(corpus):
    """The finding: the excerpt's header records the upstream file's sha256 and line count, which an edit of the
    excerpt's body and of its row keeps; its own recorded hash does not."""
    _edit(corpus / RAW, "| 1 | TF32 | 256 | 1,234.5 |", "| 1 | TF32 | 256 | 1,334.5 |")
    _edit(corpus / SOURCE, 'value: "1,234.5"', 'value: "1,334.5"')
    build = _cli(corpus, "build")
    assert build.returncode == 2, build.stdout
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "example-bench.yaml: excerpts[0].excerpt_sha256: got '324c7867" in line, line
    assert "the file now hashes to" in line and "restore it from upstream" in line
    assert (corpus / BUILT).read_bytes() == (EXAMPLE / BUILT).read_bytes()  # build wrote nothing


def test_an_excerpt_without_its_own_hash_is_refused_with_the_hash_to_record(corpus):
    import hashlib

    _edit(corpus / SOURCE, "    excerpt_sha256: 324c78674de1e77e4d726b54e9506504ae14a067a984c1c8ce2ef1655aab946b\n", "")
    done = _cli(corpus, "check")
    own = hashlib.sha256((corpus / RAW).read_bytes()).hexdigest()
    assert done.returncode == 2 and "excerpts[0].excerpt_sha256: got None" in done.stderr and own in done.stderr


def test_every_shipped_excerpt_records_its_own_hash():
    """Backfilled for the whole corpus: each excerpt entry (block or the inferred rows' code excerpts) names the
    sha256 of its file as committed, and `check` (test_the_shipped_corpus_checks) compares them."""
    import hashlib

    import yaml

    n = 0
    for path in sorted((DEFAULT_ROOT / "sources").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        entries = list(doc["excerpts"])
        entries += [c for e in doc["excerpts"] for r in e["rows"] for c in (r.get("inferred") or {}).get("code", [])]
        for entry in entries:
            assert entry["excerpt_sha256"] == hashlib.sha256((DEFAULT_ROOT / entry["raw"]).read_bytes()).hexdigest()
            n += 1
    assert n >= 150


@pytest.mark.parametrize("what", ["a link to another excerpt", "a link to itself", "a loop of two links",
                                  "a linked folder", "a dangling link"])
def test_a_symlinked_excerpt_is_a_clear_error_not_a_traceback(corpus, what):
    raw = corpus / RAW
    if what == "a link to another excerpt":
        shutil.copy(raw, raw.with_name("copy.txt"))
        raw.unlink()
        raw.symlink_to("copy.txt")
    elif what == "a link to itself":
        raw.unlink()
        raw.symlink_to(raw.name)
    elif what == "a loop of two links":
        raw.unlink()
        raw.symlink_to("other.txt")
        raw.with_name("other.txt").symlink_to(raw.name)
    elif what == "a linked folder":
        folder = raw.parent
        shutil.move(folder, corpus / "elsewhere")
        folder.symlink_to(corpus / "elsewhere")
    else:
        raw.unlink()
        raw.symlink_to("/nonexistent/table.txt")
    for action in ("check", "build", "list"):
        done = _cli(corpus, action)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (action, done.stderr)
        assert "excerpts[0].raw" in done.stderr and "not a symbolic link" in done.stderr, done.stderr
    assert (corpus / BUILT).read_bytes() == (EXAMPLE / BUILT).read_bytes()


@pytest.mark.parametrize("what", ["a folder", "a FIFO", "not UTF-8"])
def test_an_unreadable_excerpt_is_a_clear_error_not_a_traceback(corpus, what):
    import os

    raw = corpus / RAW
    if what == "a folder":
        raw.unlink()
        raw.mkdir()
    elif what == "a FIFO":
        raw.unlink()
        os.mkfifo(raw)
    else:
        raw.write_bytes(raw.read_bytes().replace(b"SYNTHETIC", b"SYNTH\xe9TIC"))
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.splitlines()
    assert str(raw) in line, line


def test_an_excerpt_without_read_permission_is_a_problem_naming_it(corpus, monkeypatch):
    """Opening the excerpt is refused (what chmod 0 does for any user but root, who reads it anyway: so the refusal
    is made at os.open, whoever runs the test). The check names the file; it does not raise."""
    import os

    raw = corpus / RAW
    real_open = os.open

    def refusing_open(path, *args, **kwargs):
        if Path(path) == raw:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    _, problems = check_corpus(corpus)
    assert len(problems) == 1 and str(raw) in problems[0] and "ermission" in problems[0], problems


def test_a_symlinked_transcription_loop_is_a_clear_error(corpus):
    (corpus / "sources" / "loop.yaml").symlink_to("loop.yaml")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "loop.yaml" in done.stderr, done.stderr
