"""Test helper for corpus edits: record an excerpt's new content hash, as a transcriber who re-read it would."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


def rehash_excerpt(corpus: Path, source_rel: str, raw_rel: str) -> str:
    """Set `excerpt_sha256` of the excerpt `raw_rel` in the transcription `source_rel` to the file's sha256 now."""
    digest = hashlib.sha256((corpus / raw_rel).read_bytes()).hexdigest()
    source = corpus / source_rel
    text = source.read_text(encoding="utf-8")
    new, n = re.subn(rf'(raw: "?{re.escape(raw_rel)}"?.*?excerpt_sha256: "?)[0-9a-f]{{64}}',
                     lambda m: m.group(1) + digest, text, count=1, flags=re.S)
    assert n == 1, f"no excerpt_sha256 for {raw_rel} in {source_rel}"
    source.write_text(new, encoding="utf-8")
    return digest
