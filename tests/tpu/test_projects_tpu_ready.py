"""Every end-to-end project of ``fixtures/projects``, migrated, under `verify --tpu`: TPU-ready,
or the TPU1xx findings below, each for a reason the migration leaves to its user.

One `verify --tpu` run checks them all (TensorFlow is imported once, not once per project):
`run_all.py` runs each project's entry in turn as its own process would (`__main__`, its
arguments, the project's folder as working directory and first on `sys.path`), drops the
folder's modules after it (the projects reuse `train`, `trainer` and `model`) and goes on
when the check ends a program. The tree migrates each project exactly as the project's folder
migrates alone, and each project records that it ran.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from est2tpu import api
from tests.e2e.harness import PROJECTS, copy_project
from tests.tpu.test_verify_tpu import run_verify_tpu

# project -> the findings its migrated code has on a TPU, and why the migration leaves them
NOT_READY: dict[str, set[str]] = {
    # one input function serves predict and train/eval: the migration reports TPU005 and
    # leaves `.batch(batch_size)` without drop_remainder
    "compat_v1_spelling": {"TPU103"},
    # tf.summary.image in model_fn: the migration reports TPU009 and does not move it
    "summaries_beside_images": {"TPU105"},
    # tf.compat.v1.metrics.accuracy computed in TRAIN mode for a LoggingTensorHook: the
    # migration reports TPU009 and leaves it on the device
    "metric_in_each_mode_branch": {"TPU110"},
    # canned heads write summaries and compute string class names inside model_fn; these
    # projects are migrated for the tf2 target
    "premade_dnn_classifier": {"TPU105", "TPU107"},
    "premade_linear_regressor": {"TPU100", "TPU105", "TPU107"},
}

# `run_all.py RAN NAME...`: each project's entry, in turn, in this one process; RAN (outside
# the tree verify migrates and runs) gets the name of each project that ran.
_RUN_ALL = """\
import json
import os
import runpy
import sys

ran, names = sys.argv[1], sys.argv[2:]
root = os.path.dirname(os.path.abspath(__file__))
entries = json.loads(open(os.path.join(root, "entries.json")).read())
for name in names:
    path = os.path.join(root, name)
    entry = entries[name]
    args = ["--model_dir", "model", "--results", "results.json"]
    sys.path.insert(0, path)
    os.chdir(path)
    try:
        if entry[0] == "-m":
            sys.argv = [entry[1], *args]
            runpy.run_module(entry[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [entry[0], *args]
            runpy.run_path(entry[0], run_name="__main__")
    except SystemExit:
        pass  # the check ended the program: the next one runs
    os.chdir(root)
    sys.path.remove(path)
    for module, loaded in list(sys.modules.items()):
        if (getattr(loaded, "__file__", None) or "").startswith(path + os.sep):
            del sys.modules[module]
    with open(ran, "a") as f:
        f.write(name + "\\n")
"""


@pytest.fixture(scope="module")
def shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], list[str]]:
    """Every project under one `verify --tpu`; what it printed, and the projects that ran."""
    root = tmp_path_factory.mktemp("projects")
    project = root / "project"
    project.mkdir()
    for name in PROJECTS:
        copy_project(name, project / name)
    entries = {name: list(p.entry) for name, p in PROJECTS.items()}
    (project / "entries.json").write_text(json.dumps(entries), encoding="utf-8")
    (project / "run_all.py").write_text(_RUN_ALL, encoding="utf-8")
    ran = root / "ran.txt"
    done = run_verify_tpu(project, ["-f", "json"], ["run_all.py", str(ran), *sorted(PROJECTS)])
    return project, done, ran.read_text().split() if ran.is_file() else []


@pytest.fixture(scope="module")
def migrated_in_the_tree(
    shared_run: tuple[Path, subprocess.CompletedProcess[str], list[str]],
) -> dict[Path, str | None]:
    return {r.path: r.new_text for r in api.migrate_paths([shared_run[0]], jobs=1)}


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_migrated_project_under_verify_tpu(
    name: str,
    shared_run: tuple[Path, subprocess.CompletedProcess[str], list[str]],
    migrated_in_the_tree: dict[Path, str | None],
) -> None:
    project, done, ran = shared_run
    folder = project / name
    alone = {r.path: r.new_text for r in api.migrate_paths([folder], jobs=1)}
    assert alone == {p: t for p, t in migrated_in_the_tree.items() if folder in p.parents}
    assert name in ran, done.stderr[-2000:]
    found = {
        f["rule"] for f in json.loads(done.stdout)["findings"] if folder in Path(f["path"]).parents
    }
    expected = NOT_READY.get(name, set())
    assert found == expected, done.stderr[-2000:]
    assert done.returncode == (1 if NOT_READY else 0), done.stderr[-2000:]
