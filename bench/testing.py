"""Test doubles for bench, kept out of its product code: a fake memory model and DDP fault injection."""

from __future__ import annotations

import math
import os
import sys
import time

from bench.maxbatch import OK, Trial

# `bench ddp --fault-inject` (a hidden flag for tests/test_ddp.py): what rank 1 does at FAULT_STEP.
FAULTS = ("rank1-exit", "rank1-raise", "rank1-hang")
FAULT_STEP = 2  # the DDP step at which an injected fault fires on rank 1


def inject_fault(fault: str | None, rank: int, step: int, hang_s: float) -> None:
    """Make rank 1 fail at DDP step FAULT_STEP the way `fault` says (exit, raise, or stop answering for hang_s)."""
    if not fault or rank != 1 or step != FAULT_STEP:
        return
    if fault == "rank1-exit":
        print(f"fault injection: rank 1 exits with code 3 at DDP step {step}", file=sys.stderr, flush=True)
        os._exit(3)
    if fault == "rank1-raise":
        raise RuntimeError(f"fault injection: rank 1 raised at DDP step {step}")
    if fault == "rank1-hang":
        print("fault injection: rank 1 stops answering collectives", file=sys.stderr, flush=True)
        time.sleep(hang_s)


class FakeMemory:
    """A linear memory model for tests and the benchmark: peak(b) = max(step_bytes, base + b * per_sample),
    rounded up to the allocator's 2 MiB segments; a trial fails above `capacity_bytes`."""

    def __init__(self, base_bytes: float, per_sample_bytes: float, capacity_bytes: float, step_bytes: float = 0.0,
                 round_bytes: int = 2 << 20):
        self.base, self.per_sample, self.capacity = base_bytes, per_sample_bytes, capacity_bytes
        self.step_bytes, self.round = step_bytes, round_bytes
        self.calls: list[int] = []

    def peak(self, b: int) -> float:
        raw = max(self.step_bytes, self.base + b * self.per_sample)
        return float(math.ceil(raw / self.round) * self.round)

    def true_max(self, limit: int = 1 << 30) -> int:
        lo, hi = 0, limit  # peak is non-decreasing in b: bisect for the last size that fits
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.peak(mid) <= self.capacity else (lo, mid)
        return lo

    def __call__(self, b: int) -> Trial:
        self.calls.append(b)
        peak = self.peak(b)
        return Trial(b, OK, peak) if peak <= self.capacity else Trial(b, "oom", None)
