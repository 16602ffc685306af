"""Generated Estimator programs (`tests/gen_programs.py`), migrated, under `verify --tpu`: one
per import spelling and module layout, the other dimensions rotating.

One `verify --tpu` run checks them all (TensorFlow is imported once, not once per program):
each program is in a folder of its own, and `run_all.py` runs each one's `main()` in turn
with its folder first on `sys.path`, dropping the folder's modules after it (the layouts
reuse the module names `train`, `task`, `model` and `trainer`). The tree migrates each
program exactly as the program's folder migrates alone, and each program records that it ran.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from est2tpu import api
from tests.gen_programs import BATCHES, IMPORTS, METRICS, SPLITS, Program
from tests.tpu.test_verify_tpu import run_verify_tpu

_ENTRY = {"one_module": "train", "model_module": "task", "package": "trainer.task"}

# import spelling -> the findings its migrated programs have on a TPU (none)
NOT_READY: dict[str, set[str]] = {}

# `run_all.py RAN FOLDER:MODULE...`: each program's main(), in turn, in this one process; RAN
# (outside the tree verify migrates and runs) gets the folder of each program that ran.
_RUN_ALL = """\
import importlib
import os
import sys

ran, entries = sys.argv[1], sys.argv[2:]
root = os.path.dirname(os.path.abspath(__file__))
for entry in entries:
    folder, module = entry.split(":")
    path = os.path.join(root, folder)
    sys.path.insert(0, path)
    importlib.import_module(module).main(os.path.join(path, "model"))
    sys.path.remove(path)
    for name, loaded in list(sys.modules.items()):
        if (getattr(loaded, "__file__", None) or "").startswith(path + os.sep):
            del sys.modules[name]
    with open(ran, "a") as f:
        f.write(folder + "\\n")
"""


def _programs() -> list[Program]:
    out = []
    for i, (imports, split) in enumerate(
        (imports, split) for imports in sorted(IMPORTS) for split in SPLITS
    ):
        out.append(Program(imports, METRICS[i % 4], BATCHES[i % 4], split, (8, 32, 128)[i % 3]))
    return out


PROGRAMS = _programs()


def _folder(program: Program) -> str:
    return f"{program.imports}-{program.split}"


@pytest.fixture(scope="module")
def shared_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], list[str]]:
    """Every program under one `verify --tpu`; what it printed, and the folders that ran."""
    root = tmp_path_factory.mktemp("generated")
    project = root / "project"
    entries = []
    for program in PROGRAMS:
        for rel, text in program.files().items():
            path = project / _folder(program) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        entries.append(f"{_folder(program)}:{_ENTRY[program.split]}")
    (project / "run_all.py").write_text(_RUN_ALL, encoding="utf-8")
    ran = root / "ran.txt"
    done = run_verify_tpu(project, ["-f", "json"], ["run_all.py", str(ran), *entries])
    return project, done, ran.read_text().split() if ran.is_file() else []


@pytest.fixture(scope="module")
def migrated_in_the_tree(
    shared_run: tuple[Path, subprocess.CompletedProcess[str], list[str]],
) -> dict[Path, str | None]:
    return {r.path: r.new_text for r in api.migrate_paths([shared_run[0]], jobs=1)}


@pytest.mark.tf
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.imports}-{p.split}")
def test_generated_program_under_verify_tpu(
    program: Program,
    shared_run: tuple[Path, subprocess.CompletedProcess[str], list[str]],
    migrated_in_the_tree: dict[Path, str | None],
) -> None:
    project, done, ran = shared_run
    folder = project / _folder(program)
    alone = {r.path: r.new_text for r in api.migrate_paths([folder], jobs=1)}
    assert any(text and "TPUEstimator(" in text for text in alone.values()), alone
    assert alone == {p: t for p, t in migrated_in_the_tree.items() if folder in p.parents}
    assert _folder(program) in ran, done.stderr[-2000:]
    found = {
        f["rule"] for f in json.loads(done.stdout)["findings"] if folder in Path(f["path"]).parents
    }
    expected = NOT_READY.get(program.imports, set())
    assert found == expected, done.stderr[-2000:]
    every = set().union(*NOT_READY.values()) if NOT_READY else set()
    assert done.returncode == (1 if every else 0), done.stderr[-2000:]
