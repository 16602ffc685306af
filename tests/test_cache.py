"""The results cache: reused only when nothing that decided a result changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from oracle import migrate_all_parsed
from typer.testing import CliRunner

from est2tpu import api, engine
from est2tpu.cache import Cache
from est2tpu.cli import app
from est2tpu.ftypes import FileResult, Target

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "fixtures" / "projects" / "two_module_trainer"


def facts(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [
        (str(r.path), r.status, r.old_text, r.new_text, r.findings, r.edits, r.error)
        for r in results
    ]


def run(root: Path, cache_dir: Path, **kwargs: object) -> tuple[list[FileResult], Cache]:
    cache = Cache(cache_dir, json.dumps(sorted((k, str(v)) for k, v in kwargs.items())), [root])
    results = list(api.migrate_paths([root], cache=cache, jobs=1, **kwargs))  # type: ignore[arg-type]
    return results, cache


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(PROJECT, root)
    (root / "broken.py").write_text("import tensorflow as tf\nest = tf.estimator.Estimator(\n")
    return root


def test_warm_run_parses_nothing_and_gives_the_same_results(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold, cache = run(project, tmp_path / "c")
    assert cache.hits == 0
    assert any(r.new_text != r.old_text for r in cold)

    def no_parse(text: str) -> None:
        raise AssertionError("a warm run parsed a file")

    monkeypatch.setattr(engine, "parse", no_parse)
    warm, cache = run(project, tmp_path / "c")
    assert cache.misses == 0 and cache.hits > 0
    assert facts(warm) == facts(cold)
    monkeypatch.undo()
    assert facts(warm) == facts(list(migrate_all_parsed([project])))


def test_an_edit_in_another_module_invalidates_this_one(project: Path, tmp_path: Path) -> None:
    # task.py builds the Estimator from model.py's model_fn: model.py's migration depends
    # on task.py. Making task.py build nothing must change model.py's result.
    run(project, tmp_path / "c")
    task = next(project.rglob("task.py"))
    task.write_text(task.read_text().replace("Estimator(", "NotAnEstimator("))
    warm, _ = run(project, tmp_path / "c")
    assert facts(warm) == facts(list(migrate_all_parsed([project])))


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"target": Target.TF2}, id="target"),
        pytest.param({"select": ["TPU001"]}, id="select"),
        # the two other settings in the full suite only (make check keeps target and select)
        pytest.param({"ignore": ["TPU006"]}, id="ignore", marks=pytest.mark.slow),
        pytest.param({"use_runtime": False}, id="no_runtime", marks=pytest.mark.slow),
    ],
)
def test_settings_are_part_of_the_key(
    project: Path, tmp_path: Path, kwargs: dict[str, object]
) -> None:
    # `run` keys the cache by its settings too; the per-file keys must not mix them up.
    run(project, tmp_path / "c")
    results, _ = run(project, tmp_path / "c", **kwargs)
    assert facts(results) == facts(list(migrate_all_parsed([project], **kwargs)))  # type: ignore[arg-type]


def test_tool_code_is_part_of_the_key(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, first = run(project, tmp_path / "c")
    from est2tpu import cache as cache_module

    monkeypatch.setattr(cache_module, "tool_fingerprint", lambda: "another version")
    _, second = run(project, tmp_path / "c")
    assert first.file != second.file
    assert second.hits == 0


def test_a_corrupt_cache_is_ignored(project: Path, tmp_path: Path) -> None:
    cold, cache = run(project, tmp_path / "c")
    cache.file.write_text('{"format": 1, "files": {"x": 1}, "index": [')
    again, cache = run(project, tmp_path / "c")
    assert cache.hits == 0
    assert facts(again) == facts(cold)
    data = json.loads(cache.file.read_text())
    entry = next(iter(data["files"].values()))
    entry["findings"] = "not a list"
    for key in data["files"]:
        data["files"][key] = entry
    cache.file.write_text(json.dumps(data))
    third, _ = run(project, tmp_path / "c")
    assert facts(third) == facts(cold)


def test_cli_no_cache_writes_nothing_and_cache_dir_is_used(project: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    cache_dir = tmp_path / "cache"
    first = runner.invoke(
        app, ["check", "--quiet", "--no-cache", "--cache-dir", str(cache_dir), str(project)]
    )
    assert not cache_dir.exists()
    second = runner.invoke(app, ["check", "--quiet", "--cache-dir", str(cache_dir), str(project)])
    third = runner.invoke(app, ["check", "--quiet", "--cache-dir", str(cache_dir), str(project)])
    assert list(cache_dir.glob("results-*.json"))
    assert first.exit_code == second.exit_code == third.exit_code == 2  # broken.py
    assert first.output == second.output == third.output


def test_a_warm_cli_run_never_loads_libcst(project: Path, tmp_path: Path) -> None:
    """The pre-commit hook's common case: every file answered by the cache, no parser."""
    (project / "broken.py").unlink()
    cache_dir = tmp_path / "cache"
    program = (
        "import sys\n"
        "from est2tpu.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print('LIBCST', 'libcst' in sys.modules, file=sys.stderr)\n"
    )
    argv = ["check", "--quiet", "--cache-dir", str(cache_dir), str(project)]
    runs = [
        subprocess.run(
            [sys.executable, "-c", program, *argv], capture_output=True, text=True, check=False
        )
        for _ in range(2)
    ]
    assert runs[0].returncode == runs[1].returncode == 1, runs[0].stderr  # changes pending
    assert "LIBCST True" in runs[0].stderr  # the cold run parsed
    assert "LIBCST False" in runs[1].stderr  # the warm one did not need the parser


def test_a_skipped_file_is_not_read_again_until_it_changes(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from est2tpu import cache as cache_module
    from est2tpu import runner

    plain = project / "plain.py"
    plain.write_text("x = 12345\n")  # nothing the byte pre-filter looks for
    # Just written, so racy: its stat is not trusted yet and it is read every time.
    assert cache_module.stat_stamp(plain) is None
    monkeypatch.setattr(cache_module, "RACY_SECONDS", 0.0)
    scanned: list[Path] = []
    scan_one = runner.scan_one

    def spy(state: runner.RunState, path: Path) -> object:
        scanned.append(path)
        return scan_one(state, path)

    monkeypatch.setattr(runner, "scan_one", spy)
    cold, _ = run(project, tmp_path / "c")
    assert plain in scanned
    scanned.clear()
    warm, _ = run(project, tmp_path / "c")
    assert plain not in scanned and scanned  # the other files are read as before
    assert facts(warm) == facts(cold)
    # Same size and mtime, other bytes: the ctime (and the next run) sees the change.
    before = plain.stat()
    plain.write_text("model_fn\n\n")
    assert plain.stat().st_size == before.st_size
    os.utime(plain, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed, _ = run(project, tmp_path / "c")
    assert plain in scanned
    assert facts(changed) == facts(list(migrate_all_parsed([project])))
    assert [r.status for r in changed if r.path == plain] != [
        r.status for r in cold if r.path == plain
    ]


def test_a_warm_run_over_an_unchanged_tree_does_not_rewrite_the_cache(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from est2tpu import cache as cache_module

    # Files written just now are trusted by their stat at once (else whether a run records
    # their stat would depend on how long the test took).
    monkeypatch.setattr(cache_module, "RACY_SECONDS", 0.0)
    _, cache = run(project, tmp_path / "c")
    written = cache.file.stat()
    run(project, tmp_path / "c")
    again = cache.file.stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    (project / "new.py").write_text("import tensorflow as tf\nx = tf.estimator.RunConfig()\n")
    run(project, tmp_path / "c")
    assert cache.file.stat().st_ino != written.st_ino  # replaced (written atomically)
