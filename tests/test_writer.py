"""Atomic writes: content, mode, symlinks, no-op writes, and cleanup on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from est2tpu.writer import write_atomic


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "est2tpu-tmp" in p.name)


def test_replaces_content(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_bytes(b"old\r\n")
    assert write_atomic(f, b"new\r\n") is True
    assert f.read_bytes() == b"new\r\n"
    assert leftovers(tmp_path) == []


def test_keeps_file_mode(tmp_path: Path) -> None:
    f = tmp_path / "script.py"
    f.write_bytes(b"old\n")
    f.chmod(0o751)
    write_atomic(f, b"new\n")
    assert stat.S_IMODE(f.stat().st_mode) == 0o751


def test_replaces_the_file_not_writes_into_it(tmp_path: Path) -> None:
    # A reader holding the old file keeps seeing the old bytes: proof of rename, not rewrite.
    f = tmp_path / "a.py"
    f.write_bytes(b"old\n")
    with f.open("rb") as held:
        write_atomic(f, b"new\n")
        assert held.read() == b"old\n"
    assert f.read_bytes() == b"new\n"


def test_unchanged_content_is_not_written(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_bytes(b"same\n")
    os.utime(f, ns=(1_000_000_000, 1_000_000_000))
    inode = f.stat().st_ino
    assert write_atomic(f, b"same\n") is False
    assert f.stat().st_mtime_ns == 1_000_000_000
    assert f.stat().st_ino == inode


def test_symlink_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_atomic(link, b"new\n")
    assert link.is_symlink()
    assert real.read_bytes() == b"new\n"


def test_new_file_is_created(tmp_path: Path) -> None:
    f = tmp_path / "new.py"
    assert write_atomic(f, b"x\n") is True
    assert f.read_bytes() == b"x\n"


def test_failed_replace_removes_temp_file_and_keeps_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "a.py"
    f.write_bytes(b"old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("est2tpu.writer.os.replace", boom)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(f, b"new\n")
    assert f.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


def test_failed_fsync_removes_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "a.py"
    f.write_bytes(b"old\n")

    def boom(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("est2tpu.writer.os.fsync", boom)
    with pytest.raises(OSError, match="Input/output"):
        write_atomic(f, b"new\n")
    assert f.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == []


def test_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        write_atomic(tmp_path / "nope" / "a.py", b"x\n")
