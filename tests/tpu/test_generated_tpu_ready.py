"""Generated Estimator programs (`tests/gen_programs.py`), migrated, under `verify --tpu`: one
per import spelling and module layout, the other dimensions rotating."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gen_programs import BATCHES, IMPORTS, METRICS, SPLITS, Program
from tests.tpu.test_verify_tpu import run_verify_tpu

_ENTRY = {"one_module": "train", "model_module": "task", "package": "trainer.task"}

# import spelling -> the findings its migrated programs have on a TPU (none)
NOT_READY: dict[str, set[str]] = {}


def _programs() -> list[Program]:
    out = []
    for i, (imports, split) in enumerate(
        (imports, split) for imports in sorted(IMPORTS) for split in SPLITS
    ):
        out.append(Program(imports, METRICS[i % 4], BATCHES[i % 4], split, (8, 32, 128)[i % 3]))
    return out


@pytest.mark.tf
@pytest.mark.parametrize("program", _programs(), ids=lambda p: f"{p.imports}-{p.split}")
def test_generated_program_under_verify_tpu(tmp_path: Path, program: Program) -> None:
    project = tmp_path / "project"
    for rel, text in program.files().items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    module = _ENTRY[program.split]
    done = run_verify_tpu(project, ["-f", "json"], ["-c", f"import {module} as m; m.main('model')"])
    found = {f["rule"] for f in json.loads(done.stdout)["findings"]}
    expected = NOT_READY.get(program.imports, set())
    assert found == expected, done.stderr[-2000:]
    assert done.returncode == (1 if expected else 0), done.stderr[-2000:]
