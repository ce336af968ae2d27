"""Entry point: python -m planner."""

import sys

from planner.cli import run

if __name__ == "__main__":
    try:
        sys.exit(run())
    except Exception as exc:  # one line for an internal error, exit 1 (bad input exits 2 inside run)
        print(f"internal error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
