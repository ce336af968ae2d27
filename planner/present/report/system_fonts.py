"""Fonts found on this machine at run time for the PDF's characters that the shipped DejaVu Sans lacks (CJK, Thai,
Devanagari...): fontconfig's `fc-list` first, else the font files under the common font folders. No font is
shipped for them (a CJK font is ~16 MB); with none found, the PDF and the CLI say which characters are missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.errors import TrainplanError

FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".otc")
# Where operating systems keep fonts; scanned only where fontconfig is not installed (or for a given folder).
COMMON_FONT_DIRS = (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path("~/.local/share/fonts"),
                    Path("~/.fonts"), Path("/Library/Fonts"), Path("/System/Library/Fonts"),
                    Path("~/Library/Fonts"), Path(os.environ.get("WINDIR", "C:/Windows")) / "Fonts")
# Folders to search instead (os.pathsep-separated): for a machine without fontconfig whose fonts are elsewhere.
FONT_DIRS_ENV = "TRAINPLAN_FONT_DIRS"
MAX_FONTS = 4            # fallback fonts added to one PDF (each is subset into it; one usually covers a script)
MAX_SCANNED_FILES = 2000  # font files opened by a folder scan: bounded work on a machine with many fonts
FC_LIST_TIMEOUT_S = 10
# A face's name with one of these words is preferred over its siblings (a regular sans before bold or serif).
_PREFERRED = ("sans", "regular", "hei", "gothic")
_AVOIDED = ("bold", "italic", "oblique", "mono", "serif", "light", "thin", "black", "heavy")


class MissingGlyphs(TrainplanError, UserWarning):
    """A PDF has characters no font found on this machine draws; its text is the report's own message (in the
    report's language), which the PDF also shows on its first page. The CLI prints it (planner/cli.py)."""


@dataclass(frozen=True)
class SystemFont:
    path: Path
    index: int                 # the face in a collection (.ttc), 0 for a single font
    codepoints: frozenset[int]  # of the characters asked for, those this face draws


@dataclass(frozen=True)
class FontSearch:
    fonts: tuple[SystemFont, ...]
    missing: frozenset[int]     # characters no font found draws
    searched: str               # where it looked, for the message: "fontconfig (fc-list)" or the folders


def drawable(text_codepoints: Iterable[int]) -> frozenset[int]:
    """The codepoints a font must draw: printable, not spaces (a missing space glyph is fpdf2's own business)."""
    return frozenset(c for c in text_codepoints if chr(c).isprintable() and not chr(c).isspace())


def find_fonts(codepoints: Iterable[int], *, dirs: Sequence[Path] | None = None) -> FontSearch:
    """Fonts on this machine that draw `codepoints`, fewest first (greedy: the face drawing the most of what is
    left, until all are drawn or MAX_FONTS). With `dirs` (else $TRAINPLAN_FONT_DIRS), only the font files under
    those folders; without, fontconfig, or the common font folders where fontconfig is not installed."""
    wanted = frozenset(codepoints)
    if not wanted:
        return FontSearch((), frozenset(), "")
    if dirs is None and os.environ.get(FONT_DIRS_ENV):
        dirs = [Path(d) for d in os.environ[FONT_DIRS_ENV].split(os.pathsep) if d]
    if dirs is None and shutil.which("fc-list"):
        return _greedy(wanted, _fontconfig_candidates, "fontconfig (fc-list)")
    folders = [d.expanduser() for d in (COMMON_FONT_DIRS if dirs is None else dirs)]
    files = _font_files(folders)
    return _greedy(wanted, lambda _c: files, ", ".join(str(d) for d in folders))


def _greedy(wanted: frozenset[int], candidates, searched: str) -> FontSearch:
    left = set(wanted)
    chosen: list[SystemFont] = []
    tried: set[tuple[Path, int]] = set()
    while left and len(chosen) < MAX_FONTS:
        best: SystemFont | None = None
        for path, index in candidates(min(left)):
            if (path, index) in tried:
                continue
            tried.add((path, index))
            drawn = _codepoints_drawn(path, index, left)
            if drawn and (best is None or len(drawn) > len(best.codepoints)):
                best = SystemFont(path, index, drawn)
                if drawn == left:
                    break
        if best is None:
            break
        chosen.append(best)
        left -= best.codepoints
    return FontSearch(tuple(chosen), frozenset(left), searched)


def _fontconfig_candidates(codepoint: int) -> list[tuple[Path, int]]:
    """The faces fontconfig says draw `codepoint`, preferred names first."""
    try:
        out = subprocess.run(["fc-list", "-f", "%{file}|%{index}\n", f":charset={codepoint:x}"],
                             capture_output=True, text=True, timeout=FC_LIST_TIMEOUT_S, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    faces = []
    for line in out.splitlines():
        file, _, index = line.rpartition("|")
        if file and Path(file).suffix.lower() in FONT_SUFFIXES:
            faces.append((Path(file), int(index) if index.isdigit() else 0))
    return sorted(set(faces), key=lambda f: (_rank(f[0]), str(f[0]), f[1]))


def _font_files(folders: Sequence[Path]) -> list[tuple[Path, int]]:
    """Font files under `folders` (every face of a collection), preferred names first, at most MAX_SCANNED_FILES."""
    files: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for root, _dirs, names in os.walk(folder):
            files.extend(Path(root) / n for n in names if Path(n).suffix.lower() in FONT_SUFFIXES)
            if len(files) >= MAX_SCANNED_FILES:
                break
    faces: list[tuple[Path, int]] = []
    for f in sorted(files[:MAX_SCANNED_FILES], key=lambda p: (_rank(p), str(p))):
        faces.extend((f, i) for i in range(_faces_in(f)))
    return faces


def _rank(path: Path) -> int:
    name = path.name.lower()
    return sum(w in name for w in _AVOIDED) * 2 - sum(w in name for w in _PREFERRED)


def _faces_in(path: Path) -> int:
    if path.suffix.lower() not in (".ttc", ".otc"):
        return 1
    try:
        from fontTools.ttLib import TTCollection  # type: ignore[import-untyped]  # fpdf2's own font reader

        with TTCollection(str(path), lazy=True) as collection:
            return len(collection.fonts)
    except Exception:  # a damaged or unreadable collection is not a font to use
        return 0


def _codepoints_drawn(path: Path, index: int, wanted: Iterable[int]) -> frozenset[int]:
    """Of `wanted`, the codepoints this face has a glyph for; none for a file fontTools cannot read."""
    try:
        from fontTools.ttLib import TTFont

        with TTFont(str(path), fontNumber=index, lazy=True) as font:
            cmap = font.getBestCmap() or {}
    except Exception:  # a damaged, unreadable or non-TrueType file is not a font to use
        return frozenset()
    return frozenset(c for c in wanted if c in cmap)
