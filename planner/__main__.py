"""Entry point: python -m planner."""

import sys

from planner.cli import EXIT_INTERNAL, EXIT_INTERRUPTED, run

if __name__ == "__main__":
    try:
        sys.exit(run())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # one line for an internal error, exit 1 (bad input exits 2 inside run)
        print(f"internal error: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
