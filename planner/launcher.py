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

from planner.errors import TrainplanError
from planner.vocab import UPLOAD_SERVER_MAX_MB, VERSION

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
    "server.maxUploadSize": str(UPLOAD_SERVER_MAX_MB),  # the uploaders' limit + framing (planner/vocab.py)
    "server.fileWatcherType": "none",  # no source watching: it cost every run and every new session time
    "server.runOnSave": "false",
    "runner.postScriptGC": "false",  # a full gc.collect after each run held the page's last messages
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "minimal",
}
LOCAL_ADDRESSES = ("127.0.0.1", "localhost", "::1")
# The Streamlit flags `trainplan app` passes through (each checked here first); any other is refused with this list.
# The rest of STREAMLIT_OPTIONS is how the app must run (upload size, no file watching...), not a user's choice.
PASSED_FLAGS = {
    "server.port": "N (1-65535; the same as --port)",
    "server.address": "HOST (default 127.0.0.1; any other address serves the app, which has no login, to that "
                      "network: a warning says so)",
    "server.baseUrlPath": "PATH (the app behind a reverse proxy at /PATH)",
    "theme.base": "light|dark",
}
THEMES = ("light", "dark")
COMMANDS = {
    "app": "start the app on http://127.0.0.1:PORT and open it in the browser (--port N, --no-browser; Streamlit's "
           + ", ".join(f"--{flag}" for flag in PASSED_FLAGS) + ")",
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


class FlagError(TrainplanError, ValueError):
    """A Streamlit flag `trainplan app` does not pass through, or a bad value for one it does."""


def app(argv: list[str]) -> int:
    allowed = "\n".join(f"  --{flag} {what}" for flag, what in PASSED_FLAGS.items())
    parser = argparse.ArgumentParser(prog="trainplan app", description=COMMANDS["app"],
                                     epilog="Streamlit flags passed through:\n" + allowed,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=None, help=f"default {DEFAULT_PORT}")
    parser.add_argument("--no-browser", action="store_true", help="only serve; do not open a browser")
    args, rest = parser.parse_known_args(argv)
    try:
        flags = streamlit_flags(rest)
        port = _port(args.port, flags.pop("server.port", None))
    except FlagError as exc:
        parser.error(str(exc))  # exit 2, after the usage line
    address = flags.get("server.address", STREAMLIT_OPTIONS["server.address"])
    if address not in LOCAL_ADDRESSES:
        print(f"trainplan app: warning: --server.address {address} serves the app to every machine that can reach "
              "that address; it has no login, and uploads and bench runs act on this machine. Use 127.0.0.1 to keep "
              "it to yourself.", file=sys.stderr)
    local = "127.0.0.1" if address in ("0.0.0.0", "::", "") else address  # a host to connect to
    url = f"http://{local}:{port}{_base_path(flags)}/"
    if not args.no_browser:
        threading.Thread(target=_open_when_serving, args=(url, local, port), daemon=True).start()
    return _run_module("streamlit", streamlit_argv(port, flags))


def streamlit_flags(argv: list[str]) -> dict[str, str]:
    """The Streamlit flags among `trainplan app`'s arguments ("--server.port 8600" or "--server.port=8600"), each
    checked; FlagError names one that is not passed through (and lists those that are) or a bad value."""
    out: dict[str, str] = {}
    items = list(argv)
    while items:
        item = items.pop(0)
        name, sep, value = item.partition("=")
        flag = name[2:] if name.startswith("--") else None
        if flag not in PASSED_FLAGS:
            raise FlagError(f"{name}: not passed to Streamlit; allowed: "
                            + ", ".join(f"--{f}" for f in PASSED_FLAGS) + ", --port, --no-browser")
        if not sep:
            if not items or items[0].startswith("--"):
                raise FlagError(f"{name}: needs a value ({PASSED_FLAGS[flag]})")
            value = items.pop(0)
        if flag in out:
            raise FlagError(f"{name}: given twice")
        out[flag] = _checked(flag, value.strip())
    return out


def _checked(flag: str, value: str) -> str:
    if flag == "server.port":
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise FlagError(f"--server.port {value}: expected 1-65535")
        return str(int(value))
    if flag == "server.address" and (not value or any(c.isspace() for c in value)):
        raise FlagError(f"--server.address {value!r}: expected a host name or IP address")
    if flag == "server.baseUrlPath" and (not value.strip("/") or any(c.isspace() or c in "?#" for c in value)):
        raise FlagError(f"--server.baseUrlPath {value!r}: expected a URL path such as trainplan")
    if flag == "theme.base" and value not in THEMES:
        raise FlagError(f"--theme.base {value}: expected one of " + ", ".join(THEMES))
    return value


def _port(port: int | None, server_port: str | None) -> int:
    """--port and --server.port are one setting: either, or both when they agree."""
    if port is not None and not 0 < port < 65536:
        raise FlagError(f"--port {port}: expected 1-65535")
    if port is not None and server_port is not None and int(server_port) != port:
        raise FlagError(f"--port {port} and --server.port {server_port}: one port, given once")
    if port is not None:
        return port
    return int(server_port) if server_port is not None else DEFAULT_PORT


def _base_path(flags: dict[str, str]) -> str:
    path = flags.get("server.baseUrlPath", "").strip("/")
    return f"/{path}" if path else ""


def streamlit_argv(port: int = DEFAULT_PORT, flags: dict[str, str] | None = None) -> list[str]:
    """What `trainplan app --port PORT [Streamlit flags]` runs, as a `python -m streamlit` command line (for tests
    and scripts); `flags` (from streamlit_flags) replace the defaults they name."""
    options = {**STREAMLIT_OPTIONS, **(flags or {}), "server.port": str(port)}
    return ["run", str(APP_FILE), *(f"--{key}={value}" for key, value in options.items())]


def _open_when_serving(url: str, host: str, port: int, timeout_s: float = 60.0) -> None:
    """Open the browser once the server accepts connections (opening earlier shows an error page)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
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
