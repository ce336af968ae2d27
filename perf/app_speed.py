"""How fast the app opens, switches pages and reruns: in process (AppTest) and in a real browser; medians.

    .venv/bin/python perf/app_speed.py                       # AppTest: cold start x5, reruns x30
    .venv/bin/python perf/app_speed.py --browser             # also chromium against `streamlit run` + the PDF
    .venv/bin/python perf/app_speed.py --browser --no-apptest --json out.json   # browser + PDF only; JSON too

Targets (issue 5): cold start under 3 s, a rerun after one widget change under 300 ms (AppTest, server side).
Targets (issue 19, --browser; medians of --repeat, 5 by default, all in ONE run: our app is compared with an empty
app measured in the same minutes, so a busy machine shifts both):
  cold load    navigation to the first plan numbers on screen (the headline's "Time to train" metric) <= the same
               for an EMPTY Streamlit app (st.write + the one number input below, served the same way) + 0.4 s;
               in a fresh browser profile (cold HTTP cache) and in a new tab of a browser that has the files cached
               (a new session either way; the first session after a server start is reported apart)
  page switch  in one session, Plan -> Compare -> GPUs & prices -> Report -> Plan: click to settled < 1.5 s
  widget       one sidebar number (Epochs 90 -> 89, 88, ...: a plan not computed before), Enter to settled with
               the new "Time to train" shown < 0.3 s (the empty app's number input is timed the same way): the
               first change after a load, and a later one in the same session, reported apart
  PDF          perf/report_speed.py's render_report(..., "pdf") of the default scenario in a warm process < 0.8 s:
               with its charts drawn, and after the HTML preview drew them (the Report page's order)

Reference, not a target: the same empty app with as many plain texts as the Plan page sends elements per run (the
"floor" app), timed the same way: what Streamlit itself takes for that many elements on this machine.

"Settled": the server has sent script_finished for the run the action started (read off the page's websocket,
not the status widget: Streamlit shows "Running..." only after 500 ms and fades it out over 200 ms), and then, in
the same animation frame, the expected text is on screen, no element is stale (data-stale) or a placeholder
(stSkeleton), every Vega-Lite chart has drawn its marks and every dataframe its canvas.
"""

from __future__ import annotations

import argparse
import contextlib
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
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
CHROMIUM = "/usr/bin/chromium"
# As tests/browser_support.py: root needs --no-sandbox; the networking flags keep chromium off the network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 1600}
# The empty app: one text and the one number input the widget timing needs.
EMPTY_APP = 'import streamlit as st\n\nn = st.number_input("n", value=1)\nst.write(f"x {n}")\n'
# The floor: the empty app plus as many plain texts as our Plan page sends elements per run (ELEMENTS: counted on
# its websocket: ~115 deltas for the default scenario), so no work but the element count: what Streamlit itself
# costs per element on this machine (server sending + browser rendering), apart from what our code does.
ELEMENTS = 115
FLOOR_APP = EMPTY_APP + f'for i in range({ELEMENTS - 2}):\n    st.markdown(f"line {{i}} of {{n}}")\n'
PAGES = (("Compare", "h1", "Compare scenarios"), ("GPUs & prices", "h1", "GPUs & prices"),
         ("Report", "h1", "Report"), ("Plan", "metric", "Time to train"))
TARGETS = {"cold_load_over_empty_s": 0.4, "page_switch_s": 1.5, "widget_change_s": 0.3, "pdf_s": 0.8}

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


# ---------------------------------------------------------------- the real server in chromium

@contextlib.contextmanager
def _server(entry: str, home: str) -> Iterator[str]:
    """`streamlit run entry` as the browser tests start it (127.0.0.1, a free port, headless); yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", entry, "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "TRAINPLAN_HOME": home})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit run {entry} did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


# Everything drawn: no stale element or placeholder, charts with their marks, dataframes with their canvas; then
# what the action should show: a page's h1, the metric labelled `text` (with a value other than `old`, when given),
# or a markdown text.
SETTLED_JS = """([kind, text, old]) => {
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) return false;
  for (const c of document.querySelectorAll('[data-testid="stVegaLiteChart"]'))
    if (!c.querySelector('svg.marks, canvas')) return false;
  for (const d of document.querySelectorAll('[data-testid="stDataFrame"]'))
    if (!d.querySelector('canvas')) return false;
  const shown = (el) => el && el.getClientRects().length > 0;
  if (kind === 'h1') return [...document.querySelectorAll('h1')].some(h => shown(h) && h.textContent.trim() === text);
  if (kind === 'metric') return [...document.querySelectorAll('[data-testid="stMetric"]')].some(m => {
    // the metric labelled `text` is on screen (with a value other than `old`, when given)
    const v = m.querySelector('[data-testid="stMetricValue"]');
    return shown(m) && v && m.querySelector('[data-testid="stMetricLabel"]')?.textContent.includes(text)
      && (old === null || v.textContent.trim() !== old);
  });
  if (kind === 'text') return [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')].some(
      m => shown(m) && m.textContent.trim() === text);
  return false;
}"""


class _Runs:
    """Counts the runs the server finished for one page: ForwardMsg.script_finished frames on its websocket."""

    def __init__(self, page: Any) -> None:
        from google.protobuf.message import DecodeError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._msg, self._bad, self._quiet = ForwardMsg, DecodeError, PlaywrightTimeout
        self._done = {ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY}
        self.page, self.ws, self.finished, self.finished_at = page, None, 0, 0.0
        page.on("websocket", self._socket)

    def _socket(self, ws: Any) -> None:
        self.ws = ws
        ws.on("framereceived", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        if not isinstance(payload, bytes | bytearray):
            return
        msg = self._msg()
        try:
            msg.ParseFromString(bytes(payload))
        except self._bad:  # not a ForwardMsg: not ours to count
            return
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished in self._done:
            self.finished += 1
            self.finished_at = time.perf_counter()

    def settle(self, after: int, kind: str, text: str, old: str | None = None, timeout_s: float = 60) -> None:
        """Wait for a run finished after `after` finished runs, then for the page to show it (one frame)."""
        deadline = time.monotonic() + timeout_s
        if self.ws is None:
            self.page.wait_for_event("websocket", timeout=timeout_s * 1000)
        while self.finished <= after:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no script_finished while waiting for {kind} {text!r}")
            with contextlib.suppress(self._quiet):  # a quiet socket: loop and check the deadline
                self.ws.wait_for_event("framereceived", timeout=min(left, 5) * 1000)
        self.page.wait_for_function(SETTLED_JS, arg=[kind, text, old], polling="raf",
                                    timeout=max(1.0, deadline - time.monotonic()) * 1000)


def _timed(action: Callable[[], None], runs: _Runs, kind: str, text: str, old: str | None = None,
           server: list[float] | None = None) -> float:
    """Seconds from the action to the settled page; `server` gets the seconds to the run's script_finished."""
    before = runs.finished
    t = time.perf_counter()
    action()
    runs.settle(before, kind, text, old)
    done = time.perf_counter()
    if server is not None:
        server.append(runs.finished_at - t)
    return done - t


def _metric_value(page: Any, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


# The first numbers: `text` (a metric's label, or a markdown text) on screen, whatever else is still loading.
SHOWN_JS = """([kind, text]) => {
  const sel = kind === 'metric' ? '[data-testid="stMetric"]' : '[data-testid="stMarkdownContainer"]';
  return [...document.querySelectorAll(sel)].some(el => el.getClientRects().length > 0 && (kind === 'metric'
    ? el.querySelector('[data-testid="stMetricValue"]') && el.textContent.includes(text)
    : el.textContent.trim() === text));
}"""


def _load(browser: Any, url: str, kind: str, text: str, context: Any = None) -> tuple[float, float, Any, _Runs]:
    """Navigation to `url` in a new page (of a fresh context: no cookies, cold HTTP cache, unless `context` is
    given): seconds until `text` is on screen, and until the page has settled."""
    page = (context or browser.new_context(viewport=VIEWPORT)).new_page()
    runs = _Runs(page)
    before = runs.finished
    t = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_function(SHOWN_JS, arg=[kind, text], polling="raf", timeout=60_000)
    shown = time.perf_counter() - t
    runs.settle(before, kind, text)
    return shown, time.perf_counter() - t, page, runs


APP_FIRST = ("metric", "Time to train")  # our app's first numbers: the headline's "Time to train" metric
EMPTY_FIRST = ("text", "x 1")


def browser_timing(n: int) -> dict[str, list[float]]:
    """Loads (our app, the empty app and the floor app interleaved, so all see the same machine load), widget
    changes and page switches in chromium; seconds."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = defaultdict(list)
    home = tempfile.mkdtemp()
    with tempfile.TemporaryDirectory() as tmp:
        empty, floor = Path(tmp) / "empty_app.py", Path(tmp) / "floor_app.py"
        empty.write_text(EMPTY_APP, encoding="utf-8")
        floor.write_text(FLOOR_APP, encoding="utf-8")
        with _server(APP, home) as app_url, _server(str(empty), home) as empty_url, \
                _server(str(floor), home) as floor_url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                apps = (("", app_url, APP_FIRST), ("empty_", empty_url, EMPTY_FIRST),
                        ("floor_", floor_url, EMPTY_FIRST))
                # The first session after a server start imports the app's modules: reported, not in the medians.
                # Its context stays open: its HTTP cache is the warm one of the warm-cache loads below.
                warm = {}
                for prefix, url, first in apps:
                    dt, _, page, _ = _load(browser, url, *first)
                    out[f"{prefix}first_load_after_start_s"].append(dt)
                    warm[prefix] = page.context
                    page.close()
                for i in range(n):
                    for prefix, url, first in apps:
                        dt, settled, page, runs = _load(browser, url, *first)  # cold: a fresh browser profile
                        out[f"{prefix}cold_load_s"].append(dt)
                        out[f"{prefix}cold_load_settled_s"].append(settled)
                        # the first change after the load, then a later one in the same session (the browser has
                        # run its update code once: chromium compiles each element kind's on first use)
                        for key, server, value in (("widget_change_s", "widget_change_script_finished_s", 89 - i),
                                                   ("widget_change_later_s", "widget_change_later_script_finished_s",
                                                    50 - i)):
                            if prefix:  # the empty (or floor) app's number input, n -> value
                                box = page.get_by_role("spinbutton", name="n")
                                box.fill(str(value))
                                dt = _timed(lambda b=box: b.press("Enter"), runs, "text", f"x {value}")
                            else:  # Epochs 90 -> 89, 88, ... (then 50, 49, ...): a scenario not planned before
                                box = page.get_by_role("spinbutton", name="Epochs")
                                before = _metric_value(page, "Time to train")
                                box.fill(str(value))
                                dt = _timed(lambda b=box: b.press("Enter"), runs, *APP_FIRST, before,
                                            server=out[server])
                            out[f"{prefix}{key}"].append(dt)
                        page.context.close()
                for _ in range(n):
                    for prefix, url, first in apps:  # a new tab of a browser that has the app's files cached
                        dt, settled, page, _ = _load(browser, url, *first, context=warm[prefix])
                        out[f"{prefix}warm_cache_load_s"].append(dt)
                        page.close()
                # page switches in one session: a first round (each page and report built once), then n rounds
                _, _, page, runs = _load(browser, app_url, *APP_FIRST)
                nav = page.locator('[data-testid="stSidebarNav"] a')
                for round_ in range(n + 1):
                    for name, kind, text in PAGES:
                        dt = _timed(nav.filter(has_text=name).first.click, runs, kind, text)
                        if round_:
                            out["page_switch_s"].append(dt)
                            out[f"page_switch_to_{name}_s"].append(dt)
                page.context.close()
            finally:
                browser.close()
    return dict(out)


def pdf_timing(n: int) -> dict[str, list[float]]:
    """perf/report_speed.py's in-process PDF of the default scenario: n times, charts drawn each time, and n times
    after the HTML preview drew them (what the Report page does before a PDF download)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import report_speed

    return report_speed.pdf_in_process(n)


# ---------------------------------------------------------------- output

def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _report(name: str, values: list[float]) -> str:
    if not values:
        return f"{name:36s} (none)"
    return (f"{name:36s} median {statistics.median(values) * 1000:7.0f} ms   min {min(values) * 1000:6.0f}   "
            f"max {max(values) * 1000:6.0f}   n={len(values)}")


def verdicts(br: dict[str, list[float]], pdf: dict[str, list[float]]) -> list[dict[str, Any]]:
    """The issue-19 targets against this run's medians (ours against the empty app's of the same run)."""
    def row(name: str, ours: str, limit: float, op: str, empty: str | None = None,
            source: dict[str, list[float]] = br) -> dict[str, Any]:
        value, base = _median(source.get(ours, [])), _median(br.get(empty, [])) if empty else None
        judged = value - base if value is not None and base is not None else value
        met = judged is not None and (judged <= limit if op == "<=" else judged < limit)
        return {"target": name, "median_s": value, "empty_app_s": base, "judged_s": judged, "limit_s": limit,
                "op": op, "relative": empty is not None, "met": met}

    slowest = max(PAGES, key=lambda p: _median(br.get(f"page_switch_to_{p[0]}_s", [])) or 0.0)[0]
    return [row("cold load, fresh browser profile", "cold_load_s", TARGETS["cold_load_over_empty_s"], "<=",
                "empty_cold_load_s"),
            row("cold load, browser cache warm", "warm_cache_load_s", TARGETS["cold_load_over_empty_s"], "<=",
                "empty_warm_cache_load_s"),
            row(f"page switch, slowest (to {slowest})", f"page_switch_to_{slowest}_s", TARGETS["page_switch_s"],
                "<"),
            row("widget change -> settled, first after load", "widget_change_s", TARGETS["widget_change_s"], "<",
                None),
            row("widget change -> settled, later ones", "widget_change_later_s", TARGETS["widget_change_s"], "<",
                None),
            row("PDF in process, charts drawn", "pdf_s", TARGETS["pdf_s"], "<", source=pdf),
            row("PDF after the preview drew them", "pdf_after_preview_s", TARGETS["pdf_s"], "<", source=pdf)]


def print_targets(table: list[dict[str, Any]], br: dict[str, list[float]]) -> None:
    def s(x: float | None, sign: bool = False) -> str:
        return "—" if x is None else f"{x:+.3f} s" if sign else f"{x:.3f} s"

    print(f"\n{'issue 19 target':44s} {'ours':>9s} {'empty app':>10s} {'judged':>10s} {'limit':>12s}  verdict")
    for r in table:
        limit = f"{r['op']} {'+' if r['relative'] else ''}{r['limit_s']:.2f} s"
        print(f"{r['target']:44s} {s(r['median_s']):>9s} {s(r['empty_app_s']):>10s} "
              f"{s(r['judged_s'], r['relative']):>10s} {limit:>12s}  {'met' if r['met'] else 'MISSED'}")
    empty = _median(br.get("empty_widget_change_s", []))
    print(f"{'  (the empty app: widget change)':44s} {s(empty):>9s}")
    floor = _median(br.get("floor_widget_change_s", []))
    floor_later = _median(br.get("floor_widget_change_later_s", []))
    floor_load = _median(br.get("floor_cold_load_s", []))
    print(f"{f'  (floor app: {ELEMENTS - 2} texts, first change)':44s} {s(floor):>9s}   (Streamlit's own cost of "
          f"this page's element count; its cold load {s(floor_load)})")
    print(f"{'  (floor app: later change)':44s} {s(floor_later):>9s}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cold", type=int, default=5, help="cold starts (fresh processes)")
    p.add_argument("--reruns", type=int, default=30, help="widget changes in one session")
    p.add_argument("--browser", action="store_true", help="also time the real server in chromium, and the PDF")
    p.add_argument("--repeat", type=int, default=5, help="browser and PDF repetitions (medians of these)")
    p.add_argument("--no-apptest", action="store_true", help="skip the AppTest cold starts and reruns")
    p.add_argument("--json", metavar="PATH", help="also write every figure as JSON ('-' = stdout)")
    args = p.parse_args(argv)
    os.environ.setdefault("TRAINPLAN_HOME", tempfile.mkdtemp())
    result: dict[str, Any] = {"command": " ".join([Path(sys.executable).name, *sys.argv]),
                              "load_average_1m_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    ok = True
    if not args.no_apptest:
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
        print("AppTest targets met (cold < 3 s, rerun < 300 ms):", "yes" if ok else "NO")
        result["apptest"] = {"cold_start": cold, "reruns": rr, "met": ok}
    if args.browser:
        br = browser_timing(args.repeat)
        print(f"real server + chromium (medians of {args.repeat}; load average {os.getloadavg()[0]:.2f}):")
        for k, v in br.items():
            print("  " + _report(k, v))
        pdf = pdf_timing(args.repeat)
        print("PDF of the default scenario in process (perf/report_speed.py):")
        for k, v in pdf.items():
            print("  " + _report(k, v))
        table = verdicts(br, pdf)
        print_targets(table, br)
        print(f"load average (1 min) {result['load_average_1m_start']:.2f} at the start, {os.getloadavg()[0]:.2f} "
              f"now, on {os.cpu_count()} CPUs")
        result.update(browser=br, pdf=pdf, targets=table,
                      medians_s={k: statistics.median(v) for k, v in {**br, **pdf}.items() if v})
        ok = ok and all(row["met"] for row in table)
    result["load_average_1m_end"] = os.getloadavg()[0]
    if args.json:
        text = json.dumps(result, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
