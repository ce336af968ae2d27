"""The software stack a plan is made for: the scenario's training.stack, else the model family's default."""

from __future__ import annotations

from dataclasses import dataclass

from planner.vocab import DEFAULT_STACKS


@dataclass(frozen=True)
class PlannedStack:
    stack: str  # planner.vocab.SOFTWARE_STACKS
    defaulted: bool  # True: the scenario names none, so the family's default (planner.vocab.DEFAULT_STACKS)


def planned_stack(stack: str | None, family: str) -> PlannedStack:
    """The scenario's stack, or the default for `family` (docs/methods.md#software-stack)."""
    if stack is not None:
        return PlannedStack(stack, defaulted=False)
    return PlannedStack(DEFAULT_STACKS.get(family, DEFAULT_STACKS["custom"]), defaulted=True)
