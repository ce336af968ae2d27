"""Out-of-memory outcomes and bytes memory figures in the published corpus (`python -m bench published`).

A row with `unit: oom` records that a configuration ran out of memory: its value is the token as printed ("OOM"),
checked on its cited line like a number (whole, case-sensitive), never built into a result file, counted by `list
--summary`. The fixture corpus is SYNTHETIC (tests/fixtures/published_example), copied and edited per test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.corpus import DEFAULT_ROOT, OOM_NOT_BUILT, check_corpus, why_not_built
from tests.corpus_support import rehash_excerpt

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "fixtures" / "published_example"
SOURCE = "sources/example-bench.yaml"
RAW = "raw/example-bench/table.txt"
BUILT = "results/published/a100-sxm-80gb/example-bench__resnet50.json"
# The row this file adds to the fixture: line 7, a third row after the two the fixture has.
ROW = ('      - {{line: 7, gpu_name_as_published: "A100 80GB", gpu_profile_id: a100-sxm-80gb, gpu_count: 1, '
       'parallelism: none, precision_as_published: TF32, precision_effective: tf32, precision_reason: "TF32 as '
       'published", batch_per_gpu: 512, global_batch: 512, seq_len: null, value: {value}, unit: {unit}, '
       'per_gpu: {per_gpu}}}\n')


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", "published", *args, "--root", str(root)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _corpus(tmp_path: Path, line: str, *, value: str = '"OOM"', unit: str = "oom", per_gpu: str = "false",
            row_edit: tuple[str, str] | None = None) -> Path:
    """The fixture with one more upstream line (L7) in its excerpt and one more row citing it."""
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLE, corpus)
    for rel in (SOURCE, RAW):
        _edit(corpus / rel, "docs/RESULTS.md#L3-L6", "docs/RESULTS.md#L3-L7")
    (corpus / RAW).write_text((corpus / RAW).read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    rehash_excerpt(corpus, SOURCE, RAW)  # the excerpt grew on purpose: its recorded hash follows
    row = ROW.format(value=value, unit=unit, per_gpu=per_gpu)
    if row_edit:
        assert row_edit[0] in row
        row = row.replace(*row_edit)
    source = corpus / SOURCE
    source.write_text(source.read_text(encoding="utf-8") + row, encoding="utf-8")
    return corpus


OOM_LINE = "| 1 | TF32 | 512 | OOM |"


def test_an_oom_row_is_checked_listed_and_counted(tmp_path):
    corpus = _corpus(tmp_path, OOM_LINE)
    assert _cli(corpus, "build").returncode == 0  # the new row changes what the corpus builds
    done = _cli(corpus, "check")
    assert done.returncode == 0 and "3 rows in 1 sources" in done.stdout, done.stderr
    listed = _cli(corpus, "list").stdout
    assert "OOM (out of memory at batch 512 per GPU)" in listed
    summary = _cli(corpus, "list", "--summary").stdout
    assert "out-of-memory rows: 1 " in summary and "memory rows: 0 " in summary


def test_a_one_gpu_oom_row_is_built_as_an_out_of_memory_outcome(tmp_path):
    """A plan matches it to an option of exactly that configuration (planner.engine.published_memory): status
    "oom", no figure, the token kept as printed."""
    corpus = _corpus(tmp_path, OOM_LINE)
    shipped = json.loads((corpus / BUILT).read_bytes())
    done = _cli(corpus, "build")
    assert done.returncode == 0, done.stderr
    assert OOM_NOT_BUILT not in done.stdout and "wrote 1 result files" in done.stdout
    built = json.loads((corpus / BUILT).read_bytes())["measurements"]
    assert built[:-1] == shipped["measurements"]
    oom = built[-1]
    assert (oom["status"], oom["batch_size"], oom["step_time_s"]) == ("oom", 512, None)
    assert oom["provenance"]["value_as_published"] == "OOM" and "published" not in oom["provenance"]
    assert _cli(corpus, "check").returncode == 0


@pytest.mark.parametrize("what,line,value,unit,per_gpu,row_edit,field", [
    ("an OOM token not on its line", "| 1 | TF32 | 512 | 95.1 |", '"OOM"', "oom", "false", None, "rows[2].value"),
    ("another token than the one printed", OOM_LINE, '"OOM*"', "oom", "false", None, "rows[2].value"),
    ("the token in another case", OOM_LINE, '"oom"', "oom", "false", None, "rows[2].value"),
    ("a token inside a word", "| 1 | TF32 | 512 | OOMs |", '"OOM"', "oom", "false", None, "rows[2].value"),
    ("a word that only contains OOM", "| 1 | TF32 | 512 | ZOOM |", '"ZOOM"', "oom", "false", None, "rows[2].value"),
    ("a dash that does not say out of memory", "| 1 | TF32 | 512 | - |", '"-"', "oom", "false", None,
     "rows[2].value"),
    ("a number with the oom unit", "| 1 | TF32 | 512 | 24.5 |", '"24.5"', "oom", "false", None, "rows[2].value"),
    ("an OOM token with a speed unit", OOM_LINE, '"OOM"', "images_per_s", "false", None, "rows[2].value"),
    ("per_gpu true", OOM_LINE, '"OOM"', "oom", "true", None, "rows[2].per_gpu"),
    ("no batch per GPU", OOM_LINE, '"OOM"', "oom", "false", ("batch_per_gpu: 512", "batch_per_gpu: null"),
     "rows[2].batch_per_gpu"),
])
def test_a_bad_oom_row_is_refused_naming_file_and_field(tmp_path, what, line, value, unit, per_gpu, row_edit, field):
    corpus = _corpus(tmp_path, line, value=value, unit=unit, per_gpu=per_gpu, row_edit=row_edit)
    done = _cli(corpus, "check")
    assert done.returncode == 2, done.stdout
    assert field in done.stderr and "example-bench.yaml" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("token,line,csv,stands", [
    ("OOM", "| 7 B | Llama 2 | None | 4 | 4,194,304 | OOM | - |", False, True),
    ("OOM", "| OOM* |", False, True),
    ("OOM*", "| OOM* |", False, True),
    ("out of memory", "ran out of memory at batch 8", False, True),
    ("OOM", "| OOMs |", False, False),
    ("OOM", "| ZOOM |", False, False),
    ("oom", "| OOM |", False, False),
    ("OOM", "gpu,OOM,8", True, True),
    ("OOM", "gpu,OOM*,8", True, False),
])
def test_an_oom_token_stands_on_its_line_only_whole_and_in_its_case(token, line, csv, stands):
    from calibration.corpus import _token_stands_on

    assert _token_stands_on(token, line, csv=csv) is stands


BYTES_LINE = "| 1 | TF32 | 128 | 38868615168 |"
MIB_LINE = "| 1 | TF32 | 128 | GPU memory occupied: 14949 MB. |"


@pytest.mark.parametrize("unit, line, value, meaning", [
    ("bytes_memory", BYTES_LINE, '"38868615168"', "max_memory_reserved"),
    # mib_memory: a "MB" printed from bytes // 1024**2 (NVML, torch.cuda prints), i.e. MiB
    ("mib_memory", MIB_LINE, '"14949"', "device_used"),
])
def test_a_memory_unit_needs_its_memory_meaning_and_is_a_memory_row(tmp_path, unit, line, value, meaning):
    corpus = _corpus(tmp_path, line, value=value, unit=unit, per_gpu="true")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "excerpts[0].memory_meaning" in done.stderr, done.stderr
    _edit(corpus / SOURCE, "    notes: null", f"    memory_meaning: {meaning}\n    notes: null")
    built = _cli(corpus, "build")
    assert built.returncode == 0 and "memory figure" not in built.stdout, built.stdout
    done = _cli(corpus, "check")
    assert done.returncode == 0, done.stderr
    assert "memory rows: 1 " in _cli(corpus, "list", "--summary").stdout
    figure = json.loads((corpus / BUILT).read_bytes())["measurements"][-1]
    field = {"max_memory_reserved": "peak_reserved_bytes", "device_used": "device_used_bytes"}[meaning]
    expected = {"bytes_memory": 38868615168.0, "mib_memory": 14949 * 2.0**20}[unit]
    assert figure[field] == expected and figure["provenance"]["memory_meaning"] == meaning
    assert figure["provenance"]["published"] == {"value": float(value.strip('"')), "unit": unit}


def test_a_mib_memory_value_must_stand_on_its_line(tmp_path):
    corpus = _corpus(tmp_path, MIB_LINE, value='"14948"', unit="mib_memory", per_gpu="true")
    _edit(corpus / SOURCE, "    notes: null", "    memory_meaning: device_used\n    notes: null")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "rows[2].value" in done.stderr, done.stderr


@pytest.mark.parametrize("value,line", [
    ('"26068364077.056"', "| 1 | TF32 | 128 | 26068364077.056 |"),  # an average of bytes, not a count
    ('"38868615168 B"', "| 1 | TF32 | 128 | 38868615168 B |"),
])
def test_a_bytes_memory_value_is_a_whole_number_of_bytes(tmp_path, value, line):
    corpus = _corpus(tmp_path, line, value=value, unit="bytes_memory", per_gpu="true")
    _edit(corpus / SOURCE, "    notes: null", "    memory_meaning: max_memory_reserved\n    notes: null")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "rows[2].value" in done.stderr and "whole number of bytes" in done.stderr


# ---------------------------------------------------------------- the shipped corpus


@pytest.fixture(scope="module")
def shipped():
    rows, problems = check_corpus(DEFAULT_ROOT)
    assert not problems, problems
    return rows


def test_shipped_oom_rows_are_built_for_one_gpu_and_say_their_batch(shipped):
    ooms = [r for r in shipped if r.unit == "oom"]
    assert len(ooms) >= 9
    for r in ooms:  # one-GPU outcomes become measurements a plan can match; multi-GPU ones stay with the memory model
        if r.gpu_profile_id is None:  # a card published by its memory size only (Unsloth's context table): no plan
            assert r.source_slug == "unsloth-readme-context-length"  # can match it, and only that source says so
            assert why_not_built(r) == "GPU variant not published"
            continue
        assert why_not_built(r) == (None if r.gpu_count == 1 else OOM_NOT_BUILT)
        assert r.fields["batch_per_gpu"] and r.fields["per_gpu"] is False and r.value == "OOM"
    assert sum(why_not_built(r) is None for r in ooms) >= 7


def _litgpt(rows, model_id, gpu, unit, batch, method="lora", gpu_count=1):
    return [r for r in rows if r.source_slug == "litgpt-finetune-tables" and r.excerpt is not None
            and r.excerpt.model_id == model_id and r.gpu_profile_id == gpu and r.unit == unit
            and r.gpu_count == gpu_count
            and r.fields["batch_per_gpu"] == batch and (r.fields.get("adapter") or {}).get("method") == method]


@pytest.mark.parametrize("model_id,ran_batch,ran_gb,oom_batch,oom_line", [
    ("llama2_7b", 2, "29.07", 4, 57),
    ("llama2_13b", 1, "38.12", 2, 62),
])
def test_litgpt_a100_lora_fit_and_oom_boundaries(shipped, model_id, ran_batch, ran_gb, oom_batch, oom_line):
    """LitGPT's A100-SXM4-40GB LoRA table: the micro-batch that ran (peak allocated GB) next to the one that
    ran out of memory, with the same configuration."""
    (ran,) = _litgpt(shipped, model_id, "a100-sxm-40gb", "gb_memory", ran_batch)
    (oom,) = _litgpt(shipped, model_id, "a100-sxm-40gb", "oom", oom_batch)
    assert ran.value == ran_gb and oom.fields["line"] == oom_line
    for key in ("gpu_count", "precision_effective", "global_batch", "seq_len", "adapter"):
        assert ran.fields[key] == oom.fields[key], key


def test_the_peft_peak_reserved_figures_are_bytes_memory_rows(shipped):
    peft = {r.excerpt.raw.split("/")[-1]: r for r in shipped if r.source_slug == "huggingface-peft-method-comparison"
            and r.excerpt is not None and r.unit == "bytes_memory"}
    for name, value in (("full-finetuning--llama-3.2-3B-lr_0.00001.txt", "38868615168"),
                        ("lora--llama-3.2-3B-rank32.txt", "22292725760"),
                        ("lora--llama-3.2-3B-rank64.txt", "22552772608")):
        row = peft[name]
        assert row.value == value and row.fields["per_gpu"] is True and row.excerpt is not None
        assert "max_memory_reserved" in (row.excerpt.notes or "")
    # the averages and the percentile stay out of the memory rows
    assert not [r for r in shipped if r.source_slug == "huggingface-peft-method-comparison"
                and r.unit in ("gb_memory", "gib_memory", "bytes_memory") and "." in r.value]


def test_the_hf_single_gpu_guide_rows_are_nvml_mib_device_used(shipped):
    """transformers' 'Efficient Training on a Single GPU' (bert-large-uncased, V100-SXM2 16GB): NVML used // 2**20
    printed "MB" is MiB, device_used; the context-only and weights-only figures have no batch."""
    rows = {(r.fields["line"]): r for r in shipped if r.source_slug == "hf-transformers-perf-train-gpu-one"}
    assert {line: r.value for line, r in rows.items()} == {
        87: "1343", 103: "2631", 173: "14949", 275: "8681", 306: "6775", 344: "13939", 367: "7275", 454: "12295",
        478: "4847", 539: "13085", 561: "5363", 619: "5363"}
    for line, r in rows.items():
        assert r.unit == "mib_memory" and r.gpu_profile_id == "v100-sxm2-16gb" and r.excerpt is not None
        assert "device_used" in (r.excerpt.notes or "") and r.fields["per_gpu"] is True
        assert why_not_built(r) == (None if r.fields["batch_per_gpu"] else "batch per GPU not published")
        assert (r.fields["batch_per_gpu"] is None) == (line in (87, 103))
    assert rows[173].fields["batch_per_gpu"] == 4 and rows[173].precision_effective == "fp32"
    assert rows[367].fields["batch_per_gpu"] == 1 and rows[367].fields["global_batch"] == 4
    assert rows[367].precision_effective == "fp16"



def test_a_model_shape_may_say_its_loss_head_norm_and_dropout(tmp_path):
    """loss (standard | chunked | sequence), norm and dropout pass through to published_models.json, where the
    planner reads them (a sequence-classification head has no per-token logits)."""
    corpus = _corpus(tmp_path, MIB_LINE, value='"14949"', unit="mib_memory", per_gpu="true")
    shape = ("    memory_meaning: device_used\n    model_family: encoder\n    model_params: 335143938\n"
             "    model_shape: {layers: 24, hidden: 1024, heads: 16, ffn: 4096, vocab: 30522, mlp: gelu, seq_len: 512, "
             "loss: sequence, norm: layernorm, dropout: 0.1}\n    notes: null")
    _edit(corpus / SOURCE, "    model_params: null\n", "")
    _edit(corpus / SOURCE, "    model_id: resnet50", "    model_id: bert_large_cls")
    _edit(corpus / SOURCE, "    model_zoo_id: resnet50", "    model_zoo_id: null")
    _edit(corpus / SOURCE, "    notes: null", shape)
    done = _cli(corpus, "build")
    assert done.returncode == 0, done.stderr
    model = json.loads((corpus / "published_models.json").read_text())["models"]["bert_large_cls"]
    assert model["transformer"] == {"layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096, "vocab": 30522,
                                    "mlp": "gelu", "seq_len": 512, "loss": "sequence", "norm": "layernorm",
                                    "dropout": 0.1}
    _edit(corpus / SOURCE, "loss: sequence", "loss: classification")
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "model_shape.loss" in done.stderr, done.stderr


def test_litgpt_a100_fsdp_lora_ran_on_4_gpus_and_oom_on_2(shipped):
    """LitGPT's 'Finetuning with LoRA on Multiple GPUs' table (Fabric FSDP, A100 40GB): Llama 2 13B at micro-batch 1
    ran on 4 GPUs (35.57 GB, rank 0's max_memory_allocated) and ran out of memory on 2; Falcon 40B ran out of memory
    on 4. Same configuration fields apart from the GPU count (and the global batch, 128 per process)."""
    (ran,) = _litgpt(shipped, "llama2_13b", "a100-sxm-40gb", "gb_memory", 1, gpu_count=4)
    (oom,) = _litgpt(shipped, "llama2_13b", "a100-sxm-40gb", "oom", 1, gpu_count=2)
    (falcon,) = _litgpt(shipped, "falcon_40b", "a100-sxm-40gb", "oom", 1, gpu_count=4)
    assert (ran.value, ran.fields["line"], oom.fields["line"], falcon.fields["line"]) == ("35.57", 123, 119, 124)
    for row in (ran, oom, falcon):
        assert row.fields["parallelism"] == "fsdp" and row.excerpt is not None
        assert row.excerpt.memory_meaning == "max_memory_allocated"
    for key in ("precision_effective", "batch_per_gpu", "seq_len", "adapter", "parallelism"):
        assert ran.fields[key] == oom.fields[key], key


# ---------------------------------------------------------------- inferred out-of-memory rows (a retry ladder)
TIMM_SOURCE = "sources/timm-benchmark-train.yaml"
TIMM_INFERRED = {489: ("vit_b16", "192", 256), 387: ("resnet101", "256", 384), 519: ("resnet152", "192", 256)}


def test_timm_decay_batch_step_is_the_cited_code():
    """calibration/corpus.py's integer ladder against the float-log formula of the cited timm code (decay_batch.py L21-L29
    @5e7d47ca, copied from its raw excerpt), and the ladder from 512 the research note gives."""
    import math

    from calibration.corpus import retry_ladder, timm_decay_batch_step

    def cited(batch_size, num_intra_steps=2):
        if batch_size <= 1:
            return 0
        base_batch_size = int(2 ** (math.log(batch_size - 1) // math.log(2)))
        step_size = max(base_batch_size // num_intra_steps, 1)
        return base_batch_size + ((batch_size - base_batch_size - 1) // step_size) * step_size

    assert all(timm_decay_batch_step(b) == cited(b) for b in range(0, 5000))
    assert retry_ladder("timm_decay_batch_step", 512) == [512, 384, 256, 192, 128, 96, 64, 48, 32, 24, 16, 12, 8, 6,
                                                          4, 3, 2, 1]


def test_shipped_inferred_rows_are_never_built_and_say_their_cause(shipped):
    from calibration.corpus import OOM_INFERRED_NOT_BUILT, OOM_INFERRED_UNIT

    inferred = {r.fields["line"]: r for r in shipped if r.unit == OOM_INFERRED_UNIT}
    assert set(inferred) == set(TIMM_INFERRED)
    for line, (model_id, ran, failed) in TIMM_INFERRED.items():
        r = inferred[line]
        assert (r.excerpt.model_id, r.value, r.fields["batch_per_gpu"]) == (model_id, ran, failed)
        assert why_not_built(r) == OOM_INFERRED_NOT_BUILT  # no plan's verdict rests on an inferred failure
        assert "INFERRED" in r.fields["inferred"]["cause"] and "any runtimeerror" in r.fields["inferred"]["cause"].lower()
        assert "inferred to be out of memory" in (r.excerpt.notes or "")


def _timm_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEFAULT_ROOT, corpus)
    return corpus


@pytest.mark.parametrize("what,old,new,field", [
    ("a failed batch that is not the next rung up", 'batch_per_gpu: 384, global_batch: 384, seq_len: null, value: "256"',
     'batch_per_gpu: 512, global_batch: 512, seq_len: null, value: "256"', "batch_per_gpu"),
    ("a printed batch that is not the one on the line", 'batch_per_gpu: 384, global_batch: 384, seq_len: null, '
     'value: "256"', 'batch_per_gpu: 512, global_batch: 512, seq_len: null, value: "384"', "value"),
    ("a batch from another column", "column: 4,", "column: 5,", "value"),
    ("a start batch that puts the printed batch off the ladder", "start_batch: 512,", "start_batch: 100,", "value"),
    ("no cited code for the rule", "code: [{raw:", "code: [], unused: [{raw:", "inferred"),
])
def test_a_bad_inferred_row_is_refused(tmp_path, what, old, new, field):
    corpus = _timm_corpus(tmp_path)
    _edit(corpus / TIMM_SOURCE, old, new)
    done = _cli(corpus, "check")
    assert done.returncode == 2 and field in done.stderr and "Traceback" not in done.stderr, (what, done.stderr)


def test_an_inferred_row_needs_the_rule_lines_in_its_cited_code(tmp_path):
    corpus = _timm_corpus(tmp_path)
    raw = corpus / "raw" / "timm-benchmark-train" / "code-5e7d47ca-decay_batch-L8-L43.txt"
    _edit(raw, "step_size = max(base_batch_size // num_intra_steps, 1)", "step_size = max(base_batch_size // 4, 1)")
    rehash_excerpt(corpus, TIMM_SOURCE, raw.relative_to(corpus).as_posix())  # past the hash check, to the rule's
    done = _cli(corpus, "check")
    assert done.returncode == 2 and "inferred.code" in done.stderr and "step_size" in done.stderr, done.stderr
