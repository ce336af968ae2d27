"""Charts to images without a browser or network: Vega-Lite specs through vl-convert.

Each chart is drawn once per plan: the SVG of a spec is kept (a small LRU keyed by the spec's JSON), the HTML
report, the app's preview and the HTML download reuse it, and the PDF's PNG is that SVG rasterized (the same bytes
vl-convert's vegalite_to_png gives), also kept, so A4 and Letter or a second click draw nothing again. A spec holds
everything a chart shows (data, titles, locale), so equal JSON means an equal image.
"""

from __future__ import annotations

import json
from functools import lru_cache

PNG_SCALE = 2.0  # pixels per CSS pixel: sharp when printed
CACHE_CHARTS = 48  # images kept per kind: a report has three charts, so the last sixteen plans/locales


def _key(spec: dict) -> str:
    """The spec as canonical JSON: the cache key, and what vl-convert draws (it takes a JSON string too)."""
    return json.dumps(spec, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


@lru_cache(maxsize=CACHE_CHARTS)  # thread-safe: app sessions run in threads
def _svg(key: str) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(key, allowed_base_urls=[])


@lru_cache(maxsize=CACHE_CHARTS)
def _png(key: str, scale: float) -> bytes:
    import vl_convert as vlc

    return bytes(vlc.svg_to_png(_svg(key), scale=scale))


def to_svg(spec: dict) -> str:
    return _svg(_key(spec))


def to_png(spec: dict, scale: float = PNG_SCALE) -> bytes:
    return _png(_key(spec), scale)


def clear_cache() -> None:
    """Forget every image drawn (perf scripts time the drawing itself)."""
    _svg.cache_clear()
    _png.cache_clear()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from the PNG header (IHDR)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
