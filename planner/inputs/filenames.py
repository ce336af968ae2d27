"""The one slug: names people type (scenario names, GPU names, models) as portable file-name parts."""

from __future__ import annotations

import re
import unicodedata


def slug(text: str, *, max_chars: int = 80, default: str = "unknown") -> str:
    """'Ajuste fino de BERT en español (MNLI)' -> 'ajuste-fino-de-bert-en-espanol-mnli'.

    Accents are folded to ASCII (NFKD, combining marks dropped) so a name saves to the same file on every system
    and every file system; anything else that is not a letter or digit becomes one '-'; at most `max_chars`.
    """
    ascii_text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return stem[:max_chars].strip("-") or default
