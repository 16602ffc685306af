"""Atomic file writes for the CLI: a file is either fully rewritten or left exactly as it was."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["write_atomic"]


def _current_umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace the contents of ``path`` with ``data`` atomically; return whether it wrote.

    The bytes go to a temporary file in the same directory (so ``os.replace`` is a rename
    on one filesystem), which gets the original file's permission bits, is fsynced, and then
    replaces the file. A symlink is written through: its target is replaced, the link stays.
    Nothing is written when ``data`` equals the current content. On any error the temporary
    file is removed and the error is raised; the original file is untouched. A Ctrl-C
    (SIGINT) that arrives during the write is held until the file is replaced, so that
    an interrupted run never leaves a temporary file behind.
    """
    with _sigint_held():
        return _write(path, data)


def _write(path: Path, data: bytes) -> bool:
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    else:
        mode = stat.S_IMODE(st.st_mode)
        if st.st_size == len(data) and target.read_bytes() == data:
            return False
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".est2tpu-tmp"
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(target.parent)
    return True


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    # Python runs signal handlers between bytecodes, so a KeyboardInterrupt could land just
    # after mkstemp and before the cleanup is armed. Hold the signal for the few
    # milliseconds of one write, then deliver it to whatever handler was there.
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse to open a directory, and the
    # write has already succeeded by then, so a failure here is not an error.
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
