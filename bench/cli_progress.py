"""Progress for `bench run`: a plain-text bar on stderr, the app's event stream on stdout (--events json), a summary
table."""

from __future__ import annotations

import sys
import time

from bench.events import Events

BAR_WIDTH = 24


class Progress:
    """Reports sweep progress; `emit` writes an event when the app asked for the stream (bench/events.py)."""

    def __init__(self, total: int | None = None, quiet: bool = False, events: Events | None = None, err=None):
        self.total, self.done = total, 0
        self.quiet, self.events = quiet, events
        self.err = err or sys.stderr
        self.started = time.monotonic()
        self._tty = hasattr(self.err, "isatty") and self.err.isatty()
        self._open_line = False

    def emit(self, event: str, **fields) -> None:
        if self.events is not None:
            self.events.emit(event, **fields)

    def error(self, key: str, message: str, **params) -> None:
        if self.events is not None:
            self.events.error(key, message, **params)

    def notice(self, text: str) -> None:
        """A one-off message for a person (stderr), unless --quiet."""
        if not self.quiet:
            self._end_line()
            self.err.write(text + "\n")
            self.err.flush()

    def warn(self, text: str) -> None:
        """Shown even with --quiet."""
        self._end_line()
        self.err.write(text + "\n")
        self.err.flush()

    def step(self, precision: str, batch: int, status: str, step_time_s: float | None) -> None:
        self.done += 1
        self.emit("progress", done=self.done, total=self.total, precision=precision, batch=batch, status=status,
                  step_time_s=step_time_s)
        if self.quiet:
            return
        total = self.total or self.done
        filled = int(BAR_WIDTH * self.done / max(total, 1))
        timing = f"{step_time_s * 1000:.1f} ms/step" if step_time_s else status
        line = (f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{total} {precision} b={batch} "
                f"{timing} ({time.monotonic() - self.started:.0f} s)")
        if self._tty:
            self.err.write("\r" + line.ljust(78))
            self._open_line = True
        else:
            self.err.write(line + "\n")
        self.err.flush()

    def _end_line(self) -> None:
        if self._open_line:
            self.err.write("\n")
            self._open_line = False

    def close(self) -> None:
        self._end_line()


def _gib(value) -> str:
    return f"{value / 2**30:.2f}" if isinstance(value, int | float) else "-"


def summary_table(measurements: list[dict], max_batch: list[dict] | None = None) -> str:
    """A fixed-width table of the sweep (and max-batch results) for a person."""
    head = ("precision", "batch", "status", "step ms", "samples/s", "peak GiB", "TFLOPS", "MFU", "note")
    rows = [head]
    for m in measurements:
        st = m.get("step_time_s") or {}
        rows.append((
            m["precision"], str(m["batch_size"]), m["status"],
            f"{st['median'] * 1000:.2f}" if st else "-",
            f"{m['samples_per_s']:.1f}" if m.get("samples_per_s") else "-",
            _gib(m.get("peak_allocated_bytes")),
            f"{m['achieved_tflops']:.2f}" if m.get("achieved_tflops") is not None else "-",
            f"{m['mfu']:.1%}" if m.get("mfu") is not None else "-",
            (("noisy; " if m.get("noisy") else "") + (m.get("reason") or ""))[:60],
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for mb in max_batch or []:
        value = mb.get("max_batch")
        safe = mb.get("safe_batch")
        safe_text = (f", safe {safe} ({'confirmed' if mb.get('safe_confirmed') else 'not confirmed'})"
                     if safe is not None else "")
        lines.append(f"max batch {mb['precision']}: {value if value is not None else '-'} "
                     f"({len(mb.get('trials', []))} trials){safe_text}"
                     f"{' - ' + mb['reason'] if mb.get('reason') else ''}")
    return "\n".join(lines)
