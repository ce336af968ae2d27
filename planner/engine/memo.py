"""Reuse across the plans of one Inputs: what a what-if leaves alone is not worked out again.

An engineer's next question changes one knob: the epochs, the tier, the deadline. Then every option's micro-batch
search (its memory estimates), its step time (measured, transferred from other GPUs or calibrated) and its rental
candidates are what they were in the last plan, and they are most of a plan's work (200 options: ~65 ms of a
widget change's ~0.3 s, perf/app_speed.py). Each such part is a function decorated with `cached`: its first
argument is the Inputs (profiles, result files, price overrides) it reads, the others are frozen values, and the
key is exactly those arguments, so a part cannot read a scenario field its key lacks (it is not given one). A part
is looked up here before it is computed, and what a computation raises is not kept.

The memo of an Inputs is dropped with it (a weak reference: reloaded inputs never see another's entries) and holds
at most MAX_ENTRIES parts (the oldest go first). Nothing here changes a number: tests/test_plan_memo.py compares
plans built through it with plans built from an empty memo.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Concatenate, ParamSpec, TypeVar

_T = TypeVar("_T")
_O = TypeVar("_O")
_P = ParamSpec("_P")

# A plan of the default scenario leaves ~435 parts (memory search, a step per rental layout and the rentals of each
# option) of ~2.1 KB each (tracemalloc over 30 plans): 10,000 parts are the last ~20 distinct model and training
# set-ups, ~21 MB.
MAX_ENTRIES = 10_000

_memos: dict[int, dict[Hashable, object]] = {}
_lock = threading.Lock()  # Streamlit plans in one thread per session


def _memo_of(owner: object) -> dict[Hashable, object]:
    key = id(owner)
    memo = _memos.get(key)  # a dict read is atomic: the lock is for making one
    if memo is not None:
        return memo
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


def cached(compute: Callable[Concatenate[_O, _P], _T]) -> Callable[Concatenate[_O, _P], _T]:
    """`compute(owner, *args, **kwargs)` kept per owner under the function's name and its arguments: the key is
    the argument list, never a hand-written tuple. The arguments must be hashable (frozen dataclasses, ids,
    numbers); a function that needs the whole scenario is too wide to cache and should take the fields it reads."""
    name = f"{compute.__module__}.{compute.__qualname__}"

    @functools.wraps(compute)
    def wrapper(owner: _O, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        # keyword order as the caller wrote it: another order is another entry (a miss), never a wrong answer
        key = (name, args, tuple(kwargs.items()))
        return memoized(owner, key, lambda: compute(owner, *args, **kwargs))

    return wrapper


def clear() -> None:
    """Forget every memo (tests compare a plan built from an empty memo with one built through a warm one)."""
    with _lock:
        for memo in _memos.values():
            memo.clear()


def size(owner: object) -> int:
    """Parts kept for `owner` (tests, the speed script)."""
    with _lock:
        return len(_memos.get(id(owner), {}))
