"""Report speed for the default scenario: each format in English and Spanish, in process and CLI end to end.

Target (issue 7): any report for the default scenario in under 2 s. Prints medians over repeated runs (the
machines are shared and noisy: compare medians, not single runs). "in process" = render_report on a built plan
in a warm process (what the app does on a click); "end to end" = a fresh `python -m planner ... --format F --out`
process: interpreter start, imports, profiles, plan, chart conversion engine start-up and the report.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.engine.plan import build_plan  # noqa: E402
from planner.inputs.folders import load_inputs  # noqa: E402
from planner.inputs.scenario import load_scenario_file  # noqa: E402
from planner.present.report import render_report  # noqa: E402

SCENARIO = ROOT / "scenarios" / "resnet50-imagenet.yaml"
TARGET_S = 2.0


def _default_plan():
    inputs = load_inputs(include_user_data=False)
    scenario = load_scenario_file(SCENARIO, known_gpu_ids=inputs.profiles)
    return build_plan(scenario, inputs), scenario


def pdf_in_process(repeats: int = 5, locale: str = "en") -> dict[str, list[float]]:
    """The default scenario's PDF in a warm process (chart engine started), seconds per run:
    pdf_s               charts drawn for it (the chart cache emptied first): a plan's first PDF;
    pdf_after_preview_s after the HTML preview of the same plan drew the charts (the Report page's order);
    pdf_repeat_s        the same PDF again (another paper size, a second click)."""
    from planner.present.report.html import render_fragment
    from planner.present.report.model import build_report_model

    plan, scenario = _default_plan()
    render_report(plan, scenario, "html", locale=locale)  # the chart engine's start-up, not timed
    out: dict[str, list[float]] = {"pdf_s": [], "pdf_after_preview_s": [], "pdf_repeat_s": []}
    for _ in range(repeats):
        clear_charts()
        t0 = time.perf_counter()
        render_report(plan, scenario, "pdf", locale=locale)
        out["pdf_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        render_report(plan, scenario, "pdf", locale=locale, paper="Letter")
        out["pdf_repeat_s"].append(time.perf_counter() - t0)
        clear_charts()
        render_fragment(build_report_model(plan, scenario, locale))
        t0 = time.perf_counter()
        render_report(plan, scenario, "pdf", locale=locale)
        out["pdf_after_preview_s"].append(time.perf_counter() - t0)
    clear_charts()
    return out


def clear_charts() -> None:
    """Forget the chart images drawn so far in this process."""
    from planner.present.report import images

    images.clear_cache()


def main(repeats: int = 7, cli_repeats: int = 5) -> None:
    plan, scenario = _default_plan()
    print(f"default scenario: {scenario.name}, {len(plan.options)} options; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    t0 = time.perf_counter()
    render_report(plan, scenario, "html", locale="en")
    print(f"first report in this process (chart engine start-up included): {time.perf_counter() - t0:.2f} s")
    worst = 0.0
    for fmt in ("markdown", "html", "pdf"):
        for locale in ("en", "es"):
            times = []
            for _ in range(repeats):
                clear_charts()  # every run draws its charts (the app draws them once per plan: pdf_in_process)
                t0 = time.perf_counter()
                out = render_report(plan, scenario, fmt, locale=locale)
                times.append(time.perf_counter() - t0)
            median = statistics.median(times)
            worst = max(worst, median)
            print(f"in process  {fmt:8s} {locale}: median {median:.3f} s (min {min(times):.3f}, "
                  f"max {max(times):.3f}; {len(out):,} {'bytes' if isinstance(out, bytes) else 'chars'})")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("markdown", "html", "pdf"):
            times, cpu = [], []
            for _ in range(cli_repeats):
                t0 = time.perf_counter()
                c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([sys.executable, "-m", "planner", str(SCENARIO), "--format", fmt, "--lang", "es",
                                "--out", str(Path(tmp) / f"r.{fmt}"), "--no-user-data"],
                               cwd=ROOT, check=True, capture_output=True)
                times.append(time.perf_counter() - t0)
                c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime)
            median = statistics.median(times)
            worst = max(worst, median)
            # CPU seconds of the process: what it costs on an idle machine, whatever the load right now.
            print(f"end to end  {fmt:8s} es: median {median:.2f} s wall (min {min(times):.2f}, max {max(times):.2f}); "
                  f"CPU {statistics.median(cpu):.2f} s")
    print(f"slowest median {worst:.2f} s; target < {TARGET_S:.1f} s: {'met' if worst < TARGET_S else 'MISSED'}")


if __name__ == "__main__":
    main()
