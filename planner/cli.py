"""python -m planner SCENARIO...: plan scenarios and print or write them (table, json, markdown, html, pdf).

Exit status: 0 ok, 2 bad input (one message per bad input: file, field, value, what was expected), 1 internal
error. Problems with files in the result/profile folders or $TRAINPLAN_HOME are warnings: the file is skipped.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from planner import __version__, gctune
from planner.inputs.errors import InputError

if TYPE_CHECKING:
    from planner.engine.estimates import Plan
    from planner.engine.what_fits import WhatFits
    from planner.inputs.folders import Inputs
    from planner.inputs.price_catalog import ImportResult
    from planner.inputs.scenario import Scenario

FORMATS = ("table", "json", "markdown", "html", "pdf")
REPORT_FORMATS = ("markdown", "html", "pdf")
STDIN = "-"
EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m planner", description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="+",
                   help="scenario YAML file(s) (schema trainplan.scenario/1); '-' reads one from standard input")
    p.add_argument("--version", action="version", version=f"trainplan {__version__}")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--lang", default=None, help="report locale: en, es, es-MX, es-AR, ... (default: the scenario's)")
    p.add_argument("--out", default=None, help="write to this file instead of standard output (atomic: an "
                   "existing file is replaced only by a complete new one)")
    p.add_argument("--results", action="append", default=None, metavar="DIR",
                   help="result-file folder read besides the project's results/ (repeatable)")
    p.add_argument("--profiles", action="append", default=None, metavar="DIR",
                   help="GPU profile folder read besides the project's gpu_profiles/ (repeatable)")
    p.add_argument("--no-shipped-results", action="store_true",
                   help="leave the project's results/ out: only the --results folders (and $TRAINPLAN_HOME's)")
    p.add_argument("--no-shipped-profiles", action="store_true",
                   help="leave the project's gpu_profiles/ out: only the --profiles folders (and $TRAINPLAN_HOME's)")
    p.add_argument("--no-user-data", action="store_true", help="leave $TRAINPLAN_HOME out")
    p.add_argument("--all-options", action="store_true", help="reports: list every option, not the top ones")
    p.add_argument("--what-fits", action="store_true",
                   help="table: add what fits on each GPU (largest micro-batch, longest sequence, fewest GPUs for a "
                        "full fine-tune, what would make micro-batch 1 fit); reports always show it")
    p.add_argument("--paper", choices=("A4", "Letter"), default="A4", help="PDF paper size")
    return p


def run(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["prices"]:
        return _run_prices(argv[1:])
    if argv[:1] == ["actuals"]:
        return _run_actuals(argv[1:])
    if argv[:1] == ["results"]:
        return _run_results(argv[1:])
    return _guarded(_run, build_parser().parse_args(argv))


def _guarded(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command: bad input is one 'error:' line and exit 2; a reader that closed the pipe is not an error."""
    try:
        return command(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from planner.engine.plan import build_plan
    from planner.inputs.folders import load_inputs, with_shipped
    from planner.inputs.shipped import PROFILES_DIR, RESULTS_DIR

    _check_arguments(args)
    inputs = load_inputs(with_shipped(RESULTS_DIR, args.results, keep_shipped=not args.no_shipped_results),
                         with_shipped(PROFILES_DIR, args.profiles, keep_shipped=not args.no_shipped_profiles),
                         include_user_data=not args.no_user_data)
    gctune.tune_gc_once()  # the inputs live as long as the process: out of the collector's sight
    for problem in inputs.problems:
        print(f"warning: {problem}", file=sys.stderr)
    scenarios: list[tuple[str, Scenario]] = []
    errors: list[InputError] = []
    for name in args.scenario:  # every scenario is read before any is planned: all bad ones are named at once
        try:
            scenarios.append((_source(name), _load(name, inputs.profiles)))
        except InputError as exc:
            errors.append(exc)
    if errors:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    plans = [(source, scenario, build_plan(scenario, inputs, source=source)) for source, scenario in scenarios]
    if args.out:
        _refuse_empty_plans(plans, args)
    parts = [_render(args, scenario, plan, inputs) for _, scenario, plan in plans]
    data = parts[0] if len(parts) == 1 else _join(parts)
    if args.out:
        _write_out(args.out, data)
    elif isinstance(data, bytes):
        sys.stdout.buffer.write(data)
    else:
        sys.stdout.write(data)
    return EXIT_OK


def _refuse_empty_plans(plans: list[tuple[str, Scenario, Plan]], args: argparse.Namespace) -> None:
    """A plan with no option (no GPU profile read, or none the scenario names) is not written over --out."""
    from planner.inputs.atomic import refuse_empty

    where = ", ".join(args.profiles) if args.profiles else "the GPU profile folders"
    for source, _, plan in plans:
        refuse_empty(len(plan.options), what=f"plan options (no GPU profile read from {where} matched "
                     "hardware.gpus)", source=source, target=args.out)


def _check_arguments(args: argparse.Namespace) -> None:
    from planner.vocab import LOCALES

    several = len(args.scenario) > 1
    if several and args.format in REPORT_FORMATS and (args.out or args.format == "pdf"):
        raise InputError("--out" if args.out else "--format", None, f"{len(args.scenario)} scenarios",
                         f"one scenario per {args.format} report: run once per scenario "
                         "(table and json take several)")
    if args.scenario.count(STDIN) > 1:
        raise InputError("<stdin>", None, "'-' given twice", "standard input at most once")
    if args.lang is not None and args.lang not in LOCALES:
        raise InputError("--lang", None, args.lang, "one of " + ", ".join(LOCALES))
    for flag, dirs in (("--results", args.results or []), ("--profiles", args.profiles or [])):
        for d in dirs:
            if not d.strip():  # Path("") is the current folder: every JSON/YAML below it would be read
                raise InputError(flag, None, d, "a folder name (an empty one would read the whole current folder)")
            if not Path(d).is_dir():
                raise InputError(d, None, d, "an existing folder")
    for flag, given, what in (("--no-shipped-results", args.results, "--results DIR"),
                              ("--no-shipped-profiles", args.profiles, "--profiles DIR")):
        if getattr(args, flag[2:].replace("-", "_")) and not given:
            raise InputError(flag, None, "no folder given", f"at least one {what}: {flag} replaces the project's "
                             f"folder with those (without it, {what} adds to the project's)")


def _source(name: str) -> str:
    return "<stdin>" if name == STDIN else name


def _load(name: str, known_gpu_ids: Iterable[str]) -> Scenario:
    from planner.inputs import loader
    from planner.inputs.scenario import load_scenario_bytes, load_scenario_file

    if name != STDIN:
        return load_scenario_file(name, known_gpu_ids=known_gpu_ids)
    data = sys.stdin.buffer.read(loader.SCENARIO.max_bytes + 1)  # bounded: a endless pipe is refused, not read
    return load_scenario_bytes(data, _source(name), known_gpu_ids)


def _join(parts: list[str | bytes]) -> str:
    # Table and JSON: one plan after another (JSON: one document per line group, in the order given).
    return "\n".join(p if p.endswith("\n") else p + "\n" for p in parts if isinstance(p, str))


def _write_out(path: str, data: str | bytes) -> None:
    from planner.inputs.atomic import atomic_write

    try:
        atomic_write(path, data)
    except OSError as exc:
        raise InputError(path, None, path, f"a writable file path ({exc.strerror or exc.__class__.__name__}); "
                         "any existing file there is unchanged") from None
    print(f"wrote {path}", file=sys.stderr)


def _what_fits(scenario: Scenario, plan: Plan, inputs: Inputs) -> tuple[WhatFits, ...]:
    from planner.engine.what_fits import what_fits_all
    from planner.present.fit_answers import preferred_precision
    return what_fits_all(inputs, scenario.model, scenario.training, plan.profiles_used,
                         counts=scenario.hardware.gpu_counts, prefer=preferred_precision(plan))


def _render(args: argparse.Namespace, scenario: Scenario, plan: Plan, inputs: Inputs) -> str | bytes:
    if args.format == "table":
        from planner.present.textout import render_table, what_fits_lines
        text = render_table(plan)
        if args.what_fits:
            text += "\n" + "\n".join(what_fits_lines(_what_fits(scenario, plan, inputs))) + "\n"
        return text
    if args.format == "json":
        from planner.present.planjson import plan_to_json
        return plan_to_json(plan) + "\n"
    from planner.inputs.actuals import scan_actuals
    from planner.present.report import render_report
    from planner.present.report.system_fonts import MissingGlyphs
    # Recorded runs live in $TRAINPLAN_HOME like the user's results: --no-user-data leaves them out too.
    runs = () if args.no_user_data else tuple(scan_actuals()[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MissingGlyphs)  # every report's, not only the first
        report = render_report(plan, scenario, args.format, locale=args.lang or scenario.locale,
                               all_options=args.all_options, paper=args.paper, runs=runs,
                               what_fits=_what_fits(scenario, plan, inputs))
    for w in caught:  # a PDF without some characters: say which and what to install (the PDF says so too)
        if issubclass(w.category, MissingGlyphs):
            print(f"warning: {scenario.name}: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return report


# ---------------------------------------------------------------- python -m planner prices import|refresh ...

def build_prices_parser() -> argparse.ArgumentParser:
    from planner.inputs import price_refresh as pr
    from planner.vocab import PRICE_CHANGE_REPORT_FRACTION

    p = argparse.ArgumentParser(prog="python -m planner prices",
                                description="Price catalogs: import SkyPilot-format vms.csv files, or refresh "
                                            "current offers online through gpuhunt, into snapshots of per-GPU-hour "
                                            "quotes that the GPU profiles load.")
    sub = p.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="read vms.csv files (a file, a catalogs/vN folder or gpu_profiles/catalog/"
                                        "raw) and write the snapshot")
    imp.add_argument("catalog", nargs="+", help="a vms.csv file or a folder of them")
    imp.add_argument("--out", default=None, help="snapshot file to write (atomic; default: standard output); with "
                     "--check, the snapshot to compare (required there)")
    imp.add_argument("--check", action="store_true", help="write nothing: exit 2 when the snapshot differs from "
                     "what these files make")
    imp.add_argument("--source", default=None, help="provenance for files without a '# source:' line, e.g. "
                     "skypilot-org/skypilot-catalog@<commit>:catalogs/v8/aws/vms.csv (default: the file path)")
    imp.add_argument("--aliases", default=None, help="alias table (default: gpu_profiles/catalog/aliases.yaml)")
    ref = sub.add_parser("refresh", help="fetch current offers through gpuhunt (optional: pip install -r "
                         "requirements-prices.txt; needs internet), save them dated today under $TRAINPLAN_HOME/"
                         "gpu_profiles/catalog/ and show what changed",
                         description="Fetch current GPU offers through gpuhunt (dstack's price catalog; "
                         f"{pr.INSTALL_COMMAND}), map them to GPU profiles with the alias table, write one snapshot "
                         "per provider to $TRAINPLAN_HOME/gpu_profiles/catalog/gpuhunt-<date>-<provider>.yaml "
                         "(dated today; plans and the app load it) and print what changed: offers added, removed, "
                         f"and prices that moved by more than {PRICE_CHANGE_REPORT_FRACTION:.0%}. Offline, timed out "
                         "or gpuhunt missing: exit 2, the current prices stay and nothing is written.")
    ref.add_argument("--timeout", type=float, default=pr.DEFAULT_TIMEOUT_S, metavar="S",
                     help=f"give up after S seconds (default {pr.DEFAULT_TIMEOUT_S:g})")
    ref.add_argument("--providers", default=None, metavar="NAMES",
                     help="comma-separated gpuhunt provider names (default: all of " + ",".join(pr.PROVIDERS) + ")")
    ref.add_argument("--dry-run", action="store_true", help="fetch and show what would change; write nothing")
    ref.add_argument("--show", type=int, default=10, metavar="N",
                     help="list the first N added, removed and changed offers (default 10)")
    return p


def _run_prices(argv: list[str], fetcher: Callable | None = None) -> int:
    """`fetcher`: where refresh gets offers (default: gpuhunt over the network; tests pass recorded offers)."""
    args = build_prices_parser().parse_args(argv)
    if args.command == "refresh":
        return _guarded(lambda a: _prices_refresh(a, fetcher), args)
    return _guarded(_prices_import, args)


def _prices_refresh(args: argparse.Namespace, fetcher: Callable | None) -> int:
    from planner.inputs import price_refresh as pr

    if not 0 < args.timeout <= 3600:
        raise InputError("--timeout", None, args.timeout, "seconds between 0 and 3600")
    providers = pr.parse_providers(args.providers)
    try:
        outcome = pr.refresh(providers=providers, timeout_s=args.timeout, dry_run=args.dry_run, fetcher=fetcher)
    except pr.RefreshError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for line in pr.outcome_lines(outcome, show=max(args.show, 0)):
        print(line)
    return EXIT_OK


def _prices_import(args: argparse.Namespace) -> int:
    from planner.inputs import price_catalog as pc
    from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles

    profiles, _ = load_profiles(DEFAULT_PROFILES_DIR)
    aliases = pc.load_aliases(args.aliases or pc.ALIASES_PATH, known_profiles=profiles)
    result = pc.import_catalogs(args.catalog, aliases, source=args.source)
    for line in pc.summary_lines(result):
        print(line, file=sys.stderr)
    _refuse_empty_import(result, args)  # after the summary: it says which rows were read and why none mapped
    text = pc.render_snapshot(result, root=DEFAULT_PROFILES_DIR.parent)
    if args.check:
        if not args.out:
            raise InputError("prices import", "--out", None, "the snapshot file --check compares with")
        target = Path(args.out)
        try:
            committed = target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(str(target), None, exc.__class__.__name__, "a readable snapshot file to compare") from None
        if committed != text:
            raise InputError(str(target), None, "a snapshot that differs from the one its raw files make",
                             "the output of `python -m planner prices import "
                             + " ".join(args.catalog) + f" --out {target}` (regenerate it, or restore the raw files)")
        print(f"{target} matches its raw files", file=sys.stderr)
        return EXIT_OK
    if args.out and args.out != STDIN:
        _write_out(args.out, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _refuse_empty_import(result: ImportResult, args: argparse.Namespace) -> None:
    """No vms.csv rows, or rows that gave no quote: exit 2 and write nothing (a mistyped folder must not replace a
    snapshot with an empty one)."""
    from planner.inputs.atomic import refuse_empty

    source = ", ".join(args.catalog)
    target = args.out if args.out and args.out != STDIN else None
    refuse_empty(len(result.files), what="vms.csv files (*.csv)", source=source, target=target)
    refuse_empty(result.rows_read, what="catalog rows", source=source, target=target)
    refuse_empty(result.quote_count, what=f"GPU quotes ({result.rows_read} rows read, {result.gpu_rows} GPU rows, "
                 "none gave a quote: see the reasons above)", source=source, target=target)


# ---------------------------------------------------------------- python -m planner actuals list

def _run_actuals(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m planner actuals",
                                description="Recorded runs (trainplan.actual/1, the app's Runs page): each run's "
                                            "prediction, what really happened and the error (actual / predicted - 1).")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="print the recorded runs with the error of each figure")
    ls.add_argument("--folder", default=None, help="folder of recorded runs (default: $TRAINPLAN_HOME/actuals)")
    return _guarded(_actuals_list, p.parse_args(argv))


def _actuals_list(args: argparse.Namespace) -> int:
    from planner.engine.actuals import run_errors
    from planner.inputs.actuals import scan_actuals

    runs, problems = scan_actuals(args.folder)
    for problem in problems:  # a broken file is named and skipped; the others are listed
        print(f"warning: skipped {problem}", file=sys.stderr)
    print(f"{'date':10}  {'option':28}  {'figure':11}  {'predicted':>11}  {'actual':>11}  {'error':>8}  range")
    for run in runs:
        for e in run_errors(run):
            err = "—" if e.error is None else f"{100 * e.error:+.1f}%"
            inside = {True: "inside", False: "outside", None: "—"}[e.inside]
            pred = "—" if e.predicted is None else f"{e.predicted:.4g}"
            print(f"{run.date.isoformat():10}  {run.option.option_id:28}  {e.figure:11}  {pred:>11}  "
                  f"{e.actual:>11.4g}  {err:>8}  {inside}")
    if not runs:
        print("(no recorded runs)")
    return EXIT_OK


# ---------------------------------------------------------------- python -m planner results check

def _run_results(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m planner results",
                                description="Result files as plans read them: bench-run step times pooled, "
                                            "set aside (disagreeing, outside the physics bounds) or repeated "
                                            "(docs/methods.md#pooling).")
    sub = p.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="print the pooling verdict of every configuration the folders time; exit "
                                         "1 when a point is set aside or a file cannot be read")
    check.add_argument("folders", nargs="+", metavar="DIR", help="result-file folder(s), read together")
    check.add_argument("--profiles", action="append", default=None, metavar="DIR",
                       help="GPU profile folder (repeatable; default: the project's gpu_profiles/)")
    check.add_argument("--trust", action="append", default=[], metavar="FILE_ID",
                       help="use this file's set-aside points anyway (its 12-digit id, as printed)")
    check.add_argument("--lang", default=None, help="locale of the lines: en, es, es-MX, ...")
    return _guarded(_results_check, p.parse_args(argv))


def _results_check(args: argparse.Namespace) -> int:
    from planner.engine.pooling import folder_verdicts
    from planner.inputs.profiles import load_profiles
    from planner.inputs.resultfile import scan_results
    from planner.inputs.userdata import SHIPPED_PROFILES_DIR
    from planner.present.pool_report import verdict_lines
    from planner.vocab import LOCALES

    if args.lang is not None and args.lang not in LOCALES:
        raise InputError("--lang", None, args.lang, "one of " + ", ".join(LOCALES))
    for folder in args.folders + (args.profiles or []):
        if not Path(folder).is_dir():
            raise InputError(folder, None, folder, "an existing folder")
    profiles, _ = load_profiles(*(args.profiles or [SHIPPED_PROFILES_DIR]))
    files, problems = scan_results(*args.folders)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    verdict = folder_verdicts(files, profiles, trusted=frozenset(args.trust))
    for line in verdict_lines(verdict, args.lang):
        print(line)
    set_aside = sum(len(g.verdict.set_aside) for g in verdict.groups)
    return 1 if set_aside or problems else EXIT_OK
