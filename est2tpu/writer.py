"""Atomic file writes for the CLI: a file is either fully rewritten or left exactly as it was."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from est2tpu.ftypes import MigrationError

__all__ = ["Written", "before_replace", "write_atomic", "write_file"]


def _current_umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: The longest file name most filesystems take (bytes).
NAME_MAX = 255
_TMP_SUFFIX = ".est2tpu-tmp"
_TMP_RANDOM = 8  # the characters mkstemp adds


@dataclass
class Written:
    """What one write did: whether it changed the file, and what it could not keep."""

    changed: bool
    lost: list[str] = field(default_factory=list)


def write_atomic(path: Path, data: bytes) -> bool:
    """Replace the contents of ``path`` with ``data`` atomically; return whether it wrote.

    See :func:`write_file`, which also says what of the file's metadata could not be kept.
    """
    return write_file(path, data).changed


def write_file(
    path: Path, data: bytes, *, expected: bytes | None = None, trees: Sequence[str] = ()
) -> Written:
    """Replace the contents of ``path`` with ``data`` atomically.

    The bytes go to a temporary file in the same directory (so ``os.replace`` is a rename
    on one filesystem), which gets the original file's owner and group (where this process
    may set them), permission bits and extended attributes, is fsynced, and then replaces
    the file. A symlink is written through: its target is replaced, the link stays.
    Nothing is written when ``data`` equals the current content. On any error the temporary
    file is removed and the error is raised; the original file is untouched. A Ctrl-C
    (SIGINT) or SIGTERM that arrives during the write is held until the file is replaced,
    so that an interrupted run never leaves a temporary file behind.

    ``expected`` is what the file held when it was read: if it holds anything else, when
    the write starts or immediately before the rename, MigrationError (someone edited it,
    and their edit is never overwritten). Immediately before the rename the file must also
    still be the same regular file (device, inode, size, times) reached the same way; a
    path that became a symlink, or a symlink that now points elsewhere, is not written.
    ``trees`` (real paths) are the directories the file may lie in; a file (or a symlink's
    target) outside all of them is not written.

    ``Written.lost`` names, one short phrase each, what could not be kept: the owner or
    group, an extended attribute, or other hard links to the file (a rename gives the
    path a new inode; the other names keep the old content).
    """
    with _signals_held():
        return _write(path, data, expected, trees)


def before_replace(path: Path) -> None:
    """Called with the path being written once its new bytes are on disk, just before the
    last check and the rename; does nothing. A test replaces it to edit the file at that
    very point (a race made deterministic)."""


_CHANGED = "the file changed on disk during the run; run est2tpu again"


def _tmp_prefix(name: str) -> str:
    """``.NAME.``, with NAME shortened so that the temporary name fits in NAME_MAX bytes."""
    room = NAME_MAX - len(_TMP_SUFFIX) - _TMP_RANDOM - 2
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}."


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _snapshot(target: str) -> tuple[os.stat_result, bytes] | None:
    """The regular file at ``target`` (never through a symlink): its stat and bytes; None
    when nothing is there."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        return None
    except OSError:
        if os.path.islink(target):  # a symlink put where the file was (ELOOP)
            raise MigrationError(_CHANGED) from None
        raise
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise MigrationError("not a regular file any more; run est2tpu again")
        return st, f.read()


def _where(path: Path, trees: Sequence[str]) -> str:
    """The real file behind ``path``, checked to lie in one of ``trees``."""
    target = os.path.realpath(path)
    if trees and not any(_is_within(target, tree) for tree in trees):
        what = "symlink points" if os.path.islink(path) else "the file is"
        raise MigrationError(f"{what} outside the tree ({target}); not written")
    return target


def _write(path: Path, data: bytes, expected: bytes | None, trees: Sequence[str]) -> Written:
    target = _where(path, trees)
    was_link = os.path.islink(path)
    found = _snapshot(target)
    st: os.stat_result | None
    if found is None:
        if expected is not None:
            raise MigrationError(_CHANGED)
        st = None
        mode = 0o666 & ~_current_umask()
    else:
        st, now = found
        if expected is not None and now != expected:
            raise MigrationError(_CHANGED)
        expected = now
        mode = stat.S_IMODE(st.st_mode)
        if now == data:
            return Written(changed=False)
    lost: list[str] = []
    fd, tmp_name = tempfile.mkstemp(
        dir=os.path.dirname(target),
        prefix=_tmp_prefix(os.path.basename(target)),
        suffix=_TMP_SUFFIX,
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if st is not None:
                # chown may clear the set-id bits, so it goes before chmod.
                lost += _keep_owner(f.fileno(), st)
            os.fchmod(f.fileno(), mode)
            if st is not None:
                lost += _keep_xattrs(Path(target), f.fileno())
            os.fsync(f.fileno())
        before_replace(path)
        _check_unchanged(path, target, was_link, st, expected)
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(Path(target).parent)
    if st is not None and st.st_nlink > 1:
        others = st.st_nlink - 1
        lost.append(
            f"hard link broken: {others} other name{'s' if others > 1 else ''} of this file "
            "keep the old code"
        )
    return Written(changed=True, lost=lost)


def _check_unchanged(
    path: Path, target: str, was_link: bool, st: os.stat_result | None, expected: bytes | None
) -> None:
    """The last look before the rename: the same file, reached the same way, same bytes."""
    if os.path.islink(path) != was_link or os.path.realpath(path) != target:
        raise MigrationError(_CHANGED)
    found = _snapshot(target)
    if found is None or st is None:
        if found is not None or st is not None:
            raise MigrationError(_CHANGED)
        return
    st_now, now = found
    if _identity(st_now) != _identity(st) or now != expected:
        raise MigrationError(_CHANGED)


def _keep_owner(fd: int, st: os.stat_result) -> list[str]:
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (st.st_uid, st.st_gid):
        return []
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
        return []
    except OSError:
        pass
    # Not root: the group alone may still be kept (a group this user belongs to).
    try:
        os.fchown(fd, -1, st.st_gid)
    except OSError:
        group_kept = False
    else:
        group_kept = True
    if now.st_uid == st.st_uid:
        return [] if group_kept else [f"group not kept (was {st.st_gid}, now {now.st_gid})"]
    what = f"owner not kept (was {st.st_uid}, now {now.st_uid})"
    if not group_kept:
        what += f", nor group (was {st.st_gid}, now {now.st_gid})"
    return [what]


def _keep_xattrs(source: Path, fd: int) -> list[str]:
    if not hasattr(os, "listxattr"):  # pragma: no cover - not Linux
        return []
    try:
        names = os.listxattr(source)
    except OSError:
        return []  # a filesystem without extended attributes has none to lose
    lost = []
    for name in names:
        try:
            os.setxattr(fd, name, os.getxattr(source, name))
        except OSError as exc:
            lost.append(f"extended attribute {name} not kept ({exc.strerror or exc})")
    return lost


#: The signals held during a write; each is delivered once the file is whole.
_HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    # Python runs signal handlers between bytecodes, so a KeyboardInterrupt could land just
    # after mkstemp and before the cleanup is armed. Hold the signals for the few
    # milliseconds of one write, then deliver them to whatever handler was there.
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread receives signals
        return
    received: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: received.append(signum)) for sig in _HELD
    }
    try:
        yield
    finally:
        for held, handler in previous.items():
            signal.signal(held, handler)
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)


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
