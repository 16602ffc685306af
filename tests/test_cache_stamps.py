"""Files that passed the byte pre-filter are known by their stat in a warm run: read again
(their text is the result's), but neither pre-filtered nor hashed again until they change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from oracle import migrate_all_parsed

from est2tpu import api, runner
from est2tpu import cache as cache_module
from est2tpu.cache import Cache, stamp_of
from est2tpu.ftypes import FileResult

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "fixtures" / "projects" / "two_module_trainer"
OLD, NEW = '"prediction"', '"projection"'  # a key in model.py, on a line it rewrites


def facts(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [
        (str(r.path), r.status, r.old_text, r.new_text, r.findings, r.edits, r.error)
        for r in results
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    (root / "notes.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": null,'
        ' "source": ["import tensorflow as tf\\n", "config = tf.estimator.RunConfig()\\n"]}],'
        ' "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
    )
    return root


def run(root: Path, cache_dir: Path) -> tuple[list[FileResult], Cache]:
    cache = Cache(cache_dir, "settings", [root])
    return list(api.migrate_paths([root], cache=cache, jobs=1)), cache


def rewrite_keeping_size_and_mtime(path: Path, *, replace: bool) -> None:
    """Change a file's bytes, not its size; put its mtime back. In place, or as an editor
    saves (a new file renamed over it: another inode)."""
    before = path.stat()
    text = path.read_text().replace(OLD, NEW)
    if replace:
        other = path.with_name(path.name + ".new")
        other.write_text(text)
        os.replace(other, path)
    else:
        path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


@pytest.mark.parametrize("replace", [False, True], ids=["in_place", "replaced"])
def test_a_passed_file_is_hashed_again_only_once_it_changes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replace: bool
) -> None:
    # Files written just now are trusted by their stat at once (else whether a run records
    # their stat would depend on how long the test took).
    monkeypatch.setattr(cache_module, "RACY_SECONDS", 0.0)
    hashed: list[bytes] = []
    filtered: list[bytes] = []
    digest, may_match = runner.digest, runner.may_match

    def hash_spy(*parts: bytes | str) -> str:
        hashed.extend(p for p in parts if isinstance(p, bytes))
        return digest(*parts)

    def filter_spy(data: bytes, target: object = None) -> bool:
        filtered.append(data)
        return may_match(data, target)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "digest", hash_spy)
    monkeypatch.setattr(runner, "may_match", filter_spy)
    model = project / "trainer" / "model.py"
    notebook = project / "notes.ipynb"
    cold, cache = run(project, tmp_path / "c")
    passed = cache.passed()  # what the run read from disk: nothing yet
    assert not passed
    assert model.read_bytes() in hashed and notebook.read_bytes() in hashed
    hashed.clear()
    filtered.clear()

    warm, cache = run(project, tmp_path / "c")
    assert facts(warm) == facts(cold)
    assert hashed == []  # neither the modules nor the notebook
    assert model.read_bytes() not in filtered and notebook.read_bytes() not in filtered
    assert {str(model), str(notebook)} <= set(cache.passed())

    rewrite_keeping_size_and_mtime(model, replace=replace)
    changed, _ = run(project, tmp_path / "c")
    assert hashed == [model.read_bytes()]
    assert facts(changed) == facts(list(migrate_all_parsed([project])))
    assert NEW in next(r.new_text or "" for r in changed if r.path == model)


def test_a_file_written_within_the_racy_window_is_not_remembered(
    project: Path, tmp_path: Path
) -> None:
    # Just written: a rewrite within the same tick of its timestamps would not move them.
    _, cache = run(project, tmp_path / "c")
    assert str(project / "trainer" / "model.py") not in cache.passed()
    reloaded = Cache(tmp_path / "c", "settings", [project])
    assert str(project / "trainer" / "model.py") not in reloaded.passed()


def test_a_stamp_is_trusted_only_when_older_than_the_racy_window(tmp_path: Path) -> None:
    st = (tmp_path / "f.py").write_text("x = 1\n") and os.stat(tmp_path / "f.py")
    changed = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    assert stamp_of(st, now=changed + cache_module.RACY_SECONDS / 2) is None
    assert stamp_of(st, now=changed) is None
    stamp = stamp_of(st, now=changed + cache_module.RACY_SECONDS + 0.01)
    assert stamp == f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


# The CLI in a fresh interpreter, with stamps trusted at once (as above).
PROGRAM = """
from est2tpu import cache
cache.RACY_SECONDS = 0.0
from est2tpu.cli import main
main()
"""


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("replace", [False, True], ids=["in_place", "replaced"])
def test_the_cli_sees_a_same_size_edit_of_a_passed_file(
    project: Path, tmp_path: Path, replace: bool
) -> None:
    args = ["check", "--diff", "-f", "json", str(project)]
    cached = [*args, "--cache-dir", str(tmp_path / "c")]
    cold, warm = cli(*cached), cli(*cached)
    assert cold.returncode == warm.returncode == 1, cold.stderr
    assert warm.stdout == cold.stdout and OLD in diff_of(cold, "model.py")
    rewrite_keeping_size_and_mtime(project / "trainer" / "model.py", replace=replace)
    edited, fresh = cli(*cached), cli(*args, "--no-cache")
    assert edited.returncode == fresh.returncode == 1
    assert edited.stdout == fresh.stdout != cold.stdout
    assert NEW in diff_of(edited, "model.py")


def diff_of(run: subprocess.CompletedProcess[str], name: str) -> str:
    """The diff a JSON report shows of the file called `name`."""
    files = json.loads(run.stdout)["files"]
    return str(next(f["diff"] for f in files if Path(f["path"]).name == name))


def test_a_run_without_a_cache_hashes_no_module(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed: list[bytes] = []
    digest = runner.digest

    def hash_spy(*parts: bytes | str) -> str:
        hashed.extend(p for p in parts if isinstance(p, bytes))
        return digest(*parts)

    monkeypatch.setattr(runner, "digest", hash_spy)
    plain = list(api.migrate_paths([project], jobs=1))
    assert hashed == [(project / "notes.ipynb").read_bytes()]  # a notebook's cells are keyed
    cached, _ = run(project, tmp_path / "c")
    assert facts(plain) == facts(cached) == facts(list(migrate_all_parsed([project])))
