"""Charts to images without a browser or network: Vega-Lite specs through vl-convert.

Each chart is drawn once per plan: the SVG of a spec is kept (a small LRU keyed by the spec's JSON), the HTML
report, the app's preview and the HTML download reuse it, and the PDF's PNG is that SVG rasterized (the same bytes
vl-convert's vegalite_to_png gives), also kept, so A4 and Letter or a second click draw nothing again. A spec holds
everything a chart shows (data, titles, locale), so equal JSON means an equal image.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import TypeVar

PNG_SCALE = 2.0  # pixels per CSS pixel: sharp when printed
CACHE_CHARTS = 48  # images kept per kind: a report has three charts, so the last sixteen plans/locales

_lock = threading.Lock()  # app sessions run in threads: one LRU, updated under the lock
_svgs: OrderedDict[str, str] = OrderedDict()
_pngs: OrderedDict[tuple[str, float], bytes] = OrderedDict()


def _key(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


_K = TypeVar("_K")
_V = TypeVar("_V")


def _get(cache: OrderedDict[_K, _V], key: _K) -> _V | None:
    with _lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def _put(cache: OrderedDict[_K, _V], key: _K, value: _V) -> None:
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > CACHE_CHARTS:
            cache.popitem(last=False)


def _svg(spec: dict, key: str) -> str:
    svg = _get(_svgs, key)
    if svg is None:
        import vl_convert as vlc

        svg = vlc.vegalite_to_svg(spec, allowed_base_urls=[])
        _put(_svgs, key, svg)
    return svg


def to_svg(spec: dict) -> str:
    return _svg(spec, _key(spec))


def to_png(spec: dict, scale: float = PNG_SCALE) -> bytes:
    key = _key(spec)
    png = _get(_pngs, (key, scale))
    if png is None:
        import vl_convert as vlc

        png = bytes(vlc.svg_to_png(_svg(spec, key), scale=scale))
        _put(_pngs, (key, scale), png)
    return png


def clear_cache() -> None:
    """Forget every image drawn (perf scripts time the drawing itself)."""
    with _lock:
        _svgs.clear()
        _pngs.clear()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from the PNG header (IHDR)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
