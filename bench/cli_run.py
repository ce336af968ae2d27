"""`python -m bench run`: sweep precisions x batch sizes for one model, write one growing result file."""

from __future__ import annotations

import signal
import sys
import tempfile
import traceback
from pathlib import Path

from bench.events import Events
from planner.inputs.errors import InputError
from planner.inputs.shipped import bench_out_dir
from planner.vocab import OPTIMIZERS, PRECISIONS, Reason

DEFAULT_OUT = bench_out_dir()  # the checkout's results/, or $TRAINPLAN_HOME/results when installed
EXIT_INTERRUPTED = 130


def add_arguments(p) -> None:
    p.add_argument("--model", required=True,
                   help="zoo id (python -m bench list) or a custom 'package.module:callable' (README: Custom models)")
    p.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                   help="zoo build option, e.g. seq_len=512 or preset=7b (repeatable)")
    p.add_argument("--precision", default="fp32,tf32,fp16,bf16", help="comma list of fp32, tf32, fp16, bf16")
    p.add_argument("--batch", default="32", help="comma list of batch sizes, or 'auto' (sizes up to the maximum)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per configuration")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps before the window (>= 1)")
    p.add_argument("--phase-steps", type=int, default=5, help="steps of the separate forward/backward/optimizer pass")
    p.add_argument("--optimizer", default="adamw", choices=OPTIMIZERS)
    p.add_argument("--optimizer-impl", default="foreach", choices=("foreach", "fused"))
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 1e-4 Adam-family, 1e-3 SGD)")
    p.add_argument("--out", default=None, help="results root; the file goes to OUT/<gpu-id|cpu>/ (default: a GPU's "
                   f"to {DEFAULT_OUT}, a CPU run's to $TRAINPLAN_HOME/results)")
    p.add_argument("--max-batch", action="store_true", help="find the largest batch per precision")
    p.add_argument("--max-batch-trials", type=int, default=12)
    p.add_argument("--dataloader", action="store_true", help="also measure the input pipeline")
    p.add_argument("--cpu-cost-ms", type=float, default=2.0, help="synthetic per-sample CPU cost for --dataloader")
    p.add_argument("--image-folder", default=None, help="measure --dataloader on this folder of images instead")
    p.add_argument("--dataloader-workers", default="0,2,4,8")
    p.add_argument("--dataloader-batch", type=int, default=32)
    p.add_argument("--dataloader-batches", type=int, default=10)
    p.add_argument("--cpu-only", action="store_true", help="measure on the CPU even if a GPU is present")
    p.add_argument("--gpu-index", type=int, default=0)
    p.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    p.add_argument("--profiles", action="append", metavar="DIR", help="GPU profile folder(s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--progress-json", action="store_true",
                   help="the same as --events json: the app's event stream on stdout (kept for older scripts)")


# ------------------------------------------------------------------ validation (before torch is imported)

def _int_list(text: str, flag: str, minimum: int = 1) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise InputError(flag, None, part, f"an integer >= {minimum} (comma-separated list)") from None
        if value < minimum:
            raise InputError(flag, None, value, f"an integer >= {minimum}")
        out.append(value)
    return list(dict.fromkeys(out))


def parse_precisions(text: str) -> list[str]:
    names = [p.strip().lower() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in PRECISIONS:
            raise InputError("--precision", None, name, "one of " + ", ".join(PRECISIONS))
    if not names:
        raise InputError("--precision", None, text, "at least one of " + ", ".join(PRECISIONS))
    return list(dict.fromkeys(names))


def parse_batches(text: str) -> list[int] | str:
    if text.strip().lower() == "auto":
        return "auto"
    return sorted(_int_list(text, "--batch"))


def parse_model_options(items: list[str]) -> dict:
    options = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--model-option", None, item, "KEY=VALUE, e.g. seq_len=512")
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                continue
        options[key.strip()] = value
    return options


def check_writable(out: str) -> Path:
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        raise InputError("--out", None, out, f"a writable folder ({exc.__class__.__name__}: {exc.strerror or exc})") \
            from None
    return root


def validate(args) -> dict:
    if args.steps < 1:
        raise InputError("--steps", None, args.steps, "an integer >= 1")
    if args.warmup < 1:
        raise InputError("--warmup", None, args.warmup, "an integer >= 1 (the first step allocates state)")
    if args.phase_steps < 0:
        raise InputError("--phase-steps", None, args.phase_steps, "an integer >= 0")
    if args.optimizer == "adafactor" and args.optimizer_impl == "fused":
        raise InputError("--optimizer-impl", None, "fused", "foreach (torch's Adafactor has no fused version)")
    if args.dataloader_batch < 1 or args.dataloader_batches < 1:
        raise InputError("--dataloader-batch(es)", None, (args.dataloader_batch, args.dataloader_batches),
                         "integers >= 1")
    if args.image_folder:
        from bench.dataloader_bench import IMAGE_SUFFIXES

        folder = Path(args.image_folder)
        if not folder.is_dir() or not any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.rglob("*")):
            raise InputError("--image-folder", None, args.image_folder,
                             "an existing folder with images (" + ", ".join(IMAGE_SUFFIXES) + ")")
    if args.cpu_cost_ms < 0:
        raise InputError("--cpu-cost-ms", None, args.cpu_cost_ms, "a number >= 0")
    return {
        "precisions": parse_precisions(args.precision),
        "batches": parse_batches(args.batch),
        "options": parse_model_options(args.model_option),
        "workers": _int_list(args.dataloader_workers, "--dataloader-workers", minimum=0),
        # None: chosen once the device is known (default_root), so a CPU run never writes into results/.
        "root": check_writable(args.out) if args.out is not None else None,
    }


def default_root(*, cpu: bool) -> Path:
    """The results root of a run without --out: a GPU's the checkout's results/, a CPU's $TRAINPLAN_HOME/results."""
    return check_writable(str(bench_out_dir(cpu=cpu)))


# ------------------------------------------------------------------ entry point

def main(args) -> int:
    if args.progress_json and getattr(args, "events", None) is None:
        args.events = Events()
    cfg = validate(args)  # InputError -> exit 2 (handled by bench.__main__)
    from bench.sweep import Sweep

    sweep = Sweep(args, cfg)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        sweep.prepare()  # bad model / optimizer -> InputError, before any file is written
        try:
            sweep.run()
        except KeyboardInterrupt:
            sweep.stop_reason = Reason("interrupted")
            sweep.save(partial=True)
            sweep.progress.warn(f"interrupted: {sweep.ok_count()} measurement(s) kept, marked partial, in "
                                f"{sweep.path}")
            sweep.progress.emit("interrupted", path=str(sweep.path), partial=True)
            return EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - keep what was measured, then report the crash
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            sweep.stop_reason = Reason("run_failed", error=f"{exc.__class__.__name__}: {first_line}"[:480])
            sweep.save(partial=True)
            traceback.print_exc()
            text = f"bench run failed; what was measured is in {sweep.path} (partial)"
            sweep.progress.warn(text)
            sweep.progress.error("run_failed", text, path=str(sweep.path), partial=True)
            return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    sweep.save(partial=False)
    sweep.finish()
    return 0


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover - use python -m bench run
    sys.exit("use: python -m bench run ...")
