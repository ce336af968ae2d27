"""Charts to images without a browser or network: Vega-Lite specs through vl-convert."""

from __future__ import annotations

PNG_SCALE = 2.0  # pixels per CSS pixel: sharp when printed


def to_svg(spec: dict) -> str:
    import vl_convert as vlc

    return vlc.vegalite_to_svg(spec, allowed_base_urls=[])


def to_png(spec: dict, scale: float = PNG_SCALE) -> bytes:
    import vl_convert as vlc

    return vlc.vegalite_to_png(spec, scale=scale, allowed_base_urls=[])


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels from the PNG header (IHDR)."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
