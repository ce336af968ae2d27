"""`python -m bench list|detect|run|trace|ddp|published`: one subcommand per module, imported only when it is used.

Extension point: a subcommand is a module with `add_arguments(parser)` and `main(args) -> int` (exit status),
registered in SUBCOMMANDS below. Modules that are not present (e.g. bench/trace.py before it is written) are
left out of the command list, so adding one is a single line here.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

from bench.events import from_argv as events_from_argv
from planner.inputs.bench_events import COMMANDS as EVENT_COMMANDS
from planner.inputs.errors import InputError

SUBCOMMANDS = {
    "list": ("bench.cli_list", "the model zoo: ids, parameter counts, input shapes, FLOPs per sample"),
    "detect": ("bench.detect", "GPUs seen by NVML and torch, driver, CUDA, matched GPU profile (--json)"),
    "run": ("bench.cli_run", "measure training steps: precisions x batch sizes, max batch, data loader"),
    "trace": ("bench.trace", "trace a training step without a GPU (memory and FLOPs)"),
    "ddp": ("bench.ddp", "measure data-parallel scaling across GPUs"),
    # The corpus lives in the calibration stage (calibration/corpus.py, calibration/published/); bench keeps the
    # command people and CI know. It needs no torch, and calibration.corpus imports from the planner only inputs
    # and vocab, as bench does.
    "published": ("calibration.corpus", "the cited corpus of published measurements: check it, list it (--summary)"),
}
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def missing_module_text(command: str, module: str) -> str:
    return (f"bench {command}: this Python has no {module} ({sys.executable}). Install what bench needs with "
            f"`pip install -r requirements.txt` (torch==2.13.0 is pinned; see the README).")


def _version() -> str:
    from planner.vocab import VERSION as __version__

    return f"trainplan bench {__version__}"


def available() -> dict[str, tuple[str, str]]:
    """The subcommands whose module exists (found without importing it)."""
    out = {}
    for name, (module, text) in SUBCOMMANDS.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:
            found = False
        if found:
            out[name] = (module, text)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = available()
    epilog = "commands:\n" + "\n".join(f"  {name:8} {text}" for name, (_, text) in commands.items())
    top = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0], epilog=epilog,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=_version())
    top.add_argument("command", choices=list(commands))
    top.add_argument("args", nargs=argparse.REMAINDER, help="its options: python -m bench COMMAND --help")
    if not argv or argv[0] not in commands:
        top.parse_args(argv)  # prints help or the version, or the error naming the valid commands, and exits
        return EXIT_BAD_INPUT
    name = argv[0]
    # The app's event stream starts before the command's module is imported, so a missing torch is an event too.
    rest, events = events_from_argv(argv[1:]) if name in EVENT_COMMANDS else (argv[1:], None)
    try:
        module = importlib.import_module(commands[name][0])
        parser = argparse.ArgumentParser(prog=f"python -m bench {name}", description=commands[name][1])
        module.add_arguments(parser)
        args = parser.parse_args(rest)
        args.argv = [sys.executable, "-m", "bench", *argv]  # result files record it (settings.command)
        args.events = events
        return int(module.main(args) or 0)
    except ModuleNotFoundError as exc:
        if exc.name not in ("torch", "yaml"):
            raise
        text = missing_module_text(name, exc.name)
        print(text, file=sys.stderr)
        if events is not None:
            events.error("missing_module", text, module=exc.name, python=sys.executable)
        return EXIT_BAD_INPUT
    except InputError as exc:
        print(f"bench {name}: {exc}", file=sys.stderr)
        if events is not None:
            events.bad_input(exc)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"bench {name}: interrupted", file=sys.stderr)
        if events is not None:
            events.emit("interrupted", partial=False)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `python -m bench published list | head`: the reader left; nothing went wrong
        _silence_stdout()
        return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise BrokenPipeError again."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
