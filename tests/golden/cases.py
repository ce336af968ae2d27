"""Golden-output cases: every shipped scenario and ~30 one-option variants, rendered with a fixed date."""

from __future__ import annotations

import copy
import datetime as dt
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = Path(__file__).resolve().parent / "outputs"
TODAY = dt.date(2026, 12, 1)
DEFAULT = "resnet50-imagenet"


@dataclass(frozen=True)
class Case:
    name: str
    scenario: str  # a file stem under scenarios/
    patch: Callable[[dict], None] | None = None
    full: bool = False  # shipped scenarios: every format in en and es; variants: json + markdown (en)


def _set(path: str, value: object) -> Callable[[dict], None]:
    def patch(d: dict) -> None:
        *parents, last = path.split(".")
        node = d
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = copy.deepcopy(value)
    return patch


def _drop(path: str) -> Callable[[dict], None]:
    def patch(d: dict) -> None:
        *parents, last = path.split(".")
        node = d
        for key in parents:
            node = node[key]
        node.pop(last, None)
    return patch


def _workload(**values: object) -> Callable[[dict], None]:
    def patch(d: dict) -> None:
        for key in ("epochs", "tokens", "reference_points"):
            d["workload"].pop(key, None)
        d["workload"].update(copy.deepcopy(values))
    return patch


SHIPPED = tuple(sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")))

VARIANTS: tuple[Case, ...] = (
    Case("precisions-bf16", DEFAULT, _set("training.precisions", ["bf16"])),
    Case("optimizer-adamw", DEFAULT, _set("training.optimizer", "adamw")),
    Case("optimizer-adam8bit", DEFAULT, _set("training.optimizer", "adam8bit")),
    Case("optimizer-impl-fused", DEFAULT, _set("training.optimizer_impl", "fused")),
    Case("global-batch-1024", DEFAULT, _set("training.global_batch", 1024)),
    Case("micro-batch-32", DEFAULT, _set("training.micro_batch", 32)),
    Case("checkpointing", DEFAULT, _set("training.activation_checkpointing", True)),
    Case("sharding-zero2", DEFAULT, _set("training.sharding", "zero2")),
    Case("layout-zero-paper", DEFAULT, _set("training.state_layout", "zero_paper")),
    Case("frozen-half", DEFAULT, _set("training.frozen_fraction", 0.5)),
    Case("gpu-counts-wide", DEFAULT, _set("hardware.gpu_counts", [1, 2, 4, 8, 16])),
    Case("gpus-two", DEFAULT, _set("hardware.gpus", ["rtx4090-24gb", "h100-sxm-80gb"])),
    Case("cpu-workers-2", DEFAULT, _set("hardware.cpu_workers_per_gpu", 2)),
    Case("workspace-2gib", DEFAULT, _set("hardware.workspace_gib", 2.0)),
    Case("inter-node-50", DEFAULT, _set("hardware.inter_node_gb_per_s", 50.0)),
    Case("tier-spot", DEFAULT, _set("pricing.tier", "spot")),
    Case("tier-on-prem", DEFAULT, _set("pricing.tier", "on_prem")),
    Case("tier-reserved-1y", DEFAULT, _set("pricing.tier", "reserved_1y")),
    Case("provider-runpod", DEFAULT, _set("pricing.provider", "runpod")),
    Case("currency-ars", DEFAULT, lambda d: d["pricing"].update(
        currency="ARS", exchange_rate=1050.0, exchange_rate_as_of="2026-11-01")),
    Case("runs-3", DEFAULT, _set("pricing.runs", 3)),
    Case("tax-21", DEFAULT, _set("pricing.tax_rate", 0.21)),
    Case("billing-60min", DEFAULT, _set("pricing.billing_increment_min", 60)),
    Case("co2-grid", DEFAULT, _set("pricing.grid_kg_co2_per_kwh", 0.4)),
    Case("deadline-10h", DEFAULT, _set("constraints.deadline_hours", 10)),
    Case("budget-50", DEFAULT, _set("constraints.budget_usd", 50)),
    Case("no-constraints", DEFAULT, _drop("constraints")),
    Case("epochs-30", DEFAULT, _set("workload.epochs", 30)),
    Case("early-stop-half", DEFAULT, _set("workload.early_stop_fraction", 0.5)),
    Case("reference-points", DEFAULT, _workload(reference_points=[
        {"global_batch": 256, "epochs": 90}, {"global_batch": 8192, "epochs": 120}])),
    Case("mfu-0.5", DEFAULT, _set("model.mfu", 0.5)),
    Case("locale-es-ar", DEFAULT, _set("locale", "es-AR")),
    Case("gpt2-b-crit", "gpt2-124m-10b-tokens", _set("workload.b_crit", 100000)),
    Case("llama-zero3", "llama7b-full-finetune", _set("training.sharding", "zero3")),
    Case("qlora-rank64", "llama7b-qlora-24gb", _set("training.adapter.rank", 64)),
)

CASES: tuple[Case, ...] = tuple(Case(s, s, None, full=True) for s in SHIPPED) + VARIANTS

_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_DATA_URI = re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+")


def html_text(html: str) -> str:
    """The HTML report without its chart images: chart bytes depend on the renderer's version, not on the plan."""
    return _DATA_URI.sub("data:image", _SVG.sub("<svg/>", html))


def render_case(case: Case) -> dict[str, str]:
    """file name -> text for one case, built in process with user data left out and a fixed date."""
    import yaml

    from planner.engine.plan import build_plan
    from planner.engine.what_fits import what_fits_all
    from planner.inputs.scenario import parse_scenario, scenario_to_dict
    from planner.present.fit_answers import preferred_precision
    from planner.present.planjson import plan_to_json
    from planner.present.report import render_report
    from planner.present.textout import render_table

    inputs = _shipped_inputs()
    path = ROOT / "scenarios" / f"{case.scenario}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if case.patch is not None:
        data = scenario_to_dict(parse_scenario(data, str(path)))
        case.patch(data)
    scenario = parse_scenario(data, f"scenarios/{case.scenario}.yaml", known_gpu_ids=inputs.profiles)
    plan = build_plan(scenario, inputs, today=TODAY, source=f"scenarios/{case.scenario}.yaml")
    out = {"plan.json": plan_to_json(plan) + "\n"}
    langs = ("en", "es") if case.full else ("en",)
    # The reports as the CLI writes them: with what fits on each GPU (issue 33) in the Markdown.
    fits = what_fits_all(inputs, scenario.model, scenario.training, plan.profiles_used,
                         counts=scenario.hardware.gpu_counts, prefer=preferred_precision(plan))
    for lang in langs:
        out[f"report-{lang}.md"] = str(render_report(plan, scenario, "markdown", locale=lang, today=TODAY,
                                                     what_fits=fits))
        if case.full:
            html = str(render_report(plan, scenario, "html", locale=lang, today=TODAY))
            out[f"report-{lang}.html"] = html_text(html)
    if case.full:
        out["table.txt"] = render_table(plan)
    # Reports name result files by absolute path; the checkout's folder is not part of the plan.
    return {name: text.replace(str(ROOT) + "/", "") for name, text in out.items()}


@functools.cache
def _shipped_inputs():  # type: ignore[no-untyped-def]
    """The shipped profiles and result files, read once for every case (user data left out)."""
    from planner.inputs.folders import load_inputs

    return load_inputs(None, None, include_user_data=False)


def regenerate() -> None:
    """Write every case's outputs; run on purpose when a change moves numbers, and say why in that commit."""
    import shutil

    if GOLDEN_DIR.exists():
        shutil.rmtree(GOLDEN_DIR)
    for case in CASES:
        folder = GOLDEN_DIR / case.name
        folder.mkdir(parents=True)
        for name, text in render_case(case).items():
            (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(ROOT))
    regenerate()
