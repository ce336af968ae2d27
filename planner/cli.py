"""python -m planner SCENARIO: plan a scenario and print or write it (table, json, markdown, html, pdf)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.inputs.errors import InputError

FORMATS = ("table", "json", "markdown", "html", "pdf")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m planner", description=__doc__)
    p.add_argument("scenario", help="scenario YAML file (schema trainplan.scenario/1)")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--lang", default=None, help="report locale: en, es, es-MX, es-AR, ... (default: the scenario's)")
    p.add_argument("--out", default=None, help="write to this file instead of standard output")
    p.add_argument("--results", action="append", default=None, metavar="DIR",
                   help="result-file folder (repeatable; default: the project's results/)")
    p.add_argument("--profiles", action="append", default=None, metavar="DIR",
                   help="GPU profile folder (repeatable; default: the project's gpu_profiles/)")
    p.add_argument("--no-user-data", action="store_true", help="leave $TRAINPLAN_HOME out")
    p.add_argument("--all-options", action="store_true", help="reports: list every option, not the top ones")
    p.add_argument("--paper", choices=("A4", "Letter"), default="A4", help="PDF paper size")
    return p


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def _run(args: argparse.Namespace) -> int:
    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs
    from planner.inputs.scenario import load_scenario_file

    for d in (args.results or []) + (args.profiles or []):
        if not Path(d).is_dir():
            raise InputError(d, None, d, "an existing folder")
    inputs = load_inputs(args.results, args.profiles, include_user_data=not args.no_user_data)
    scenario = load_scenario_file(args.scenario, known_gpu_ids=inputs.profiles)
    plan = build_plan(scenario, inputs, source=args.scenario)
    data = _render(args, scenario, plan)
    if args.out:
        out = Path(args.out)
        try:
            out.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        except OSError as exc:
            raise InputError(args.out, None, args.out, f"a writable file path ({exc.strerror})") from None
        print(f"wrote {out}", file=sys.stderr)
    elif isinstance(data, bytes):
        sys.stdout.buffer.write(data)
    else:
        sys.stdout.write(data)
    return 0


def _render(args: argparse.Namespace, scenario, plan) -> str | bytes:
    if args.format == "table":
        from planner.present.textout import render_table
        return render_table(plan)
    if args.format == "json":
        from planner.present.planjson import plan_to_json
        return plan_to_json(plan) + "\n"
    from planner.present.report import render_report
    return render_report(plan, scenario, args.format, locale=args.lang or scenario.locale,
                         all_options=args.all_options, paper=args.paper)
