"""What a result file says about the run that wrote it: the command line and the requested sweep (schema /2)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def command_line(args) -> list[str]:
    """`settings.command`: the argv that produced the file (`python -m bench` records it; else this process's)."""
    recorded = getattr(args, "argv", None)
    return [str(a) for a in recorded] if recorded else [sys.executable, *sys.argv]


def requested(precisions: Sequence[str], batch_sizes: Sequence[int] | str, steps: int, warmup: int) -> dict:
    """`settings.requested`: precisions x batch sizes ('auto' until the search picks them), steps, warmup."""
    return {"precisions": list(precisions),
            "batch_sizes": batch_sizes if isinstance(batch_sizes, str) else list(batch_sizes),
            "steps": steps, "warmup": warmup}
