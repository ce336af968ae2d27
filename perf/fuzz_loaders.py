"""Deeper fuzzing of every input loader than CI runs: the hypothesis tests of tests/test_loader.py, randomized,
with many more examples each (CI runs 200 derandomized). Prints pytest's summary; any crash is a failing example.

    python perf/fuzz_loaders.py [--examples 4000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=4000)
    args = ap.parse_args()
    env = dict(os.environ, TRAINPLAN_FUZZ_EXAMPLES=str(args.examples))
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_loader.py", "-k", "only_input_error"], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
