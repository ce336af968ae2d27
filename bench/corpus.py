"""`python -m bench published check|list`: the cited corpus of published training measurements, checked against
the verbatim excerpts it was transcribed from.

Layout (outside results/, so no results scan ever reads it):
  bench/published/raw/<source-slug>/<name>.txt   the upstream lines verbatim, after a `# key: value` header
                                                  (source, sha256, lines, retrieved, what)
  bench/published/sources/<source-slug>.yaml      the transcription: one row per published number, each citing
                                                  the upstream line it stands on (schema trainplan.published-source/1)

`check` refuses (exit 2, one line per problem naming file and field) a transcription whose citation, header or
enums are wrong, or whose number does not stand verbatim on the upstream line it cites.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.inputs import loader
from planner.inputs.check import Reader
from planner.inputs.errors import InputError
from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles
from planner.inputs.resultfile import REPO_SOURCE
from planner.vocab import DATA_PARALLELISMS, EFFECTIVE_PRECISIONS, STACKS

SCHEMA = "trainplan.published-source/1"
DEFAULT_ROOT = Path(__file__).resolve().parent / "published"  # raw/ excerpts and sources/ transcriptions
SOURCE_FILE = loader.FileKind("published-source transcription (YAML)", "yaml", 4 * loader.MIB, max_nodes=400_000)
EXCERPT_FILE = loader.FileKind("published excerpt (text)", "text", 4 * loader.MIB)
PARALLELISMS = (*DATA_PARALLELISMS, "unknown")
# Units as published; the planner converts once, when it reads a row. "other:<words>" keeps an unusual unit honest.
UNITS = ("samples_per_s", "images_per_s", "sequences_per_s", "tokens_per_s", "s_per_iteration", "ms_per_iteration",
         "gib_memory")
HEADER_KEYS = ("source", "sha256", "lines", "retrieved", "what")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


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


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("check", "list"))
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="the corpus folder (default: bench/published)")
    p.add_argument("--summary", action="store_true", help="list: counts by GPU, model, precision and source")


def main(args: argparse.Namespace) -> int:
    root = Path(args.root)
    rows, problems = check_corpus(root)
    if args.action == "check":
        for problem in problems:
            print(f"bench published: {problem}", file=sys.stderr)
        if problems:
            return 2
        print(f"bench published: {len(rows)} rows in {len(set(r.source_slug for r in rows))} sources: all cited and "
              "found verbatim in their excerpts")
        return 0
    for line in summary_lines(rows) if args.summary else (_row_line(r) for r in rows):
        print(line)
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
    e.reject_unknown(("raw", "source", "sha256", "lines", "retrieved", "stack", "framework", "model", "model_zoo_id",
                      "model_params", "notes", "rows"))
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
    e.choice("stack", STACKS)
    e.string("framework")
    model = e.string("model")
    zoo = e.raw("model_zoo_id", None)
    if zoo is not None and not isinstance(zoo, str):
        raise e.fail("model_zoo_id", zoo, "a zoo model id or null")
    e.integer("model_params", None, minimum=1, maximum=10**13)
    body = _raw_excerpt(e, root, slug, source=source, sha256=sha, lines=total, retrieved=str(retrieved))
    if len(body) != end - start + 1:
        raise e.fail("raw", e.raw("raw"), f"the {end - start + 1} upstream lines {start}-{end} (it has {len(body)})")
    rows = []
    for j, item in enumerate(e.list_of("rows", max_items=10_000)):
        rows.append(_row(Reader(item, e.source, e.field(f"rows[{j}]")), body, start, end, slug, model, known_gpus,
                         csv=cited.group("path").lower().endswith(".csv")))
    return rows


def _raw_excerpt(e: Reader, root: Path, slug: str, **expected: Any) -> list[str]:
    """The excerpt's verbatim lines; its header must agree with the transcription's citation."""
    rel = e.string("raw")
    raw_root = (root / "raw" / slug).resolve()
    path = (root / rel).resolve()
    if raw_root not in path.parents:
        raise e.fail("raw", rel, f"a file under raw/{slug}/")
    text = loader.decode(loader.read_file(path, EXCERPT_FILE), str(path), EXCERPT_FILE).split("\n")
    if text and text[-1] == "":
        text.pop()
    header: dict[str, str] = {}
    while text and text[0].startswith("# "):
        key, _, value = text.pop(0)[2:].partition(": ")
        header[key.strip()] = value.strip()
    for key in HEADER_KEYS:
        if key not in header:
            raise InputError(str(path), f"header.{key}", None, f"a '# {key}: ...' header line")
    for key, value in expected.items():
        if header[key] != str(value):
            raise InputError(str(path), f"header.{key}", header[key], f"the transcription's {key} ({value})")
    return text


def _row(w: Reader, body: list[str], start: int, end: int, slug: str, model: str, known_gpus: set[str], *,
         csv: bool) -> Row:
    w.reject_unknown(("line", "gpu_name_as_published", "gpu_profile_id", "gpu_count", "parallelism",
                      "precision_as_published", "precision_effective", "precision_reason", "batch_per_gpu",
                      "global_batch", "seq_len", "value", "unit", "per_gpu", "caveat"))
    line = w.integer("line", minimum=start, maximum=end)
    w.string("gpu_name_as_published")
    gpu = w.raw("gpu_profile_id", None)
    if gpu is not None and gpu not in known_gpus:
        raise w.fail("gpu_profile_id", gpu, "a GPU profile id (gpu_profiles/) or null when the source is ambiguous")
    count = w.integer("gpu_count", minimum=1, maximum=100_000)
    w.choice("parallelism", PARALLELISMS)
    w.string("precision_as_published")
    precision = w.choice("precision_effective", EFFECTIVE_PRECISIONS)
    w.string("precision_reason")
    for key in ("batch_per_gpu", "global_batch", "seq_len"):
        w.integer(key, None, minimum=1, maximum=10**9)
    value = w.raw("value")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise w.fail("value", value, "the number as published")
    text = _as_published(value)
    if not _stands_on(text, body[line - start], csv=csv):
        raise w.fail("value", value, f"a number that stands on upstream line {line}: {body[line - start][:160]!r}")
    unit = w.string("unit")
    if unit not in UNITS and not unit.startswith("other:"):
        raise w.fail("unit", unit, "one of " + ", ".join(UNITS) + ", or other:<words>")
    if not isinstance(w.raw("per_gpu"), bool):
        raise w.fail("per_gpu", w.raw("per_gpu"), "true or false")
    caveat = w.string("caveat", None)
    return Row(slug, model, gpu, count, precision, text, unit, caveat)


def _stands_on(number: str, line: str, *, csv: bool = False) -> bool:
    """The number appears on the line as a whole number: '12' does not stand in '112' or '12.5'.

    In a CSV file (the cited upstream path ends in .csv) it must be one whole field; elsewhere (Markdown tables,
    text) a comma is a thousands separator, so '234.5' does not stand in '1,234.5'.
    """
    if csv:
        return number in (field.strip().strip('"') for field in line.split(","))
    return re.search(r"(?<![\d.,])" + re.escape(number) + r"(?![\d]|[.,]\d)", line) is not None


def _as_published(value: str | int | float) -> str:
    """The text to find on the cited line: a string as written; a YAML number as Python prints it (1234.5)."""
    if isinstance(value, str):
        return value.strip()
    return repr(value) if isinstance(value, float) else str(value)


def summary_lines(rows: Iterable[Row]) -> list[str]:
    rows = list(rows)
    out = [f"measurements: {len(rows)} ({sum(r.caveat is not None for r in rows)} with a caveat: not to be used)",
           f"GPU profiles: {len({r.gpu_profile_id for r in rows if r.gpu_profile_id})}",
           f"models: {len({r.model for r in rows})}",
           f"sources: {len({r.source_slug for r in rows})}"]
    for title, counts in (("by GPU", Counter(r.gpu_profile_id or "(variant not published)" for r in rows)),
                          ("by precision", Counter(r.precision_effective for r in rows)),
                          ("by source", Counter(r.source_slug for r in rows)),
                          ("by model", Counter(r.model for r in rows))):
        out.append(f"{title}: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return out


def _row_line(r: Row) -> str:
    return (f"{r.source_slug}\t{r.model}\t{r.gpu_profile_id or '-'}\tx{r.gpu_count}\t{r.precision_effective}\t"
            f"{r.value} {r.unit}")
