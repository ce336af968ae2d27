"""Every method or design reference in the code resolves inside a clone: a section of docs/ that exists.

Two forms are accepted: the new `docs/<page>.md#<anchor>`, and the old `ESTIMATION.md §n` / `DESIGN.md` (notes kept
outside the repository), resolved through the citation map in docs/methods.md until the remaining ones are
rewritten."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
METHODS = DOCS / "methods.md"
SELF = Path(__file__).resolve()  # its examples of broken citations are built on purpose
# Where references live: the code, its tests and data, the README. results/ is data bench wrote (its traced files
# quote the old form in a sentence); it is not scanned.
SCANNED = ("planner", "bench", "ui", "calibration", "perf", "tests", "scripts", "gpu_profiles", "scenarios", "docs")
SCANNED_FILES = ("README.md", "app.py", "requirements.txt", "pyproject.toml")
TEXT = {".py", ".md", ".yaml", ".yml", ".txt", ".sh", ".json", ".html", ".toml", ".csv"}

# `ESTIMATION.md §1`, `ESTIMATION.md section 1`, `ESTIMATION.md §3 and §1`
OLD = re.compile(r"ESTIMATION\.md(?:'s)? (?:§ ?|section )(\d+)((?:(?:,| and| or|/) ?§ ?\d+)*)")
MORE = re.compile(r"§ ?(\d+)")
DESIGN = re.compile(r"\bDESIGN\.md\b")
# Not an upstream citation such as `owner/repo@commit:docs/results.md#L40-L52`.
NEW = re.compile(r"(?<![\w/.@:-])docs/([a-z][a-z0-9_-]*\.md)(?:#([A-Za-z0-9_-]+))?")
MAP_BLOCK = re.compile(r"<!-- citation-map:start -->(.*?)<!-- citation-map:end -->", re.S)
MAP_ROW = re.compile(r"^\| *([^|]+?) *\| *\[(docs/[^\]]+)\]")


def _files() -> list[Path]:
    out = [ROOT / name for name in SCANNED_FILES if (ROOT / name).is_file()]
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in TEXT and "__pycache__" not in path.parts and path != SELF:
                out.append(path)
    return out


@cache
def citation_map() -> dict[str, str]:
    """'ESTIMATION.md §1' -> 'docs/methods.md#memory', 'DESIGN.md' -> 'docs/design.md', from docs/methods.md."""
    block = MAP_BLOCK.search(METHODS.read_text(encoding="utf-8"))
    assert block, "docs/methods.md has no citation map"
    rows = (MAP_ROW.match(line.strip()) for line in block.group(1).splitlines())
    return {m.group(1): m.group(2) for m in rows if m}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    text = page.read_text(encoding="utf-8")
    explicit = set(re.findall(r'<a id="([^"]+)"></a>', text))
    headings = {_slug(h) for h in re.findall(r"^#{1,6} +(.+)$", text, re.M)}
    return frozenset(explicit | headings)


def citations(text: str) -> list[str]:
    """The docs targets a text cites, old forms mapped through the citation map (unmapped: the old form itself)."""
    mapping = citation_map()
    out = []
    for m in OLD.finditer(text):
        for n in [m.group(1), *MORE.findall(m.group(2))]:
            out.append(mapping.get(f"ESTIMATION.md §{n}", f"ESTIMATION.md §{n}"))
    out += [mapping.get("DESIGN.md", "DESIGN.md") for _ in DESIGN.finditer(text)]
    out += [f"docs/{m.group(1)}" + (f"#{m.group(2)}" if m.group(2) else "") for m in NEW.finditer(text)
            if not re.fullmatch(r"L\d+(?:-L\d+)?", m.group(2) or "")]  # #L40-L42: a line of an upstream file
    return out


def unresolved(target: str) -> str | None:
    """Why a target does not resolve, or None when it does."""
    if not target.startswith("docs/"):
        return "not in the citation map of docs/methods.md"
    page, _, anchor = target.partition("#")
    if not (ROOT / page).is_file():
        return f"{page} does not exist"
    if anchor and anchor not in anchors(ROOT / page):
        return f"{page} has no anchor #{anchor}"
    return None


@pytest.fixture(scope="module")
def cited() -> list[tuple[str, int, str]]:
    out = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if "ESTIMATION.md" not in text and "DESIGN.md" not in text and "docs/" not in text:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            out += [(str(path.relative_to(ROOT)), i, t) for t in citations(line)]
    return out


def test_every_cited_section_exists_in_docs(cited):
    assert len(cited) >= 90, f"the scan found only {len(cited)} citations"  # it reads the real references
    missing = [f"{f}:{line}: {t}: {why}" for f, line, t in cited if (why := unresolved(t))]
    assert not missing, "\n".join(missing)


def test_the_calibration_stage_and_perf_cite_the_docs_not_the_old_notes(cited):
    """Old citations remain in files other engineers were editing (a sed after merging rewrites them); the
    calibration stage and perf/ already use the new form."""
    assert any(t.startswith("docs/methods.md#") for f, _, t in cited if not f.startswith("docs/"))
    old = [f"{path.relative_to(ROOT)}:{i}" for folder in ("calibration", "perf") for path in (ROOT / folder).rglob("*.py")
           for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
           if OLD.search(line) or DESIGN.search(line)]
    assert not old, old


def test_every_section_number_maps_to_an_anchor_that_exists():
    mapping = citation_map()
    assert {f"ESTIMATION.md §{n}" for n in range(1, 8)} <= set(mapping)
    assert not {k: t for k, t in mapping.items() if unresolved(t)}


def test_a_missing_section_is_reported():
    """The resolver fails on what it should: a number outside the map, a page or an anchor that is not there."""
    old = "ESTIMATION.md " + "§9"  # built, so that the scan of this file does not find it
    assert citations(f"see {old}") == [old] and unresolved(old)
    assert unresolved("docs/" + "methods.md#no-such-section") == "docs/methods.md has no anchor #no-such-section"
    assert unresolved("docs/" + "nothing.md") == "docs/nothing.md does not exist"
    assert citations("(" + "ESTIMATION.md " + "§3 and §1)") == ["docs/methods.md#multi-gpu", "docs/methods.md#memory"]


def test_links_between_the_docs_pages_resolve():
    bad = []
    for page in sorted(DOCS.glob("*.md")):
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://")):
                continue
            file, _, anchor = target.partition("#")
            dest = page if not file else (page.parent / file).resolve()
            if target.startswith("docs/"):
                dest = ROOT / file
            if not dest.is_file() or (anchor and anchor not in anchors(dest)):
                bad.append(f"{page.name}: {target}")
    assert not bad, bad


def test_the_readme_points_to_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("docs/methods.md", "docs/schemas.md", "docs/design.md"):
        assert f"`{page}`" in readme or f"]({page})" in readme, page
