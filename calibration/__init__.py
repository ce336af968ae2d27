"""The calibration stage: the published corpus and reference data in, the planner's fitted inputs out."""
