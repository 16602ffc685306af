"""A file no rule acts on is proven to compile by a `.pyc` the import system would use
(`pipeline._compiled_by_import`), and only by such a one: a stale or foreign `.pyc` beside a
file that no longer compiles must not hide its syntax error."""

from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

from est2tpu import api, pipeline
from est2tpu.ftypes import Status

# Passes the byte pre-filter (`input_fn`), and no rule acts on it.
GOOD = "def make_input_fn():\n    return 1\n"
# Same length as GOOD: a `.pyc` of GOOD matches it by size.
BROKEN = "def make_input_fn():\n    return (\n"
assert len(BROKEN) == len(GOOD)


def _compiled(path: Path) -> Path:
    pyc = Path(importlib.util.cache_from_source(str(path)))
    py_compile.compile(str(path), cfile=str(pyc), doraise=True)
    return pyc


def _status(path: Path) -> tuple[Status, str | None]:
    [result] = api.migrate_paths([path.parent], jobs=1)
    return result.status, result.error


def test_a_matching_pyc_proves_the_file_compiles(tmp_path: Path) -> None:
    src = tmp_path / "inputs.py"
    src.write_text(GOOD)
    assert not pipeline._compiled_by_import(src)  # no .pyc: compiled as before
    _compiled(src)
    assert pipeline._compiled_by_import(src)
    assert _status(src) == (Status.UNCHANGED, None)


def test_a_stale_pyc_does_not_hide_a_syntax_error(tmp_path: Path) -> None:
    src = tmp_path / "inputs.py"
    src.write_text(GOOD)
    stamp = os.stat(src).st_mtime
    _compiled(src)
    src.write_text(BROKEN)  # same size, another mtime
    os.utime(src, (stamp + 5, stamp + 5))
    assert not pipeline._compiled_by_import(src)
    status, error = _status(src)
    assert status is Status.FAILED
    assert error is not None and "cannot parse" in error


def test_a_pyc_of_another_python_or_hash_checked_is_not_trusted(tmp_path: Path) -> None:
    src = tmp_path / "inputs.py"
    src.write_text(GOOD)
    pyc = _compiled(src)
    data = pyc.read_bytes()
    pyc.write_bytes(b"\x00\x00" + data[2:])  # another magic number
    assert not pipeline._compiled_by_import(src)
    pyc.write_bytes(data[:4] + b"\x03\x00\x00\x00" + data[8:])  # hash-checked flags
    assert not pipeline._compiled_by_import(src)
    pyc.write_bytes(data)
    assert pipeline._compiled_by_import(src)
