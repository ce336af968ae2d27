"""One translation catalog (en, es) for the app, the reports and the planner's notes."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from planner.inputs import loader

LOCALES_DIR = Path(__file__).resolve().parent / "locales"
LANGUAGES = ("en", "es")


def language_of(locale: str | None) -> str:
    """'es-AR' -> 'es'; anything unknown -> 'en'."""
    base = (locale or "en").replace("_", "-").split("-")[0].lower()
    return base if base in LANGUAGES else "en"


# Read by the project's one YAML loader (planner.inputs.loader: libyaml when PyYAML has it, safe types, size caps,
# errors naming the file), like profiles, scenarios and price catalogs.
CATALOG_FILE = loader.FileKind("translation catalog (YAML)", "yaml", 1 * loader.MIB)


@cache
def catalog(lang: str) -> dict[str, str]:
    """All keys of one language: every locales/<lang>/*.yaml file merged (flat 'section.key' names)."""
    out: dict[str, str] = {}
    for path in sorted((LOCALES_DIR / lang).glob("*.yaml")):
        data = loader.load_file(path, CATALOG_FILE) or {}
        _flatten(data, "", out, path)
    return out


def _flatten(data: dict, prefix: str, out: dict[str, str], path: Path) -> None:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, name + ".", out, path)
        else:
            if name in out:
                raise ValueError(f"{path}: key {name} defined twice")
            out[name] = str(value)


def t(key: str, locale: str | None = "en", **params: object) -> str:
    """The text for key in the locale's language, with {params} filled; English if the key is missing there."""
    lang = language_of(locale)
    text = catalog(lang).get(key) or catalog("en").get(key)
    if text is None:
        raise KeyError(f"no catalog text for {key!r}")
    return text.format(**params) if params else text


def missing_keys() -> dict[str, set[str]]:
    """Keys present in one language and missing in another (a test keeps this empty)."""
    keys = {lang: set(catalog(lang)) for lang in LANGUAGES}
    every = set().union(*keys.values())
    return {lang: every - have for lang, have in keys.items() if every - have}
