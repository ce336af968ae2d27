"""Scenario files in the app: upload (validated like the CLI), download, shipped examples, input-folder keys."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from planner.inputs.errors import InputError
from planner.inputs.filenames import slug
from planner.inputs.scenario import (
    Scenario,
    dump_scenario_yaml,
    load_scenario_bytes,
    load_scenario_file,
)


def scenario_from_upload(name: str, data: bytes, known_gpu_ids: Iterable[str]) -> Scenario:
    """An uploaded scenario file: the same size cap, UTF-8 rule, grammar and validation as a file given to the CLI."""
    return load_scenario_bytes(data, name, known_gpu_ids)


def file_stem(s: Scenario) -> str:
    """The stem of a report or options download: 'resnet-50-on-imagenet-1k-90-epochs'."""
    return slug(s.name, max_chars=60, default="plan")


def scenario_file_name(s: Scenario) -> str:
    """'ResNet-50 on ImageNet-1k (90 epochs)' -> 'resnet-50-on-imagenet-1k-90-epochs.yaml'."""
    return slug(s.name, max_chars=60, default="scenario") + ".yaml"


def download_yaml(s: Scenario) -> str:
    """What the download button gives: the scenario file that reproduces this plan."""
    return dump_scenario_yaml(s)


def load_example(path: str | Path, known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    return load_scenario_file(path, known_gpu_ids)


PRESETS_SUBDIR = "presets"  # scenarios/presets/: the gallery's extra starts (tests parametrize over scenarios/*.yaml)
# The gallery's order: large LLM fine-tunes, adapters on one card, pre-training, vision, a classifier fine-tune.
GALLERY_ORDER = ("llama3-8b-full-finetune-zero3-8gpu", "llama7b-full-finetune", "llama2-7b-lora-24gb",
                 "llama7b-qlora-24gb", "gpt2-124m-10b-tokens", "resnet50-imagenet", "vit-b16-imagenet",
                 "bert-base-finetune")


@dataclass(frozen=True)
class Example:
    path: str
    name: str
    kind: str  # "shipped" (scenarios/*.yaml) or "preset" (scenarios/presets/*.yaml)


def gallery(folder: str | Path) -> list[Example]:
    """Shipped example scenarios and presets, in GALLERY_ORDER (others after, by name); unreadable files left out."""
    found = []
    for kind, sub in (("shipped", Path(folder)), ("preset", Path(folder) / PRESETS_SUBDIR)):
        for path in sorted(sub.glob("*.yaml")):
            try:
                found.append(Example(str(path), load_scenario_file(path).name, kind))
            except InputError:
                continue

    def rank(e: Example) -> tuple[int, str]:
        stem = Path(e.path).stem
        return (GALLERY_ORDER.index(stem) if stem in GALLERY_ORDER else len(GALLERY_ORDER), stem)

    return sorted(found, key=rank)


def example_names(folder: str | Path) -> dict[str, str]:
    """Shipped example scenarios and presets: path -> scenario name (unreadable files are left out of the list)."""
    return {e.path: e.name for e in gallery(folder)}


def folders_fingerprint(dirs: Iterable[str | Path]) -> str:
    """Cheap key for the input folders (names, sizes, mtimes): a new result file or profile changes it."""
    parts = []
    for d in dirs:
        p = Path(d)
        if not p.is_dir():
            parts.append(f"{p}:-")
            continue
        for root, _dirs, files in os.walk(p):
            for f in sorted(files):
                try:
                    st = os.stat(os.path.join(root, f))
                except OSError:
                    continue
                parts.append(f"{root}/{f}:{st.st_size}:{st.st_mtime_ns}")
    return str(zlib.crc32("\n".join(parts).encode("utf-8"))) + f"-{len(parts)}"
