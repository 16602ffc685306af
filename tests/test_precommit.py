"""The real `pre-commit` runs this repository's hooks on a scratch repository.

pre-commit builds its own environment with `pip install .` of a snapshot of this working
tree (libcst, typer and rich come from the package index), so this test takes a while.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from small_projects import MODEL, TASK

# pre-commit builds its own environment (pip install of this tree): not in `make check`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

TRAINER = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


def notebook() -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": ["!pip install tensorflow\n", *TRAINER.splitlines(keepends=True)],
        }
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1) + "\n"


pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def snapshot_of_this_tree(dest: Path) -> str:
    """Copy the working tree (tracked and untracked, not ignored) into a fresh repo; its sha."""
    files = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot")
    return git(dest, "rev-parse", "HEAD")


def run_pre_commit(
    repo: Path, home: Path, *, all_files: bool = True
) -> subprocess.CompletedProcess[str]:
    """`pre-commit run` in `repo` over every file, or over the staged ones (a commit's)."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [pre_commit, "run", *(["--all-files"] if all_files else []), "--color", "never"],
        cwd=repo,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A snapshot of this tree as the hooks' repository, its sha, and one PRE_COMMIT_HOME:
    pre-commit builds the hooks' environment (a pip install) once for the tests that run it,
    as it does once for a user's every repository."""
    root = tmp_path_factory.mktemp("pre-commit")
    repo = root / "hooks"
    repo.mkdir()
    return repo, snapshot_of_this_tree(repo), root / "home"


@pytest.mark.skipif(not Path(pre_commit).exists(), reason="pre-commit is not installed")
def test_pre_commit_migrates_then_passes(tmp_path: Path, hooks: tuple[Path, str, Path]) -> None:
    hooks_repo, sha, home = hooks

    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "trainer.py").write_text(TRAINER, encoding="utf-8")
    (repo / "explore.ipynb").write_text(notebook(), encoding="utf-8")
    (repo / "other.txt").write_text("tf.estimator.Estimator\n", encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks_repo}\n  rev: {sha}\n  hooks:\n  - id: est2tpu\n",
        encoding="utf-8",
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "estimator code")

    first = run_pre_commit(repo, home)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout, first.stdout
    trainer = (repo / "trainer.py").read_text(encoding="utf-8")
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in trainer
    assert "TPUEstimator(" in (repo / "explore.ipynb").read_text(encoding="utf-8")
    assert "!pip install tensorflow" in (repo / "explore.ipynb").read_text(encoding="utf-8")
    assert (repo / "other.txt").read_text(encoding="utf-8") == "tf.estimator.Estimator\n"

    second = run_pre_commit(repo, home)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout
    assert (repo / "trainer.py").read_text(encoding="utf-8") == trainer


@pytest.mark.skipif(not Path(pre_commit).exists(), reason="pre-commit is not installed")
def test_hook_manifest_is_valid() -> None:
    done = subprocess.run(
        [pre_commit, "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    for needle in ("id: est2tpu\n", "id: est2tpu-check\n", "types_or: [python, jupyter]"):
        assert needle in text
    assert text.count("require_serial: true") == 2


@pytest.mark.skipif(not Path(pre_commit).exists(), reason="pre-commit is not installed")
def test_check_hook_passes_a_commit_of_one_file_of_a_migrated_project(
    tmp_path: Path, hooks: tuple[Path, str, Path]
) -> None:
    hooks_repo, sha, home = hooks
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "model.py").write_text(MODEL, encoding="utf-8")
    (repo / "task.py").write_text(TASK, encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NO_COLOR": "1"}
    migrate = subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert migrate.returncode == 0, migrate.stderr
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks_repo}\n  rev: {sha}\n  hooks:\n  - id: est2tpu-check\n",
        encoding="utf-8",
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "migrated")
    # A commit that stages only task.py: the hook is given task.py alone.
    with (repo / "task.py").open("a", encoding="utf-8") as f:
        f.write("# trained for two steps\n")
    git(repo, "add", "task.py")
    done = run_pre_commit(repo, home, all_files=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout
    assert "could not be resolved" not in done.stdout
