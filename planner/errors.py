"""The one base of the planner's domain errors; it imports nothing, so every layer (and bench) can reach it.

Each error lives where it is raised and derives from TrainplanError: InputError, CannotEstimate and FitError
(planner.inputs.errors), ConvergenceFitError (planner.engine.convergence), NoQuoteError (planner.engine.cost),
SequenceFieldError (planner.engine.sequences), RefreshError (planner.inputs.price_refresh), and the private ones a
module raises and catches itself. Those that were ValueErrors stay ValueErrors, so every existing handler still
catches them. tests/test_architecture.py checks that no exception class under planner/ leaves the base out.
"""

from __future__ import annotations


class TrainplanError(Exception):
    """Something about the inputs or the estimate that the planner can name: never a bug in the planner itself."""
