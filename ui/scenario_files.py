"""Scenario files in the app: upload (validated like the CLI), download, shipped examples, input-folder keys."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
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


def example_names(folder: str | Path) -> dict[str, str]:
    """Shipped example scenarios: path -> scenario name (unreadable files are left out of the list)."""
    out = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            out[str(path)] = load_scenario_file(path).name
        except InputError:
            continue
    return out


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
