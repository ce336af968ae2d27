"""The estimation engine: pure functions over frozen dataclasses, from resolved inputs to a Plan."""
