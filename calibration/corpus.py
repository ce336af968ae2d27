"""`python -m bench published check|build|list` (bench delegates here): the cited corpus of published training
measurements, checked against the verbatim excerpts it was transcribed from.

Layout (outside results/, so no results scan ever reads it):
  calibration/published/raw/<source-slug>/<name>.txt   the upstream lines verbatim, after a `# key: value`
                                                        header (source, sha256, lines, retrieved, what)
  calibration/published/sources/<source-slug>.yaml      the transcription: one row per published number, each citing
                                                        the upstream line it stands on (schema
                                                        trainplan.published-source/1); each excerpt entry records
                                                        its file's own sha256 (excerpt_sha256)

`check` refuses (exit 2, one line per problem naming file and field) a transcription whose citation, header or
enums are wrong, whose number does not stand verbatim on the upstream line it cites, or whose result files under
results/published/ are not exactly what `build` makes of it.

`build` regenerates results/published/<gpu-profile-id>/<source>__<model>[__s<seq>].json (trainplan.bench/2, one file
per source, model, GPU and sequence length, each measurement with its provenance block) from the transcriptions.
A row becomes a measurement when it can be planned with: a known GPU profile, a known effective precision, a batch
per GPU and no caveat; memory figures wait for the memory model. The others stay in the corpus (`list` shows them)
and `build` counts them by reason.

A row may also record that a configuration ran out of memory (`unit: oom`, `value` the token exactly as printed:
"OOM", "OOM*", "out of memory"), checked like a number on its cited line (whole, case-sensitive). Next to a row that
ran it marks a fit/OOM boundary for the memory model; it is never built into a result file.

Where a source prints only the batch that ran after its own harness stepped the batch down on a failure (timm's
benchmark.py), a row may record the failure it implies (`unit: oom_inferred`): `value` is the batch that ran as
printed on the cited line (in its CSV `column`), `batch_per_gpu` the next rung up the cited retry ladder, the batch
that failed. Its `inferred` block names the rule and the start batch, cites the ladder's code (raw excerpts under
raw/<slug>/, checked like every excerpt; the rule's lines must stand in them verbatim) and says what the failure
is inferred to be (`cause`). `check` recomputes the ladder; `build` never turns such a row into a result file, so
no plan's verdict rests on it: only calibration/memory_report.py reads it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType as MappingProxy
from typing import Any

from planner.inputs import loader
from planner.inputs.atomic import atomic_write, refuse_empty
from planner.inputs.check import Reader
from planner.inputs.errors import InputError
from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles
from planner.inputs.resultfile import REPO_SOURCE, parse_result_text
from planner.inputs.resultfile import SCHEMA as RESULT_SCHEMA
from planner.inputs.shipped import RESULTS_DIR as SHIPPED_RESULTS_DIR
from planner.inputs.zoo_catalog import load_catalog
from planner.vocab import (
    DATA_PARALLELISMS,
    EFFECTIVE_PRECISIONS,
    MEMORY_MEANINGS,
    MEMORY_UNIT_BYTES,
    PRECISIONS,
    STACKS,
    VERSION,
)

SCHEMA = "trainplan.published-source/1"
DEFAULT_ROOT = Path(__file__).resolve().parent / "published"  # raw/ excerpts and sources/ transcriptions
# Where `build` writes the shipped corpus's result files (the planner scans results/ recursively).
DEFAULT_OUT = SHIPPED_RESULTS_DIR / "published"
# The corpus models the zoo does not build, for the planner to resolve by id (torch-free, next to the zoo catalog).
DEFAULT_MODELS = Path(__file__).resolve().parent.parent / "planner" / "inputs" / "published_models.json"
MODELS_SCHEMA = "trainplan.published-models/1"
MODEL_ID = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
SHAPE_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab")
# Optional knobs of a model_shape the planner's memory model reads (planner/engine/models.py shape_from_dict):
# the loss head (standard LM logits, chunked cross-entropy, or a sequence-level head with no logits per token, e.g.
# a classifier), the norm kind and the dropout probability of the model as trained.
SHAPE_LOSSES = ("standard", "chunked", "sequence")
SHAPE_NORMS = ("layernorm", "rmsnorm")
FAMILIES = ("cnn", "vit", "encoder", "decoder", "rnn", "mlp", "custom")
# Parameter-efficient fine-tuning as published (PEFT's names); the planner models lora and qlora (vocab.ADAPTER_KINDS).
ADAPTER_METHODS = ("lora", "qlora", "dora", "loha", "lokr", "vera", "oft", "boft", "ia3", "ln_tuning", "prefix_tuning",
                   "prompt_tuning", "other")
SOURCE_FILE = loader.FileKind("published-source transcription (YAML)", "yaml", 4 * loader.MIB, max_nodes=400_000)
EXCERPT_FILE = loader.FileKind("published excerpt (text)", "text", 4 * loader.MIB)
PARALLELISMS = (*DATA_PARALLELISMS, "unknown")
# Units as published; the planner converts once, when it reads a row. "other:<words>" keeps an unusual unit honest.
# "oom": the configuration ran out of memory; the value is the token as printed ("OOM", "OOM*", "out of memory").
OOM_UNIT = "oom"
# "oom_inferred": a failure implied by a harness's batch-size retry ladder, not printed (see the module docstring).
OOM_INFERRED_UNIT = "oom_inferred"
# GiB = 2^30 bytes, GB = 10^9 bytes, bytes as printed, MiB = 2^20 bytes (a "MB" printed from bytes // 1024**2 or
# bytes / 2**20, as NVML and torch.cuda memory prints usually are: the source's code says which).
MEMORY_UNITS = tuple(MEMORY_UNIT_BYTES)  # planner.vocab owns them and their bytes
UNITS = ("samples_per_s", "images_per_s", "sequences_per_s", "tokens_per_s", "s_per_iteration", "ms_per_iteration",
         *MEMORY_UNITS, OOM_UNIT, OOM_INFERRED_UNIT)
# An out-of-memory token must say so: OOM / out of memory / out-of-memory, in any case ("-" or "n/a" do not).
_OOM_WORDS = re.compile(r"(?<![a-z])oom(?![a-z])|out[ -]of[ -]memory", re.IGNORECASE)
_WHOLE_BYTES = re.compile(r"^(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)$")
HEADER_KEYS = ("source", "sha256", "lines", "retrieved", "what")
# Retry ladders an oom_inferred row may be inferred by: the lines of the cited code that define the rule (each must
# stand, stripped, as a whole line of one of the row's code excerpts), and the rule itself (the next batch tried).
LADDER_RULES: dict[str, tuple[str, ...]] = {
    # timm 0.6.6 (huggingface/pytorch-image-models@5e7d47ca): timm/utils/decay_batch.py L8-L29, benchmark.py _try_run
    "timm_decay_batch_step": (
        "def decay_batch_step(batch_size, num_intra_steps=2, no_odd=False):",
        "if batch_size <= 1:",
        "return 0",
        "base_batch_size = int(2 ** (math.log(batch_size - 1) // math.log(2)))",
        "step_size = max(base_batch_size // num_intra_steps, 1)",
        "batch_size = base_batch_size + ((batch_size - base_batch_size - 1) // step_size) * step_size",
        "except RuntimeError as e:",
        "batch_size = decay_batch_step(batch_size)",
    ),
}


def timm_decay_batch_step(batch_size: int, num_intra_steps: int = 2) -> int:
    """timm's decay_batch_step (no_odd False), integer-exact: the power-of-2 floor of batch_size - 1, stepped in
    num_intra_steps parts (tests/test_corpus_oom.py compares it with the cited code's float log)."""
    if batch_size <= 1:
        return 0
    base = 1 << ((batch_size - 1).bit_length() - 1)
    step = max(base // num_intra_steps, 1)
    return base + ((batch_size - base - 1) // step) * step


def retry_ladder(rule: str, start: int) -> list[int]:
    """The batches a harness tries from `start` under `rule` (LADDER_RULES), largest first."""
    assert rule == "timm_decay_batch_step"
    out = [start]
    while (nxt := timm_decay_batch_step(out[-1])) > 0:
        out.append(nxt)
    return out
SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Excerpt:
    """What one excerpt says about every row it holds: where it was read, the software, the model."""

    raw: str
    source: str
    sha256: str
    lines: int
    retrieved: str
    stack: str
    framework: str
    model: str  # as published
    model_id: str  # what scenarios and result files call it (a zoo id, or a corpus id with its shape)
    model_family: str
    model_params: int | None
    model_shape: Mapping[str, Any] | None
    notes: str | None
    memory_meaning: str | None = None  # which counter its memory figures are (MEMORY_MEANINGS)


@dataclass(frozen=True)
class Row:
    source_slug: str
    model: str
    gpu_profile_id: str | None
    gpu_count: int
    precision_effective: str
    value: str
    unit: str
    # Why this number, transcribed exactly as published, must not be used as a measurement (e.g. a bug in the
    # publisher's own formula that a run log proves); kept so the record stays whole, left out of every fit.
    caveat: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)  # the row as transcribed
    excerpt: Excerpt | None = field(default=None, compare=False)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("check", "list", "build"))
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="the corpus folder (default: calibration/published)")
    p.add_argument("--out", default=None,
                   help="the result files' folder (default: results/published for the shipped corpus, "
                        "<root>/results/published for another --root)")
    p.add_argument("--summary", action="store_true", help="list: counts by GPU, model, precision and source")


def default_out(root: Path) -> Path:
    return DEFAULT_OUT if root.resolve() == DEFAULT_ROOT.resolve() else root / "results" / "published"


def default_models(root: Path) -> Path:
    return DEFAULT_MODELS if root.resolve() == DEFAULT_ROOT.resolve() else root / "published_models.json"


def main(args: argparse.Namespace) -> int:
    root = Path(args.root)
    out = Path(args.out) if args.out else default_out(root)
    models_path = default_models(root)
    rows, problems = check_corpus(root)
    if args.action in ("check", "build"):
        files: dict[str, str] = {}
        skipped: Counter = Counter()
        if not problems:
            try:
                files, skipped = build_files(rows)
                # No row to build makes no file: `build` would then remove every file it owns under out.
                refuse_empty(len(files), what=f"rows that build into a result file ({len(rows)} rows, none "
                             f"buildable: {_counts(skipped)})", source=root / "sources", target=out)
            except InputError as exc:
                problems = [str(exc)]
        models = models_text(rows) if not problems else ""
        if args.action == "build" and not problems:
            written, removed = write_files(files, out)
            if not models_path.is_file() or models_path.read_text(encoding="utf-8") != models:
                atomic_write(models_path, models)
            print(f"bench published: wrote {len(files)} result files under {out} ({written} changed, {removed} "
                  f"stale removed) and the corpus models to {models_path}; {sum(skipped.values())} rows not "
                  "built: " + _counts(skipped))
            return 0
        if not problems:
            problems = compare_files(files, out)
            if not models_path.is_file() or models_path.read_text(encoding="utf-8", errors="replace") != models:
                problems.append(f"{models_path}: not what the transcriptions build (run `python -m bench published "
                                "build` and commit the result)")
        for problem in problems:
            print(f"bench published: {problem}", file=sys.stderr)
        if problems:
            return 2
        print(f"bench published: {len(rows)} rows in {len(set(r.source_slug for r in rows))} sources: all cited and "
              f"found verbatim in their excerpts; {len(files)} result files under {out} are what "
              "`python -m bench published build` makes of them")
        return 0
    for line in summary_lines(rows) if args.summary else (_row_line(r) for r in rows):
        print(line)
    for problem in problems:  # exit 2 says something was wrong; these lines say what
        print(f"bench published: {problem}", file=sys.stderr)
    return 2 if problems else 0


def check_corpus(root: Path) -> tuple[list[Row], list[str]]:
    """Every row of every transcription under root, and every problem found (empty when the corpus is sound)."""
    sources = sorted((root / "sources").glob("*.yaml")) if (root / "sources").is_dir() else []
    if not sources:
        return [], [f"{root / 'sources'}: no transcriptions (*.yaml) found"]
    known_gpus = set(load_profiles(DEFAULT_PROFILES_DIR)[0])
    rows: list[Row] = []
    problems: list[str] = []
    for path in sources:
        try:
            rows.extend(check_source(path, root, known_gpus))
        except InputError as exc:
            problems.append(str(exc))
    return rows, problems


def check_source(path: Path, root: Path, known_gpus: Iterable[str]) -> list[Row]:
    """The rows of one transcription; InputError names the first thing wrong (file, field, value, expected)."""
    src = str(path)
    r = Reader(loader.load_file(path, SOURCE_FILE), src)
    r.reject_unknown(("schema", "source_slug", "title", "excerpts"))
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    slug = r.string("source_slug")
    if slug != path.stem:
        raise r.fail("source_slug", slug, f"the file's name without .yaml ({path.stem})")
    r.string("title")
    rows: list[Row] = []
    for i, item in enumerate(r.list_of("excerpts", max_items=1000)):
        rows.extend(_excerpt(Reader(item, src, f"excerpts[{i}]"), root, slug, set(known_gpus)))
    return rows


def _excerpt(e: Reader, root: Path, slug: str, known_gpus: set[str]) -> list[Row]:
    e.reject_unknown(("raw", "excerpt_sha256", "source", "sha256", "lines", "retrieved", "stack", "framework", "model", "model_zoo_id",
                      "model_id", "model_family", "model_shape", "model_params", "memory_meaning", "notes", "rows"))
    source = e.string("source")
    cited = REPO_SOURCE.match(source)
    if not cited or not cited.group("end"):
        raise e.fail("source", source, "owner/repo@<commit>:<path>#L<start>-L<end>")
    start, end = int(cited.group("start")), int(cited.group("end"))
    sha = e.string("sha256")
    if not SHA256.match(sha):
        raise e.fail("sha256", sha, "the 64-hex sha256 of the whole upstream file")
    total = e.integer("lines", minimum=1, maximum=10_000_000)
    if not start <= end <= total:
        raise e.fail("source", source, f"a line range within the upstream file's {total} lines")
    retrieved = e.date("retrieved")
    stack = e.choice("stack", STACKS)
    framework = e.string("framework")
    model = e.string("model")
    zoo = e.raw("model_zoo_id", None)
    if zoo is not None and not isinstance(zoo, str):
        raise e.fail("model_zoo_id", zoo, "a zoo model id or null")
    params = e.integer("model_params", None, minimum=1, maximum=10**13)
    model_id, family, shape = _model_identity(e, params)
    body, own = _raw_excerpt(e, root, slug, source=source, sha256=sha, lines=total, retrieved=str(retrieved))
    if len(body) != end - start + 1:
        raise e.fail("raw", e.raw("raw"), f"the {end - start + 1} upstream lines {start}-{end} (it has {len(body)})")
    _same_excerpt(e, own)
    meaning = e.choice("memory_meaning", MEMORY_MEANINGS, None)
    excerpt = Excerpt(str(e.raw("raw")), source, sha, total, str(retrieved), stack, framework, model, model_id, family,
                      params, shape, e.string("notes", None), meaning)
    rows = []
    for j, item in enumerate(e.list_of("rows", max_items=10_000)):
        rows.append(_row(Reader(item, e.source, e.field(f"rows[{j}]")), body, start, end, slug, excerpt, known_gpus,
                         csv=cited.group("path").lower().endswith(".csv"), root=root))
    if meaning is None and any(r.unit in MEMORY_UNITS for r in rows):
        raise e.fail("memory_meaning", None, "which counter the memory figures are: " + ", ".join(MEMORY_MEANINGS)
                     + " (the source's code or text says which; cite it in notes)")
    return rows


def _model_identity(e: Reader, params: int | None) -> tuple[str, str, Mapping[str, Any] | None]:
    """model_id, family and transformer shape: a zoo id takes the zoo's family; any other id must say its family
    and give its size (model_params as published, or model_shape) so a scenario naming it can be planned."""
    model_id = e.string("model_id")
    if not MODEL_ID.match(model_id):
        raise e.fail("model_id", model_id, "a lowercase id (letters, digits, _): the zoo id, or a new id for a "
                     "model the zoo does not build")
    zoo_entry = load_catalog().get(model_id)
    family = e.choice("model_family", FAMILIES, zoo_entry["family"] if zoo_entry else None)
    if family is None:
        raise e.fail("model_family", None, f"the model family ({', '.join(FAMILIES)}): {model_id} is not a zoo id")
    shape = e.sub("model_shape")
    out = None
    if shape is not None:
        shape.reject_unknown((*SHAPE_KEYS, "mlp", "tie_embeddings", "seq_len", "loss", "norm", "dropout"))
        optional = ("kv_heads", "vocab") if family == "vit" else ("kv_heads",)  # a ViT has no token vocabulary
        out = {key: shape.integer(key, None, minimum=1, maximum=10**7) if key in optional else
               shape.integer(key, minimum=1, maximum=10**7) for key in SHAPE_KEYS}
        out["mlp"] = shape.choice("mlp", ("gelu", "swiglu"))
        tie = shape.raw("tie_embeddings", None)
        if tie is not None and not isinstance(tie, bool):
            raise shape.fail("tie_embeddings", tie, "true or false")
        out["tie_embeddings"] = tie
        out["seq_len"] = shape.integer("seq_len", None, minimum=1, maximum=10**7)  # the config's default context
        out["loss"] = shape.choice("loss", SHAPE_LOSSES, None)
        out["norm"] = shape.choice("norm", SHAPE_NORMS, None)
        out["dropout"] = shape.number("dropout", None, minimum=0.0, maximum=1.0)
        out = {k: v for k, v in out.items() if v is not None}
    if zoo_entry is None and params is None and out is None:
        raise e.fail("model_params", None, f"the parameter count as published, or model_shape: {model_id} is not "
                     "a zoo id, so a plan needs its size")
    return model_id, family, out


def _raw_excerpt(e: Reader, root: Path, slug: str, **expected: Any) -> tuple[list[str], str]:
    """The excerpt's verbatim lines and the file's own sha256 (for _same_excerpt); its header must agree with the
    transcription's citation."""
    rel = e.string("raw")
    path = _excerpt_path(e, root, rel, slug)
    data = loader.read_file(path, EXCERPT_FILE)
    text = loader.decode(data, str(path), EXCERPT_FILE).split("\n")
    if text and text[-1] == "":
        text.pop()
    header: dict[str, str] = {}
    # The header is the `# key: value` lines of HEADER_KEYS, each once; the excerpt starts at the first other line
    # (so an upstream line that itself starts with "# ", a Markdown heading, stays part of the excerpt).
    while text and len(header) < len(HEADER_KEYS) and text[0].startswith("# "):
        key, sep, value = text[0][2:].partition(": ")
        if not sep or key.strip() not in HEADER_KEYS or key.strip() in header:
            break
        header[key.strip()] = value.strip()
        text.pop(0)
    for key in HEADER_KEYS:
        if key not in header:
            raise InputError(str(path), f"header.{key}", None, f"a '# {key}: ...' header line")
    for key, value in expected.items():
        if header[key] != str(value):
            raise InputError(str(path), f"header.{key}", header[key], f"the transcription's {key} ({value})")
    return text, hashlib.sha256(data).hexdigest()


def _same_excerpt(e: Reader, own_sha256: str) -> None:
    """The excerpt file is the one transcribed: its own sha256 is `excerpt_sha256` (the upstream file's is `sha256`),
    so an excerpt edited after its rows were checked, even together with them, is refused (issue 34)."""
    recorded = e.string("excerpt_sha256", None)
    if recorded != own_sha256:
        raise e.fail("excerpt_sha256", recorded, f"the sha256 of {e.raw('raw')} as transcribed; the file now hashes "
                     f"to {own_sha256} (an excerpt is upstream text verbatim: if it was edited, restore it from "
                     "upstream; if it was re-read, check every row against it and record the new hash)")


def _excerpt_path(e: Reader, root: Path, rel: str, slug: str) -> Path:
    """root/rel, a regular file under raw/<slug>/ reached without a symbolic link (a link could point anywhere, or
    at itself): refused by name, with the link, never a traceback."""
    raw_root = root / "raw" / slug
    path = Path(os.path.normpath(root / rel))
    if raw_root not in path.parents:
        raise e.fail("raw", rel, f"a file under raw/{slug}/")
    top = root / "raw"
    names = path.relative_to(top).parts
    for here in (top, *(top.joinpath(*names[:n + 1]) for n in range(len(names)))):
        if os.path.islink(here):
            try:
                target = os.readlink(here)
            except OSError as exc:
                target = exc.strerror or type(exc).__name__
            raise e.fail("raw", rel, f"a regular file, not a symbolic link ({here} -> {target}): copy the upstream "
                         "lines into the corpus")
    return path


def _row(w: Reader, body: list[str], start: int, end: int, slug: str, excerpt: Excerpt, known_gpus: set[str], *,
         csv: bool, root: Path | None = None) -> Row:
    w.reject_unknown(("line", "gpu_name_as_published", "gpu_profile_id", "gpu_count", "parallelism",
                      "precision_as_published", "precision_effective", "precision_reason", "batch_per_gpu",
                      "global_batch", "seq_len", "value", "unit", "per_gpu", "caveat", "adapter", "inferred"))
    line = w.integer("line", minimum=start, maximum=end)
    w.string("gpu_name_as_published")
    gpu = w.raw("gpu_profile_id", None)
    if gpu is not None and (not isinstance(gpu, str) or gpu not in known_gpus):
        raise w.fail("gpu_profile_id", gpu, "a GPU profile id (gpu_profiles/) or null when the source is ambiguous")
    count = w.integer("gpu_count", minimum=1, maximum=100_000)
    w.choice("parallelism", PARALLELISMS)
    w.string("precision_as_published")
    precision = w.choice("precision_effective", EFFECTIVE_PRECISIONS)
    w.string("precision_reason")
    for key in ("batch_per_gpu", "global_batch", "seq_len"):
        w.integer(key, None, minimum=1, maximum=10**9)
    unit = w.string("unit")
    if unit not in UNITS and not unit.startswith("other:"):
        raise w.fail("unit", unit, "one of " + ", ".join(UNITS) + ", or other:<words>")
    value = w.raw("value")
    if w.raw("inferred", None) is not None and unit != OOM_INFERRED_UNIT:
        raise w.fail("inferred", w.raw("inferred"), f"only on a row with unit {OOM_INFERRED_UNIT}")
    if unit == OOM_UNIT:
        text = _oom_outcome(w, value, body[line - start], line, csv=csv)
    elif unit == OOM_INFERRED_UNIT:
        text = _inferred_oom(w, value, body[line - start], line, csv=csv, slug=slug, root=root)
    else:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise w.fail("value", value, "the number as published")
        text = _as_published(value)
        if _number(text) is None:
            raise w.fail("value", value, "a number as published: digits with optional thousands commas and decimals, "
                         "then optionally a unit after a space ('938 img/s', '2,540', '82.4')")
        if unit == "bytes_memory" and not _WHOLE_BYTES.match(text):
            raise w.fail("value", value, "a whole number of bytes as printed (an average or a fraction of a byte is "
                         "not a peak: leave it out or give it an other:<words> unit)")
        if not _stands_on(text, body[line - start], csv=csv):
            raise w.fail("value", value, f"a number that stands on upstream line {line}: {body[line - start][:160]!r}")
    if not isinstance(w.raw("per_gpu"), bool):
        raise w.fail("per_gpu", w.raw("per_gpu"), "true or false")
    caveat = w.string("caveat", None)
    adapter = w.sub("adapter")  # a parameter-efficient fine-tune: the base model frozen, an adapter trained
    if adapter is not None:
        adapter.reject_unknown(("method", "rank", "targets", "quantization"))
        adapter.choice("method", ADAPTER_METHODS)
        adapter.integer("rank", None, minimum=1, maximum=100_000)
        adapter.string("targets", None)
        adapter.choice("quantization", ("none", "nf4", "nf4_double_quant", "int8", "fp4"), "none")
    return Row(slug, excerpt.model, gpu, count, precision, text, unit, caveat, MappingProxy(dict(w.data)), excerpt)


def _oom_outcome(w: Reader, value: Any, line_text: str, line: int, *, csv: bool) -> str:
    """An out-of-memory row: the token as printed, standing whole on its line; no figure, and a batch per GPU."""
    if not isinstance(value, str) or not value.strip():
        raise w.fail("value", value, "the out-of-memory token exactly as printed, as a string ('OOM', 'OOM*', "
                     "'out of memory')")
    text = value.strip()
    if _number(text) is not None or not _OOM_WORDS.search(text):
        raise w.fail("value", value, "a token that says the run ran out of memory ('OOM', 'OOM*', 'out of memory'); "
                     "a memory figure takes a memory unit (" + ", ".join(MEMORY_UNITS) + ")")
    if not _token_stands_on(text, line_text, csv=csv):
        raise w.fail("value", value, f"the out-of-memory token as printed (case-sensitive) on upstream line {line}: "
                     f"{line_text[:160]!r}")
    if w.raw("per_gpu") is not False:
        raise w.fail("per_gpu", w.raw("per_gpu"), "false: an out-of-memory outcome is no figure per GPU or for all "
                     "GPUs (batch_per_gpu and gpu_count say what ran out)")
    if w.raw("batch_per_gpu", None) is None:
        raise w.fail("batch_per_gpu", None, "the batch per GPU that ran out of memory (without it an out-of-memory "
                     "outcome marks no fit/OOM boundary)")
    return text


def _inferred_oom(w: Reader, value: Any, line_text: str, line: int, *, csv: bool, slug: str,
                  root: Path | None) -> str:
    """An out-of-memory outcome inferred from a retry ladder: the batch that ran as printed (in its CSV column), the
    failed batch (batch_per_gpu) the next rung up the cited rule's ladder, the rule's code cited and found."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise w.fail("value", value, "the batch that ran, as printed on the cited line")
    text = _as_published(value)
    if not text.isdigit() or int(text) < 1:
        raise w.fail("value", value, "the batch that ran, a whole number as printed")
    if w.raw("per_gpu") is not False:
        raise w.fail("per_gpu", w.raw("per_gpu"), "false: an out-of-memory outcome is no figure")
    failed = w.raw("batch_per_gpu", None)
    if failed is None:
        raise w.fail("batch_per_gpu", None, "the batch per GPU inferred to have failed (the next rung up)")
    inf = w.sub("inferred")
    if inf is None:
        raise w.fail("inferred", None, "the rule the failure is inferred by: {rule, start_batch, cause, code: "
                     "[cited raw excerpts of the ladder's code]}" + (", and the CSV column" if csv else ""))
    inf.reject_unknown(("rule", "start_batch", "column", "cause", "code"))
    rule = inf.choice("rule", tuple(LADDER_RULES))
    start_batch = inf.integer("start_batch", minimum=1, maximum=10**9)
    inf.string("cause")
    if csv:
        column = inf.integer("column", minimum=1, maximum=10_000)
        fields = _csv_fields(line_text)
        if column > len(fields) or fields[column - 1] != text:
            raise w.fail("value", value, f"the batch printed in CSV column {column} of upstream line {line}: "
                         f"{line_text[:160]!r}")
    elif not _stands_on(text, line_text):
        raise w.fail("value", value, f"a number that stands on upstream line {line}: {line_text[:160]!r}")
    code_lines: set[str] = set()
    for k, item in enumerate(inf.list_of("code", max_items=10)):
        code_lines.update(_code_excerpt(Reader(item, inf.source, inf.field(f"code[{k}]")), root, slug))
    missing = [c for c in LADDER_RULES[rule] if c not in code_lines]
    if missing:
        raise inf.fail("code", None, f"excerpts of the code that defines {rule}, holding its line {missing[0]!r}")
    ladder = retry_ladder(rule, start_batch)
    ran = int(text)
    if ran not in ladder or ran == start_batch:
        raise w.fail("value", value, f"a batch below the start {start_batch} on the {rule} ladder "
                     f"({', '.join(map(str, ladder[:10]))}, ...): the run at the start batch implies no failure")
    if failed != ladder[ladder.index(ran) - 1]:
        raise w.fail("batch_per_gpu", failed, f"{ladder[ladder.index(ran) - 1]}: the rung above {ran} on the {rule} "
                     f"ladder from {start_batch}")
    return text


def _code_excerpt(c: Reader, root: Path | None, slug: str) -> set[str]:
    """A cited excerpt of upstream code (raw/<slug>/...): its stripped lines, header checked against the citation."""
    c.reject_unknown(("raw", "excerpt_sha256", "source", "sha256", "lines", "retrieved"))
    source = c.string("source")
    cited = REPO_SOURCE.match(source)
    if not cited or not cited.group("end"):
        raise c.fail("source", source, "owner/repo@<commit>:<path>#L<start>-L<end>")
    start, end = int(cited.group("start")), int(cited.group("end"))
    sha = c.string("sha256")
    if not SHA256.match(sha):
        raise c.fail("sha256", sha, "the 64-hex sha256 of the whole upstream file")
    total = c.integer("lines", minimum=1, maximum=10_000_000)
    if not start <= end <= total:
        raise c.fail("source", source, f"a line range within the upstream file's {total} lines")
    retrieved = c.date("retrieved")
    if root is None:
        raise c.fail("raw", c.raw("raw"), "a corpus root to read the excerpt from")
    body, own = _raw_excerpt(c, root, slug, source=source, sha256=sha, lines=total, retrieved=str(retrieved))
    if len(body) != end - start + 1:
        raise c.fail("raw", c.raw("raw"), f"the {end - start + 1} upstream lines {start}-{end} (it has {len(body)})")
    _same_excerpt(c, own)
    return {line.strip() for line in body}


def _csv_fields(line: str) -> list[str]:
    """A CSV line's fields, unquoted (a number or token must be one whole field)."""
    return [field.strip().strip('"') for field in line.split(",")]


def _token_stands_on(token: str, line: str, *, csv: bool = False) -> bool:
    """A word token stands on the line whole and case-sensitively: 'OOM' stands in '| OOM |' and 'OOM*', not in
    'OOMs' or 'ZOOM'; in a CSV file it must be one whole field."""
    if csv:
        return token in _csv_fields(line)
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(token) + r"(?![A-Za-z0-9_])", line) is not None


def _stands_on(number: str, line: str, *, csv: bool = False) -> bool:
    """The number appears on the line as a whole number: '12' does not stand in '112' or '12.5'.

    In a CSV file (the cited upstream path ends in .csv) it must be one whole field; elsewhere (Markdown tables,
    text) a comma is a thousands separator, so '234.5' does not stand in '1,234.5'.
    """
    if csv:
        return number in _csv_fields(line)
    return re.search(r"(?<![\d.,])" + re.escape(number) + r"(?![\d]|[.,]\d)", line) is not None


def _as_published(value: str | int | float) -> str:
    """The text to find on the cited line: a string as written; a YAML number as Python prints it (1234.5)."""
    if isinstance(value, str):
        return value.strip()
    return repr(value) if isinstance(value, float) else str(value)


# ---------------------------------------------------------------- build: transcriptions -> result files

# Units as transcribed -> the result files' units (vocab.PUBLISHED_UNITS): images and sequences are samples.
_SAMPLE_UNITS = ("samples_per_s", "images_per_s", "sequences_per_s")


def result_unit(unit: str, *, per_gpu: bool) -> str | None:
    """The result-file unit for a transcribed one; None for what is not a speed (memory, other:...)."""
    base = "samples_per_s" if unit in _SAMPLE_UNITS else unit
    if base in ("samples_per_s", "tokens_per_s"):
        return f"{base}_per_gpu" if per_gpu else base
    if base in ("s_per_iteration", "ms_per_iteration"):
        return base
    return None


OOM_NOT_BUILT = "out-of-memory outcome (for the memory model)"
OOM_INFERRED_NOT_BUILT = ("out-of-memory outcome inferred from a retry ladder, not printed (for calibration/memory_report.py "
                          "only: no plan's verdict rests on it)")


def why_not_built(row: Row) -> str | None:
    """None when the row becomes a measurement in a result file; else the reason (counted by `build`)."""
    f = row.fields
    if row.unit == OOM_INFERRED_UNIT:
        return OOM_INFERRED_NOT_BUILT
    if row.caveat is not None:
        return "caveat (not to be used)"
    if row.gpu_profile_id is None:
        return "GPU variant not published"
    if row.precision_effective not in PRECISIONS:
        return "effective precision unknown"
    if row.unit == OOM_UNIT or row.unit in MEMORY_UNITS:
        return _memory_row_unbuilt(row)
    if result_unit(row.unit, per_gpu=bool(f.get("per_gpu"))) is None:
        return "a time per run or another unit (other:...), not a step time"
    if f.get("batch_per_gpu") is None:
        return "batch per GPU not published"
    if row.unit.startswith("tokens") and f.get("seq_len") is None:
        return "tokens/s without a sequence length"
    adapter = f.get("adapter")
    if adapter and adapter.get("method") not in ("lora", "qlora"):
        return "an adapter method the planner does not model (lora and qlora only)"
    return None


def _memory_row_unbuilt(row: Row) -> str | None:
    """A memory figure or an out-of-memory outcome becomes a measurement only for one GPU with a known batch, the
    planner's adapters, and (for a figure) a known counter: what a plan can match to one of its options exactly."""
    f = row.fields
    if row.gpu_count != 1:
        return OOM_NOT_BUILT if row.unit == OOM_UNIT else "memory figure of a multi-GPU run (for the memory model)"
    if f.get("batch_per_gpu") is None:
        return "batch per GPU not published"
    adapter = f.get("adapter")
    if adapter and adapter.get("method") not in ("lora", "qlora"):
        return "an adapter method the planner does not model (lora and qlora only)"
    if row.unit in MEMORY_UNITS and (row.excerpt is None or row.excerpt.memory_meaning not in MEMORY_MEANINGS):
        return "memory figure whose counter is not one the planner reports (for the memory model)"
    return None


def file_name(row: Row) -> str:
    """<gpu-profile-id>/<source>__<model-id>[__s<seq>].json: one file per source, model, GPU and sequence length."""
    assert row.excerpt is not None and row.gpu_profile_id is not None
    seq = row.fields.get("seq_len")
    adapter = row.fields.get("adapter")
    tuned = f"__{adapter['method']}{adapter.get('rank') or ''}" if adapter else ""
    return (f"{row.gpu_profile_id}/{row.source_slug}__{row.excerpt.model_id}{f'__s{seq}' if seq else ''}"
            f"{tuned}.json")


def build_files(rows: Iterable[Row]) -> tuple[dict[str, str], Counter]:
    """The result files the rows make (relative path -> JSON text) and the rows left out, counted by reason."""
    grouped: dict[str, list[Row]] = defaultdict(list)
    skipped: Counter = Counter()
    for row in rows:
        why = why_not_built(row)
        if why:
            skipped[why] += 1
        else:
            grouped[file_name(row)].append(row)
    files = {name: json.dumps(_result_file(group), indent=1, ensure_ascii=False) + "\n"
             for name, group in sorted(grouped.items())}
    for name, text in files.items():  # what build writes, the planner must read: refuse it here, naming the rows
        try:
            parse_result_text(text, name)
        except InputError as exc:
            rows_of = ", ".join(f"{r.source_slug} line {r.fields.get('line')}" for r in grouped[name])
            raise InputError(name, exc.field, exc.value, f"{exc.expected} (built from {rows_of})") from None
    return files, skipped


def _result_file(rows: list[Row]) -> dict[str, Any]:
    first = rows[0]
    ex = first.excerpt
    assert ex is not None
    seq = first.fields.get("seq_len")
    model: dict[str, Any] = {"name": ex.model_id, "family": ex.model_family, "published_name": ex.model}
    if ex.model_params is not None:
        model["params"] = ex.model_params
    if seq:
        model["seq_len"] = seq
    if ex.model_shape is not None and seq:
        model["transformer"] = {**ex.model_shape, "seq_len": seq}
    retrieved = max(r.excerpt.retrieved for r in rows if r.excerpt)
    return {
        "schema": RESULT_SCHEMA,
        "created_utc": f"{retrieved}T00:00:00Z",
        "partial": False,
        "environment": {
            "device": "cuda", "hostname": f"published: {first.source_slug}",
            "gpu_name": first.fields.get("gpu_name_as_published"), "gpu_profile_id": first.gpu_profile_id,
            "trainplan_version": VERSION, "cudnn": None,
            "unmeasured": {"cudnn": "not published; see each measurement's provenance.framework"},
        },
        "model": model,
        "settings": {"source_slug": first.source_slug,
                     "command": ["python", "-m", "bench", "published", "build"],
                     **({"adapter": {"kind": first.fields["adapter"]["method"],
                                     "rank": first.fields["adapter"].get("rank"),
                                     "targets": first.fields["adapter"].get("targets")}}
                        if first.fields.get("adapter") else {})},
        "measurements": [_measurement(r) for r in rows],
        "warnings": [f"published figures transcribed from {first.source_slug} (calibration/published/sources/"
                     f"{first.source_slug}.yaml); regenerate with `python -m bench published build`"],
    }


# Result-file field of each memory counter (planner.inputs.resultfile reads the same mapping).
_MEMORY_FIELD = {"max_memory_allocated": "peak_allocated_bytes", "max_memory_reserved": "peak_reserved_bytes",
                 "device_used": "device_used_bytes"}


def _memory_fields(row: Row) -> dict[str, Any]:
    """A memory row's status, its figure in bytes under its counter's field, and what it does not say."""
    ex = row.excerpt
    assert ex is not None
    if row.unit == OOM_UNIT:
        return {"status": "oom", "reason": f"ran out of memory (published: {row.value!r})",
                "unmeasured": {"step_time_s": "the run ran out of memory"}}
    assert ex.memory_meaning is not None
    value = _number(row.value)
    assert value is not None
    return {"status": "ok", "reason": None, _MEMORY_FIELD[ex.memory_meaning]: value * MEMORY_UNIT_BYTES[row.unit],
            "unmeasured": {"step_time_s": "a published memory figure: no time with it"}}


def _measurement(row: Row) -> dict[str, Any]:
    f, ex = row.fields, row.excerpt
    assert ex is not None
    micro = int(f["batch_per_gpu"])
    memory = row.unit == OOM_UNIT or row.unit in MEMORY_UNITS
    unit = row.unit if memory else result_unit(row.unit, per_gpu=bool(f.get("per_gpu")))
    cited = REPO_SOURCE.match(ex.source)
    assert cited is not None
    line_source = f"{cited.group('repo')}@{cited.group('commit')}:{cited.group('path')}#L{f['line']}"
    status = (_memory_fields(row) if memory else
              {"status": "ok", "reason": None,
               "unmeasured": {"step_time_s": f"published as {unit}; the reader derives the step time",
                              "peak_allocated_bytes": "not published with this figure"}})
    figure = None if row.unit == OOM_UNIT else {"value": _number(row.value), "unit": unit}
    return {
        "source": "published", "precision": row.precision_effective, "batch_size": micro,
        "status": status.pop("status"), "reason": status.pop("reason"), "step_time_s": None,
        "unmeasured": status.pop("unmeasured"), **status,
        "provenance": {
            "kind": "published", "source": line_source, "sha256": ex.sha256, "lines": ex.lines,
            "retrieved": ex.retrieved, "stack": ex.stack, "framework": ex.framework,
            "precision_as_published": f["precision_as_published"], "precision_effective": row.precision_effective,
            "precision_reason": f["precision_reason"],
            **({"published": figure} if figure else {}),  # _row refused what does not parse
            **({"memory_meaning": ex.memory_meaning} if memory and figure else {}),
            "excerpt": f"calibration/published/{ex.raw}", "value_as_published": row.value,
            "gpu_name_as_published": f["gpu_name_as_published"],
        },
        "seq_len": f.get("seq_len"), "gpu_count": row.gpu_count,
        "parallelism": {"data": "none" if row.gpu_count == 1 and f["parallelism"] in ("none", "ddp") else
                        (f["parallelism"] if f["parallelism"] != "unknown" else "none"), "tensor": 1, "pipeline": 1},
        "global_batch": f.get("global_batch"), "micro_batch": micro, "batch_unit": "samples",
    }


_NUMBER = re.compile(r"^\s*((?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)(?:\s+[^\s0-9].*)?\s*$")


def _number(text: str) -> float | None:
    """The published text as a number: thousands commas dropped, a unit after a space allowed ('2,470 img/s');
    None for anything else ('1.2e3', '1 234', '1,5', '~1,234', 'n/a'), which `check` refuses."""
    match = _NUMBER.match(text)
    if not match:
        return None
    value = float(match.group(1).replace(",", ""))
    return value if value > 0 else None


def models_text(rows: Iterable[Row]) -> str:
    """The corpus models the zoo does not build, keyed by id: family, parameters (as published, or null), the
    transformer shape with its default context, the names as published and the sources (JSON text)."""
    zoo = load_catalog()
    models: dict[str, dict[str, Any]] = {}
    seqs: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        ex = r.excerpt
        if ex is None or ex.model_id in zoo:
            continue
        entry = models.setdefault(ex.model_id, {"family": ex.model_family, "params": ex.model_params,
                                                 "transformer": dict(ex.model_shape) if ex.model_shape else None,
                                                 "published_names": set(), "sources": set()})
        entry["published_names"].add(ex.model)
        entry["sources"].add(r.source_slug)
        if entry["params"] is None and ex.model_params is not None:
            entry["params"] = ex.model_params
        if r.fields.get("seq_len"):
            seqs[ex.model_id][int(r.fields["seq_len"])] += 1
    out = {}
    for model_id, entry in sorted(models.items()):
        shape = entry["transformer"]
        if shape is not None:
            common = seqs[model_id].most_common(1)
            # the context a plan assumes: the shape's stated default, else the one most rows were published at
            shape["seq_len"] = shape.get("seq_len") or (common[0][0] if common else None)
            if shape["seq_len"] is None:
                shape = None
        out[model_id] = {"family": entry["family"], "params": entry["params"], "transformer": shape,
                         "published_names": sorted(entry["published_names"]), "sources": sorted(entry["sources"])}
    return json.dumps({"schema": MODELS_SCHEMA, "models": out}, indent=1, ensure_ascii=False) + "\n"


def write_files(files: Mapping[str, str], out: Path) -> tuple[int, int]:
    """Write the built files (atomically, only those that changed) and remove the stale ones the build owns
    (<source>__<model>*.json under out); returns (changed, removed)."""
    changed = removed = 0
    for name, text in files.items():
        path = out / name
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
        changed += 1
    for path in _owned_files(out):
        if path.relative_to(out).as_posix() not in files:
            path.unlink()
            removed += 1
    return changed, removed


def _owned_files(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("*/*__*.json") if p.is_file()) if out.is_dir() else []


def compare_files(files: Mapping[str, str], out: Path) -> list[str]:
    """One problem per result file that differs from what `build` makes, is missing, or is left over."""
    hint = "run `python -m bench published build` and commit the result"
    problems = []
    for name, text in files.items():
        path = out / name
        if not path.is_file():
            problems.append(f"{path}: missing ({hint})")
        elif path.read_text(encoding="utf-8", errors="replace") != text:
            problems.append(f"{path}: differs from what its transcription builds ({hint}; never edit it by hand)")
    for path in _owned_files(out):
        if path.relative_to(out).as_posix() not in files:
            problems.append(f"{path}: no transcription builds it any more ({hint})")
    return problems


def _counts(counter: Counter) -> str:
    return ", ".join(f"{why} {n}" for why, n in counter.most_common()) or "none"


def summary_lines(rows: Iterable[Row]) -> list[str]:
    rows = list(rows)
    out = [f"measurements: {len(rows)} ({sum(r.caveat is not None for r in rows)} with a caveat: not to be used)",
           f"GPU profiles: {len({r.gpu_profile_id for r in rows if r.gpu_profile_id})}",
           f"models: {len({_model_id(r) for r in rows})} ({len({r.model for r in rows})} names as published)",
           f"GPU architectures with 2 or more sources: {', '.join(_shared_architectures(rows)) or 'none'}",
           f"sources: {len({r.source_slug for r in rows})}",
           f"memory rows: {sum(r.unit in MEMORY_UNITS for r in rows)} (a peak figure with its memory_meaning; for "
           "the memory model)",
           f"out-of-memory rows: {sum(r.unit == OOM_UNIT for r in rows)} (a configuration published as out of "
           "memory; for the memory model)",
           f"inferred out-of-memory rows: {sum(r.unit == OOM_INFERRED_UNIT for r in rows)} (a failure implied by a "
           "cited retry ladder, not printed; for calibration/memory_report.py only)"]
    for title, counts in (("by GPU", Counter(r.gpu_profile_id or "(variant not published)" for r in rows)),
                          ("by precision", Counter(r.precision_effective for r in rows)),
                          ("by source", Counter(r.source_slug for r in rows)),
                          ("by model", Counter(_model_id(r) for r in rows))):
        out.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return out


def _model_id(r: Row) -> str:
    return r.excerpt.model_id if r.excerpt else r.model


def _shared_architectures(rows: list[Row]) -> list[str]:
    """Architectures (the GPU profiles' `architecture`) that two or more sources publish figures for."""
    profiles = load_profiles(DEFAULT_PROFILES_DIR)[0]
    sources: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        if r.gpu_profile_id and r.gpu_profile_id in profiles:
            sources[str(profiles[r.gpu_profile_id].architecture)].add(r.source_slug)
    return sorted(a for a, s in sources.items() if len(s) >= 2)


def _row_line(r: Row) -> str:
    outcome = (f"{r.value} (out of memory at batch {r.fields.get('batch_per_gpu')} per GPU)" if r.unit == OOM_UNIT
               else f"ran at {r.value}; inferred out of memory at batch {r.fields.get('batch_per_gpu')} per GPU"
               if r.unit == OOM_INFERRED_UNIT else f"{r.value} {r.unit}")
    return (f"{r.source_slug}\t{r.model}\t{r.gpu_profile_id or '-'}\tx{r.gpu_count}\t{r.precision_effective}\t"
            f"{outcome}")
