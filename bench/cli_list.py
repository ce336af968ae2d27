"""`python -m bench list`: the model zoo with parameter counts, input shapes and FLOPs per sample."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON list of catalog entries")


def main(args) -> int:
    from bench import zoo

    entries = [zoo.describe(model_id) for model_id in zoo.list_models()]
    if args.json:
        json.dump([asdict(e) for e in entries], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"{'id':12} {'family':8} {'params':>13} {'FLOPs/sample':>12}  input")
    for e in entries:
        print(f"{e.id:12} {e.family:8} {e.params:>13,} {e.flops_per_sample:12.3e}  {e.input_desc}")
    print("\nCustom models: --model package.module:callable (README, section \"Custom models\")")
    return 0
