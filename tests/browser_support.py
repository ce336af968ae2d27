"""Shared plumbing of the real-browser tests: Debian chromium + Playwright, and a streamlit server on a free port."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# DESIGN.md: root needs --no-sandbox; the networking flags keep chromium off this machine's closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def missing() -> str | None:
    """Why the browser tests cannot run here (the only reason they may skip), or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -r requirements-dev.txt (never `playwright install`)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(env: dict[str, str], entry: str = "app.py", timeout_s: float = 60) -> Iterator[str]:
    """`streamlit run` on 127.0.0.1 and a free port; yields the URL once /_stcore/health answers."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", entry, "--server.port", str(port), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                pytest.fail(f"streamlit did not start on {url}:\n{out[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def with_env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


# The only reason a real-browser test may skip: this machine has no Debian chromium (Playwright is a required test
# package: without it the modules fail to import, loudly).
NEEDS_BROWSER = pytest.mark.skipif(missing() is not None,
                                   reason="needs Debian's chromium at /usr/bin/chromium (real-browser tests)")


# Settled: Streamlit finished the run (no 'Running...' status widget), every lazily loaded element replaced its
# placeholder (no skeleton) and, with `stale`, no element of the previous run is left greyed out; then the last
# paint (charts) gets `paint_ms`.
_SETTLED_JS = ("!document.querySelector('[data-testid=\"stStatusWidget\"]') && "
               "!document.querySelector('[data-testid=\"stSkeleton\"]')")


def settle(page, *, timeout_ms: int = 60_000, paint_ms: int = 700, stale: bool = False) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(_SETTLED_JS + (" && !document.querySelector('[data-stale=\"true\"]')" if stale else ""),
                           timeout=timeout_ms)
    page.wait_for_timeout(paint_ms)


def no_exception(page) -> None:
    """No Streamlit exception box on the page (a traceback shown to the user)."""
    from playwright.sync_api import expect

    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
