"""The command line's streams: a progress bar, streams whose failures never stop a run, diffs and
bytes on stdout, and what stdin holds."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from est2tpu.ftypes import FileResult

if TYPE_CHECKING:
    from rich.console import Console

    from est2tpu.console import LazyConsole

__all__ = [
    "PROGRESS_MIN_FILES",
    "ProgressBar",
    "SafeStream",
    "diff_bytes",
    "is_notebook",
    "print_diff",
    "usable",
    "write_stdout",
]

#: Show a progress bar only for runs long enough to need one.
PROGRESS_MIN_FILES = 20


def usable(stream: Any) -> Any:
    """``stream``, or one that writes to the null device when the process was started with
    that stream closed (Python then has None)."""
    if stream is not None:
        return stream
    return open(os.devnull, "w", encoding="utf-8")


class SafeStream:
    """A stream whose failures never stop the run: once its reader has gone (a closed pipe:
    `est2tpu migrate . | head`) or a write fails (a full disk, a closed descriptor), further
    output is dropped, so that the project is not left half-migrated because a report
    could not be written. ``lost`` says why output was dropped (None: a closed pipe, which
    only means nobody reads any more, or nothing was lost)."""

    def __init__(self, stream: Any, parent: SafeStream | None = None) -> None:
        self._stream = stream
        self._parent = parent
        self._gone = False
        self.lost: str | None = None

    def _failed(self, exc: BaseException) -> None:
        self._gone = True
        if not isinstance(exc, BrokenPipeError):
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.lost = reason or type(exc).__name__
            if self._parent is not None:
                self._parent.lost = self.lost
        if self._parent is not None:
            self._parent._gone = True
        # Whatever is still buffered would fail again when Python flushes at exit.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def write(self, data: Any) -> int:
        if not self._gone:
            try:
                return int(self._stream.write(data))
            except (OSError, ValueError) as exc:  # ValueError: a closed file
                self._failed(exc)
        return len(data)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._failed(exc)

    @property
    def buffer(self) -> SafeStream:
        return SafeStream(self._stream.buffer, parent=self) if not self._gone else self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ProgressBar:
    """A progress bar on a terminal that moves through a run's stages (scanning, indexing,
    rewriting), shown only for runs long enough to need one."""

    def __init__(self, err: Console) -> None:
        self.err = err
        self.bar: Any = None  # a rich Progress, built when first shown
        self.task: Any = None
        self.started = False
        self.wanted: bool | None = None  # decided by the number of files found

    def show(self, stage: str, done: int, total: int) -> None:
        """`api.migrate_paths`'s progress callback."""
        if self.wanted is None:
            self.wanted = total > PROGRESS_MIN_FILES
        if not self.wanted:
            return
        if self.bar is None:
            # Imported here: a run that shows no bar (not a terminal) never loads it.
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            columns = (TextColumn("{task.description:>9}"), BarColumn(), MofNCompleteColumn())
            self.bar = Progress(*columns, console=self.err, transient=True)
            self.task = self.bar.add_task("", total=None)
        if not self.started:
            self.bar.start()
            self.started = True
        changed = stage != self.bar.tasks[0].description
        self.bar.update(self.task, description=stage, completed=done, total=total)
        if changed:  # every stage is drawn, however short (the bar redraws 10 times a second)
            self.bar.refresh()

    def done_on_first(self, results: Iterator[FileResult]) -> Iterator[FileResult]:
        """Pass results through; the bar goes when the first arrives (the work is done by
        then: results come in a fixed order once every file is migrated)."""
        try:
            for result in results:
                self.stop()
                yield result
        finally:
            self.stop()

    def stop(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False
        self.wanted = False


def is_notebook(data: bytes) -> bool:
    """Whether stdin holds a Jupyter notebook (JSON with a `cells` list and `nbformat`),
    not Python: a notebook is never migrated as if it were a dict literal."""
    if not data.lstrip().startswith(b"{"):
        return False
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and isinstance(doc.get("cells"), list) and "nbformat" in doc


def write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (some embedders); best effort
        sys.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        buffer.write(data)
        buffer.flush()


_DIFF_STYLES = {"+": "green", "-": "red", "@": "cyan"}


def print_diff(diff: str, encoding: str, out: Console | LazyConsole) -> None:
    """A unified diff on stdout: coloured on a terminal (``out``), else the bytes that
    patch/git apply take."""
    if not diff:
        return
    if out.is_terminal and out.color_system is not None and not out.no_color:
        from rich.text import Text

        term = getattr(sys.stdout, "encoding", None) or "utf-8"
        for line in diff.splitlines():
            # A file name that is not valid in the terminal's encoding must not end the run.
            line = line.encode(term, "replace").decode(term)
            style = "bold" if line.startswith(("+++", "---")) else _DIFF_STYLES.get(line[:1])
            out.print(Text(line, style=style or ""), soft_wrap=True)
    else:
        # Bytes, so that the diff applies with patch/git apply: "\r" kept, file names as the
        # filesystem spells them, code in the file's own encoding (whatever stdout's is).
        write_stdout(diff_bytes(diff, encoding))


def diff_bytes(diff: str, encoding: str) -> bytes:
    lines = diff.splitlines(keepends=True)
    out = [line.encode(sys.getfilesystemencoding(), "surrogateescape") for line in lines[:2]]
    for line in lines[2:]:
        try:
            out.append(line.encode(encoding, "surrogateescape"))
        except (UnicodeEncodeError, LookupError):
            out.append(line.encode("utf-8", "backslashreplace"))
    return b"".join(out)
