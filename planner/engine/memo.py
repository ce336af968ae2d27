"""Reuse across the plans of one Inputs: what a what-if leaves alone is not worked out again.

An engineer's next question changes one knob: the epochs, the tier, the deadline. Then every option's micro-batch
search (its memory estimates), its step time (measured, transferred from other GPUs or calibrated) and its rental
candidates are what they were in the last plan, and they are most of a plan's work (200 options: ~65 ms of a
widget change's ~0.3 s, perf/app_speed.py). plan.py keys each such part by every scenario field it reads, within
the Inputs (profiles, result files, price overrides) it was computed from; a part is looked up here before it is
computed, and what a computation raises is not kept.

The memo of an Inputs is dropped with it (a weak reference: reloaded inputs never see another's entries) and holds
at most MAX_ENTRIES parts (the oldest go first). Nothing here changes a number: tests/test_plan_memo.py compares
plans built through it with plans built from an empty memo.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

_T = TypeVar("_T")

# A plan of the default scenario leaves ~435 parts (memory search, a step per rental layout and the rentals of each
# option) of ~2.1 KB each (tracemalloc over 30 plans): 10,000 parts are the last ~20 distinct model and training
# set-ups, ~21 MB.
MAX_ENTRIES = 10_000

_memos: dict[int, dict[Hashable, object]] = {}
_lock = threading.Lock()  # Streamlit plans in one thread per session


def _memo_of(owner: object) -> dict[Hashable, object]:
    key = id(owner)
    with _lock:
        memo = _memos.get(key)
        if memo is None:
            memo = _memos[key] = {}
            # runs when the owner is freed, before its id can be reused by another object
            weakref.finalize(owner, _memos.pop, key, None)
        return memo


def memoized(owner: object, key: Hashable, compute: Callable[[], _T]) -> _T:
    """compute()'s value, kept under `key` for as long as `owner` (the Inputs the value was computed from) lives.
    `key` must hold every input of compute() that is not part of `owner`."""
    memo = _memo_of(owner)
    try:
        return memo[key]  # type: ignore[return-value]
    except KeyError:
        pass
    value = compute()
    with _lock:
        memo[key] = value
        while len(memo) > MAX_ENTRIES:
            del memo[next(iter(memo))]
    return value


def clear() -> None:
    """Forget every memo (tests compare a plan built from an empty memo with one built through a warm one)."""
    with _lock:
        for memo in _memos.values():
            memo.clear()


def size(owner: object) -> int:
    """Parts kept for `owner` (tests, the speed script)."""
    with _lock:
        return len(_memos.get(id(owner), {}))
