"""`trainplan app|plan|bench`: the command `pip install .` puts on PATH (pyproject.toml, [project.scripts]).

`trainplan plan ARGS` is `python -m planner ARGS`, `trainplan bench ARGS` is `python -m bench ARGS` (run in this
process with runpy, so exit status, messages and signals are theirs), and `trainplan app` is `streamlit run` of the
packaged app file (ui/app_main.py) on 127.0.0.1, opening the browser unless --no-browser. Imports nothing heavy:
streamlit is loaded only by `app` (inside runpy), torch only by bench.
"""

from __future__ import annotations

import argparse
import importlib.util
import runpy
import socket
import sys
import threading
import time
import webbrowser
from pathlib import Path

from planner.vocab import VERSION

CODE_ROOT = Path(__file__).resolve().parents[1]  # holds planner/, bench/ and ui/ (a checkout or site-packages)
APP_FILE = CODE_ROOT / "ui" / "app_main.py"
DEFAULT_PORT = 8501
EXIT_BAD_INPUT = 2
BENCH_EXTRA = 'pip install "trainplan[bench]"'
# The bench subcommands that need torch (all but `list` and `published`, which read committed files): without it,
# one message naming the extra instead of bench's checkout advice (tests check this list against bench's subcommands).
TORCH_COMMANDS = ("detect", "run", "trace", "ddp")
TORCH_FREE_COMMANDS = ("list", "published")
# The app's server options: what .streamlit/config.toml says for `streamlit run app.py` in a checkout, given as
# flags because an installed app starts from any folder, where that file is not found (tests check they agree).
STREAMLIT_OPTIONS = {
    "server.address": "127.0.0.1",
    "server.headless": "true",  # never Streamlit's own browser opening (it asks for an e-mail first): ours below
    "server.maxUploadSize": "1",
    "server.fileWatcherType": "none",  # no source watching: it cost every run and every new session time
    "server.runOnSave": "false",
    "runner.postScriptGC": "false",  # a full gc.collect after each run held the page's last messages
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "minimal",
}
COMMANDS = {
    "app": "start the app on http://127.0.0.1:PORT and open it in the browser (--port N, --no-browser)",
    "plan": "plan scenarios: python -m planner (trainplan plan --help)",
    "bench": f"measure on this machine: python -m bench (trainplan bench --help; all but "
             f"{' and '.join(TORCH_FREE_COMMANDS)} need torch: {BENCH_EXTRA})",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    epilog = "commands:\n" + "\n".join(f"  {name:6} {text}" for name, text in COMMANDS.items())
    top = argparse.ArgumentParser(prog="trainplan", description=__doc__.splitlines()[0], epilog=epilog,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"trainplan {VERSION}")
    top.add_argument("command", choices=list(COMMANDS))
    top.add_argument("args", nargs=argparse.REMAINDER, help="its options: trainplan COMMAND --help")
    if not argv or argv[0] not in COMMANDS:
        top.parse_args(argv)  # prints help or the version, or the error naming the valid commands, and exits
        return EXIT_BAD_INPUT
    command, rest = argv[0], argv[1:]
    if command == "app":
        return app(rest)
    if command == "bench" and rest[:1] and rest[0] in TORCH_COMMANDS and not _has("torch"):
        print(f"trainplan bench {rest[0]}: this Python has no torch ({sys.executable}). Install it with "
              f"`{BENCH_EXTRA}` (torch==2.13.0; in a checkout: pip install -r requirements.txt).", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _run_module("planner" if command == "plan" else "bench", rest)


def app(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="trainplan app", description=COMMANDS["app"])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument("--no-browser", action="store_true", help="only serve; do not open a browser")
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port}: expected 1-65535")
    url = f"http://{STREAMLIT_OPTIONS['server.address']}:{args.port}/"
    if not args.no_browser:
        threading.Thread(target=_open_when_serving, args=(url, args.port), daemon=True).start()
    return _run_module("streamlit", streamlit_argv(args.port))


def streamlit_argv(port: int = DEFAULT_PORT) -> list[str]:
    """What `trainplan app --port PORT` runs, as a `python -m streamlit` command line (for tests and scripts)."""
    flags = [f"--{key}={value}" for key, value in {**STREAMLIT_OPTIONS, "server.port": str(port)}.items()]
    return ["run", str(APP_FILE), *flags]


def _open_when_serving(url: str, port: int, timeout_s: float = 60.0) -> None:
    """Open the browser once the server accepts connections (opening earlier shows an error page)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((STREAMLIT_OPTIONS["server.address"], port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    else:
        return
    webbrowser.open(url)


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _run_module(module: str, args: list[str]) -> int:
    """`python -m MODULE ARGS` in this process: its own argv, exit status and messages."""
    if str(CODE_ROOT) not in sys.path:  # a checkout run from another folder: planner/, bench/, ui/ importable
        sys.path.insert(0, str(CODE_ROOT))
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
