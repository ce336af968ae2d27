"""`python -m bench list`: the model zoo with parameter counts, input shapes and FLOPs per sample.

It reads the committed zoo catalog (planner/inputs/zoo_catalog.json, kept equal to bench.zoo by
tests/test_zoo.py::test_committed_catalog_is_fresh) instead of building the models: listing must not import torch
(13 s on a cold disk), so it works, and at once, where torch is not installed.
"""

from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON list of catalog entries")


def main(args) -> int:
    from planner.inputs.zoo_catalog import load_catalog

    entries = list(load_catalog().values())
    if args.json:
        json.dump(entries, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"{'id':12} {'family':8} {'params':>13} {'FLOPs/sample':>12}  input")
    for e in entries:
        print(f"{e['id']:12} {e['family']:8} {e['params']:>13,} {e['flops_per_sample']:12.3e}  {e['input_desc']}")
    print("\nCustom models: --model package.module:callable (README, section \"Custom models\")")
    return 0
