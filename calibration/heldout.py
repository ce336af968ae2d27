"""The frozen held-out split (calibration/heldout.yaml): which corpus sources no constant is chosen on.

Torch-free. `load_heldout()` reads and checks the file (InputError naming file, field, value and what was expected);
`fit_points()` drops held-out sources' points before a fit; `refuse_heldout()` is the fit's guard: it raises
HeldOutError when asked to fit on a held-out point, so a caller that forgot to filter fails loudly instead of
fitting on the test set. `split_summary()` counts what the split holds (the rule in heldout.yaml, enforced by
tests/test_heldout.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from planner.errors import TrainplanError
from planner.inputs import loader
from planner.inputs.check import Reader

SCHEMA = "trainplan.heldout/1"
HELDOUT_PATH = Path(__file__).resolve().parent / "heldout.yaml"
HELDOUT_FILE = loader.FileKind("held-out split (YAML)", "yaml", 1 * loader.MIB)
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")
MIN_SOURCE_FRACTION = 0.25
MIN_LLM_ROWS = 30
LLM_FAMILY = "decoder"  # an "LLM row": a decoder-family time row
_MEMORY_UNIT_TEXT = re.compile(r"^other:\s*(bytes|[KMG]i?B)\b")
_NOT_TIME_UNITS = ("oom", "oom_inferred")


class HeldOutError(TrainplanError, ValueError):
    """A fit was asked to read points of a held-out source."""


@dataclass(frozen=True)
class HeldOut:
    """The held-out sources, each with why it is held out."""

    sources: Mapping[str, str]  # slug -> why
    path: str = str(HELDOUT_PATH)

    def holds(self, source: str) -> bool:
        return source in self.sources


def load_heldout(path: str | Path = HELDOUT_PATH) -> HeldOut:
    """The split as committed; InputError on a wrong schema, an unknown key, a malformed or repeated slug."""
    src = str(path)
    r = Reader(loader.load_file(path, HELDOUT_FILE), src)
    r.reject_unknown(("schema", "sources"))
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    sources: dict[str, str] = {}
    for i, item in enumerate(r.list_of("sources", max_items=1000)):
        s = Reader(item, src, f"sources[{i}]")
        s.reject_unknown(("slug", "why"))
        slug = s.string("slug")
        if not SLUG.match(slug):
            raise s.fail("slug", slug, "a corpus source slug (calibration/published/sources/<slug>.yaml)")
        if slug in sources:
            raise s.fail("slug", slug, "a source not already listed")
        sources[slug] = s.string("why")
    return HeldOut(MappingProxyType(sources), src)


class _Sourced(Protocol):
    @property
    def source(self) -> str: ...


T = TypeVar("T", bound=_Sourced)


def fit_points(points: Iterable[T], heldout: HeldOut) -> list[T]:
    """The points a fit may read: every held-out source's left out."""
    return [p for p in points if not heldout.holds(p.source)]


def refuse_heldout(samples: Sequence[T], heldout: HeldOut) -> Sequence[T]:
    """The fit's guard: `samples` unchanged, or HeldOutError naming the held-out sources asked for."""
    bad = sorted({s.source for s in samples if heldout.holds(s.source)})
    if bad:
        n = sum(heldout.holds(s.source) for s in samples)
        raise HeldOutError(f"the step-time fit was asked to read {n} point(s) of held-out source(s) "
                           f"{', '.join(bad)} ({heldout.path}): no constant may be chosen on them; filter the points "
                           f"with calibration.heldout.fit_points first")
    return samples


def is_time_unit(unit: str, memory_units: Iterable[str]) -> bool:
    """A corpus row's unit is a time row's: not a memory figure, not an out-of-memory outcome (heldout.yaml)."""
    if unit in _NOT_TIME_UNITS or unit in set(memory_units):
        return False
    return not _MEMORY_UNIT_TEXT.match(unit)


@dataclass(frozen=True)
class SplitSummary:
    """What the split holds on the corpus as it stands (the rule's quantities)."""

    time_sources: tuple[str, ...]  # sources with time rows
    heldout_time_sources: tuple[str, ...]
    families: tuple[str, ...]  # model families with time rows
    heldout_families: tuple[str, ...]  # families with time rows in a held-out source
    llm_rows: int  # held-out decoder time rows the report can predict (built), any GPU count
    llm_rows_one_gpu: int  # of those, one-GPU
    llm_rows_unbuilt: int  # held-out decoder time rows not built into result files (cannot be predicted yet)
    unknown_slugs: tuple[str, ...]  # held-out slugs with no corpus source

    @property
    def source_fraction(self) -> float:
        return len(self.heldout_time_sources) / len(self.time_sources) if self.time_sources else 0.0


def split_summary(rows: Iterable[Any], heldout: HeldOut, *, memory_units: Iterable[str],
                  built: Callable[[Any], bool]) -> SplitSummary:
    """Counts over corpus rows (calibration.corpus.Row); `built(row)` is True when `build` turns the row into a
    result-file measurement (corpus.why_not_built(row) is None)."""
    memory = tuple(memory_units)
    all_sources: set[str] = set()
    time_rows = []
    for row in rows:
        all_sources.add(row.source_slug)
        if is_time_unit(row.unit, memory):
            time_rows.append(row)
    sources = sorted({r.source_slug for r in time_rows})
    families = sorted({r.excerpt.model_family for r in time_rows})
    held = [r for r in time_rows if heldout.holds(r.source_slug)]
    llm = [r for r in held if r.excerpt.model_family == LLM_FAMILY]
    llm_built = [r for r in llm if built(r)]
    return SplitSummary(
        time_sources=tuple(sources), heldout_time_sources=tuple(s for s in sources if heldout.holds(s)),
        families=tuple(families), heldout_families=tuple(sorted({r.excerpt.model_family for r in held})),
        llm_rows=len(llm_built), llm_rows_one_gpu=sum(r.gpu_count == 1 for r in llm_built),
        llm_rows_unbuilt=len(llm) - len(llm_built),
        unknown_slugs=tuple(s for s in heldout.sources if s not in all_sources))
