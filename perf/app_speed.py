"""How fast the app opens and reruns: cold start (fresh process) and reruns after one widget change; medians.

    .venv/bin/python perf/app_speed.py             # AppTest: cold start x5, reruns x30
    .venv/bin/python perf/app_speed.py --browser   # also the real server in chromium (Playwright)

Targets (issue 5): cold start under 3 s, a rerun after one widget change under 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

COLD = textwrap.dedent(f"""
    import json, sys, time
    t0, c0 = time.perf_counter(), time.process_time()
    from streamlit.testing.v1 import AppTest
    t1 = time.perf_counter()
    at = AppTest.from_file({APP!r}, default_timeout=60)
    at.run()
    t2, c2 = time.perf_counter(), time.process_time()
    assert not at.exception and at.metric, "the plan did not render"
    print(json.dumps({{"total_s": t2 - t0, "first_run_s": t2 - t1, "cpu_s": c2 - c0,
                       "torch": "torch" in sys.modules}}))
""")


def cold_start(n: int) -> dict:
    """Fresh interpreter each time: imports + the first run of app.py with the default scenario planned."""
    totals, firsts, cpus, torch = [], [], [], False
    for _ in range(n):
        out = subprocess.run([sys.executable, "-c", COLD], cwd=ROOT, capture_output=True, text=True, timeout=180,
                             env={**os.environ, "TRAINPLAN_HOME": tempfile.mkdtemp()})
        r = json.loads(out.stdout.strip().splitlines()[-1])
        totals.append(r["total_s"])
        firsts.append(r["first_run_s"])
        cpus.append(r["cpu_s"])
        torch |= r["torch"]
    return {"total_s": totals, "first_run_s": firsts, "cpu_s": cpus, "torch_imported": torch}


def reruns(n: int) -> dict:
    """One session; each step changes one widget. 'new' = a scenario not planned before, 'seen' = cached plan."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    batches = [256 * 2 ** (i % 6) for i in range(n)]  # 256 ... 8192: new scenarios first, then seen ones
    tiers = ["spot", "on_demand"]
    new, seen, cpu, seen_keys = [], [], [], set()
    for i in range(n):
        if i % 3 == 2:
            widget, value = at.selectbox(key="tier"), tiers[(i // 3) % 2]
        else:
            widget, value = at.number_input(key="global_batch"), batches[i]
        t, c = time.perf_counter(), time.process_time()
        widget.set_value(value).run()
        dt = time.perf_counter() - t
        cpu.append(time.process_time() - c)
        assert not at.exception, [e.value for e in at.exception]
        key = at.query_params.get("s")
        (seen if key in seen_keys else new).append(dt)
        seen_keys.add(key)
    return {"new_scenario_s": new, "cached_plan_s": seen, "cpu_s": cpu}


def browser_timing(n: int) -> dict:
    """The real server: page load until the plan is drawn, and one widget change until the page settles."""
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t_start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "TRAINPLAN_HOME": tempfile.mkdtemp()})
    url = f"http://127.0.0.1:{port}"
    loads, changes = [], []
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        server_up = time.perf_counter() - t_start
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium",
                                   args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                         "--disable-component-update", "--disable-sync"])
            for i in range(n):
                page = b.new_page(viewport={"width": 1400, "height": 1600})
                t = time.perf_counter()
                page.goto(url)
                page.wait_for_selector('[data-testid="stMetric"]', timeout=60_000)
                loads.append(time.perf_counter() - t)
                box = page.get_by_role("spinbutton", name="Global batch size (samples)")
                before = page.url
                t = time.perf_counter()
                box.fill(str(512 * (i + 1)))
                box.press("Enter")
                page.wait_for_function("u => window.location.href !== u", arg=before, timeout=30_000)
                changes.append(time.perf_counter() - t)
                page.close()
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    return {"server_up_s": [server_up], "page_load_to_plan_s": loads, "widget_change_to_new_url_s": changes}


def _report(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:32s} (none)"
    return (f"{name:32s} median {statistics.median(values) * 1000:7.0f} ms   min {min(values) * 1000:6.0f}   "
            f"max {max(values) * 1000:6.0f}   n={len(values)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", type=int, default=5, help="cold starts (fresh processes)")
    p.add_argument("--reruns", type=int, default=30, help="widget changes in one session")
    p.add_argument("--browser", action="store_true", help="also time the real server in chromium")
    args = p.parse_args(argv)
    os.environ.setdefault("TRAINPLAN_HOME", tempfile.mkdtemp())

    cold = cold_start(args.cold)
    print("cold start (AppTest, fresh process; imports included):")
    print("  " + _report("imports + first run", cold["total_s"]))
    print("  " + _report("first run of app.py", cold["first_run_s"]))
    print("  " + _report("CPU time, imports + first run", cold["cpu_s"]))
    print(f"  torch imported: {cold['torch_imported']}")
    rr = reruns(args.reruns)
    print("rerun after one widget change (AppTest, same session):")
    print("  " + _report("new scenario (plan computed)", rr["new_scenario_s"]))
    print("  " + _report("scenario seen before (cached)", rr["cached_plan_s"]))
    print("  " + _report("CPU time per rerun (all)", rr["cpu_s"]))
    ok = statistics.median(cold["total_s"]) < 3.0 and statistics.median(rr["new_scenario_s"]) < 0.3
    if args.browser:
        br = browser_timing(3)
        print("real server + chromium:")
        for k, v in br.items():
            print("  " + _report(k, v))
    print("targets met (cold < 3 s, rerun < 300 ms):", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
