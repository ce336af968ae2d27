"""The one atomic file writer: a unique temp file in the target's folder, fsync, rename; a failed write changes nothing.

Also the one rule every writer follows before it writes: reading nothing writes nothing (refuse_empty).
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from planner.inputs.errors import InputError

IF_EXISTS = ("replace", "fail", "suffix")


class NothingToWrite(InputError):
    """A writer read no rows (no quotes, no measurements, no points): bad input, exit 2, and nothing written."""

    def __init__(self, source: str, what: str, target: str | Path | None):
        self.what = what
        self.target = None if target is None else str(target)
        super().__init__(source, None, 0, f"at least one of {what}")

    def _message(self) -> str:
        kept = f"{self.target} is unchanged" if self.target else "no file was made"
        return f"{self.source}: read no {self.what}; nothing was written ({kept})"


def refuse_empty(count: int, *, what: str, source: str | Path, target: str | Path | None = None) -> None:
    """Refuse to write from nothing: when `count` (rows, quotes, measurements, points read from `source`) is 0,
    raise NothingToWrite naming what was empty, where it was read and the file left as it was. Every command that
    writes a file from what it read calls this first, so a typo in a path never replaces a good file with an empty
    one (issue 34)."""
    if count <= 0:
        raise NothingToWrite(str(source), what, target)


def atomic_write(path: str | Path, data: bytes | str, *, mode: int = 0o644, if_exists: str = "replace") -> Path:
    """Write `data` (str is UTF-8) to `path` so a reader sees the old file or the whole new one, never a part.

    The file is created with `mode` minus the umask, as the kernel applies it (0644 under umask 022 or 002,
    0600 under 077), never mkstemp's fixed 0600: files shared through a team folder stay readable. An existing file survives any failure
    (full disk, file-size limit, interrupted process). if_exists: "replace" the file; "fail" with
    FileExistsError; "suffix": keep it and write name-2, name-3 ... instead. Returns the path written.
    """
    if if_exists not in IF_EXISTS:
        raise ValueError(f"if_exists must be one of {IF_EXISTS}, got {if_exists!r}")
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    tmp = _write_temp(target.parent, target.name, payload, mode)
    try:
        if if_exists == "replace":
            os.replace(tmp, target)
            written = target
        else:
            written = _link_new(tmp, target, if_exists == "suffix")
        _sync_folder(target.parent)
        return written
    finally:
        tmp.unlink(missing_ok=True)


def _write_temp(folder: Path, name: str, payload: bytes, mode: int) -> Path:
    # Same folder as the target: the rename stays on one filesystem, so it is atomic. O_EXCL + a random name:
    # two writers (a sweep and an import, two teammates) never share a temp file.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = folder / f".{name[:80]}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, flags, mode)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"no free temporary name in {folder}")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _link_new(tmp: Path, target: Path, suffix: bool) -> Path:
    candidate, n = target, 1
    while True:
        try:
            _claim(tmp, candidate)
            return candidate
        except FileExistsError:
            if not suffix:
                raise
            n += 1
            candidate = target.with_name(f"{target.stem}-{n}{target.suffix}")


def _claim(tmp: Path, candidate: Path) -> None:
    """Give `tmp` the name `candidate` only if that name is free (FileExistsError otherwise)."""
    try:
        os.link(tmp, candidate)  # fails if the name exists: a file is never silently replaced
    except OSError as exc:
        if isinstance(exc, FileExistsError) or exc.errno not in _NO_HARD_LINKS:
            raise
        # A filesystem without hard links (some network shares): reserve the name, then rename over it.
        os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.replace(tmp, candidate)


_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable; folders that cannot be opened or synced (some filesystems) are skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
