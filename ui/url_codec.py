"""The scenario in a link: st.query_params['s'] holds zlib-compressed scenario YAML in urlsafe base64."""

from __future__ import annotations

import base64
import binascii
import functools
import zlib
from collections.abc import Iterable

from planner.inputs.errors import InputError
from planner.inputs.scenario import MAX_SCENARIO_BYTES, Scenario, dump_scenario_yaml, load_scenario_text

URL_PARAM = "s"
URL_SOURCE = "link (URL parameter s)"
MAX_URL_CHARS = 16 * 1024


@functools.lru_cache(maxsize=64)  # every Plan page run writes the link; a Scenario is frozen and hashable
def encode_scenario(s: Scenario) -> str:
    """urlsafe base64 of zlib-compressed scenario YAML, padding dropped: ~700 characters for a typical plan."""
    raw = zlib.compress(dump_scenario_yaml(s).encode("utf-8"), 9)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_scenario(text: str, known_gpu_ids: Iterable[str] | None = None) -> Scenario:
    """The scenario in a link; a damaged or hand-edited link raises InputError saying what is wrong."""
    expected = "a scenario link made by trainplan (copy the whole address)"
    if len(text) > MAX_URL_CHARS:
        raise InputError(URL_SOURCE, None, f"{len(text)} characters", f"at most {MAX_URL_CHARS} characters")
    try:
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_SCENARIO_BYTES + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise InputError(URL_SOURCE, None, text[:40] + ("..." if len(text) > 40 else ""), expected) from None
    if len(data) > MAX_SCENARIO_BYTES or inflater.unconsumed_tail:
        cap = f"{MAX_SCENARIO_BYTES // 1024:,} KiB"
        raise InputError(URL_SOURCE, None, f"more than {cap} of scenario", f"a scenario of at most {cap}")
    try:
        yaml_text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(URL_SOURCE, None, "bytes that are not UTF-8", expected) from None
    return load_scenario_text(yaml_text, URL_SOURCE, known_gpu_ids)
