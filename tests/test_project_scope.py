"""Which files a run reads and reports: the config's excludes and per-file-ignores matched
from the pyproject.toml's directory in git's pattern language, and a file named alone judged
with the project around it. Real subprocess runs of the CLI over real files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from small_projects import MODEL, TASK

GOOD = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


def est2tpu(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(cwd.parent / "xdg")},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def migrated(path: Path) -> bool:
    return "TPUEstimator(" in path.read_text(encoding="utf-8")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_config_exclude_is_matched_from_the_pyprojects_directory(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "pyproject.toml", '[tool.est2tpu]\nexclude = ["src/legacy/"]\n')
    old = write(root / "src" / "legacy" / "old.py", GOOD)
    new = write(root / "src" / "new.py", GOOD)
    done = est2tpu(root / "src", "migrate", ".")
    assert done.returncode == 0, done.stderr
    assert not migrated(old)
    assert migrated(new)
    # extend-exclude too, and from a directory above the project.
    write(root / "pyproject.toml", '[tool.est2tpu]\nextend-exclude = ["src/legacy/"]\n')
    assert est2tpu(tmp_path, "migrate", "repo/src").returncode == 0
    assert not migrated(old)


def test_negated_exclude_takes_back_a_file_named_explicitly(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "pyproject.toml", '[tool.est2tpu]\nexclude = ["exp/*", "!exp/keep.py"]\n')
    write(root / "exp" / "keep.py", GOOD)
    write(root / "exp" / "drop.py", GOOD)
    walked = est2tpu(root, "check", ".")
    named = est2tpu(root, "check", "exp/keep.py", "exp/drop.py")  # as pre-commit calls it
    assert walked.returncode == named.returncode == 1
    assert "would migrate exp/keep.py" in walked.stderr
    assert "would migrate exp/keep.py" in named.stderr
    assert "drop.py" not in walked.stderr + named.stderr


def test_file_below_an_excluded_directory_stays_excluded_whatever_a_negation_says(
    tmp_path: Path,
) -> None:
    # git: "It is not possible to re-include a file if a parent directory is excluded."
    root = tmp_path / "repo"
    write(root / "pyproject.toml", '[tool.est2tpu]\nexclude = ["exp/", "!exp/keep.py"]\n')
    write(root / "exp" / "keep.py", GOOD)
    assert est2tpu(root, "check", ".").returncode == 0
    assert est2tpu(root, "check", "exp/keep.py").returncode == 0


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("**/exp_*.py", "exp_a.py"),
        ("**/exp_*.py", "deep/er/exp_a.py"),
        ("exp_*.py", "deep/exp_a.py"),
        ("/exp_*.py", "exp_a.py"),
        ("tests/", "tests/unit/t.py"),
        ("tests/*", "tests/unit/t.py"),
    ],
)
def test_per_file_ignores_match_as_exclude_does(tmp_path: Path, pattern: str, path: str) -> None:
    root = tmp_path / "repo"
    write(
        root / "pyproject.toml",
        f'[tool.est2tpu.per-file-ignores]\n"{pattern}" = ["TPU"]\n',
    )
    target = write(root / path, GOOD)
    done = est2tpu(root, "migrate", "./" + path)
    assert done.returncode == 0, done.stderr
    assert not migrated(target)
    # The same pattern as an exclude drops the same file.
    write(root / "pyproject.toml", f'[tool.est2tpu]\nexclude = ["{pattern}"]\n')
    assert est2tpu(root, "check", ".").returncode == 0


def migrated_project(root: Path) -> None:
    write(root / "model.py", MODEL)
    write(root / "task.py", TASK)
    done = est2tpu(root, "migrate", ".")
    assert done.returncode == 0, done.stderr


def test_file_named_alone_is_judged_with_the_project_around_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    migrated_project(root)
    (root / ".git").mkdir()  # the project is the git work tree
    before = {p.name: p.read_bytes() for p in root.glob("*.py")}
    for args in (["check", "task.py"], ["migrate", "task.py"], ["check", "model.py"]):
        done = est2tpu(root, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert "could not be resolved" not in done.stderr
    assert {p.name: p.read_bytes() for p in root.glob("*.py")} == before


def test_file_named_alone_from_another_directory_finds_its_project(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    migrated_project(root / "trainer")
    write(root / "trainer" / "sub" / "deep.py", GOOD)
    done = est2tpu(tmp_path, "check", "-v", "repo/trainer/task.py")
    assert done.returncode == 0, done.stderr
    # No git, no config: the files beside it are its project; no directory is walked.
    assert "project: repo/trainer/model.py" in done.stderr
    assert "deep.py" not in done.stderr


def test_named_file_whose_migration_needs_an_unnamed_one_is_not_written(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "model.py", MODEL)
    task = write(root / "task.py", TASK)
    done = est2tpu(root, "migrate", "task.py")
    assert done.returncode == 2, done.stderr
    assert "task.py: error: not written: its migration goes with model.py" in done.stderr
    assert task.read_text(encoding="utf-8") == TASK
    assert "model.py" not in done.stderr.replace("goes with model.py", "")  # not reported
    both = est2tpu(root, "migrate", "task.py", "model.py")
    assert both.returncode == 0, both.stderr
    assert migrated(task)
