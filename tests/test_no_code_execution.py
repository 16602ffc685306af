"""The tool never imports or runs user code: every user file would leave a marker if it did.

The project's modules, its package `__init__.py`, a `conftest.py`, a `setup.py` and a
notebook each write a marker file when executed. The real CLI (a subprocess, so that an
import would really happen in the tool's own process) migrates the project; no marker may
appear, and the project's modules are not even in `sys.modules` of an in-process run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from est2tpu import api
from est2tpu.ftypes import Status

MARKERS = "MARKER_DIR"


def side_effect(name: str) -> str:
    return (
        "import os as _os, pathlib as _pathlib\n"
        f"_pathlib.Path(_os.environ.get({MARKERS!r}, '/tmp'), {name!r}).write_text('ran')\n"
    )


MODEL = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)
"""

TASK = """\
import tensorflow as tf

from trainer.model import model_fn

est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


def make_project(root: Path) -> None:
    (root / "trainer").mkdir(parents=True)
    files = {
        "trainer/__init__.py": side_effect("init"),
        "trainer/model.py": side_effect("model") + MODEL,
        "trainer/task.py": side_effect("task") + TASK,
        "conftest.py": side_effect("conftest") + "# tf.estimator.Estimator\n",
        "setup.py": side_effect("setup") + "from setuptools import setup\nsetup(name='x')\n",
        "sitecustomize.py": side_effect("sitecustomize"),
    }
    for rel, text in files.items():
        (root / rel).write_text(text)
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": (side_effect("notebook") + MODEL).splitlines(keepends=True),
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "explore.ipynb").write_text(json.dumps(nb, indent=1))


def test_cli_subprocess_runs_no_user_code(tmp_path: Path) -> None:
    project = tmp_path / "project"
    markers = tmp_path / "markers"
    markers.mkdir()
    make_project(project)
    env = {**os.environ, MARKERS: str(markers), "NO_COLOR": "1"}
    env.pop("PYTHONPATH", None)
    # The installed console script, run from inside the project: an import of `trainer`
    # by name would find the user's package. (`python -m` would put the project first on
    # sys.path, which is Python's doing, not the tool's.)
    script = Path(sys.executable).with_name("est2tpu")
    for command in (["check", "."], ["migrate", "."]):
        proc = subprocess.run(
            [str(script), *command],
            check=False,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode in (0, 1, 2), proc.stderr
    migrated = (project / "trainer" / "task.py").read_text()
    assert "TPUEstimator(" in migrated
    assert sorted(p.name for p in markers.iterdir()) == []


def test_sitecustomize_control_proves_the_marker_works(tmp_path: Path) -> None:
    """The control: the same marker code does run when Python really imports the file."""
    markers = tmp_path / "markers"
    markers.mkdir()
    make_project(tmp_path / "project")
    env = {**os.environ, MARKERS: str(markers), "PYTHONPATH": str(tmp_path / "project")}
    subprocess.run([sys.executable, "-c", "import trainer.model"], env=env, check=False)
    assert {"init", "model", "sitecustomize"} <= {p.name for p in markers.iterdir()}


def test_api_does_not_import_project_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    markers = tmp_path / "markers"
    markers.mkdir()
    make_project(project)
    monkeypatch.setenv(MARKERS, str(markers))
    monkeypatch.syspath_prepend(str(project))
    before = set(sys.modules)
    results = {r.path.name: r for r in api.migrate_paths([project])}
    assert results["task.py"].status is Status.CHANGED, results["task.py"].error
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in {"trainer", "conftest"}}
    assert sorted(p.name for p in markers.iterdir()) == []
