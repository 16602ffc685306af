"""On CPU a migrated trainer reads exactly the original's examples, in the same order.

``programs/shuffled_stretches.py`` is a train_and_evaluate trainer over 150
examples in batches of 32 (not a multiple: each epoch ends in a batch of 22),
reshuffled with a seed each epoch, evaluated with a partial last batch at every
checkpoint.  Migrated by the tool and run on CPU (TPUEstimator with
use_tpu=False), its per-step training losses, every evaluation, the final
metrics and the global steps are EQUAL to the original's:

- over three checkpoint stretches of a repeated pipeline (``tpu_runtime.train_and_evaluate``
  must not restart the input at each stretch);
- with ``max_steps=None`` over a finite input: one pass, then the final
  evaluation, within a timeout (the former loop never ended);
- TPU005's ``drop_remainder`` keeps the partial batches off TPU (the eval
  metric ``count``, the mean batch size, is 150/5 = 30, not 32).

The same program with the TPU loop, ``tpu_runtime.loop.train_in_stretches``,
forced on CPU: its input continues across stretches (iterator checkpoints), so
its training and evaluations are equal too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from est2tpu.api import migrate_source

# One worker runs both tests: they share the module's six TensorFlow runs (`runs`).
pytestmark = [pytest.mark.tf, pytest.mark.xdist_group("e2e-runtime-semantics")]

PROGRAM = Path(__file__).with_name("programs") / "shuffled_stretches.py"
# A healthy run takes 5-20 s on a loaded 2-core machine; the former loop never ended.
TIMEOUT_S = 240


def _variants(tmp: Path) -> dict[str, Path]:
    original = tmp / "original.py"
    shutil.copy(PROGRAM, original)
    result = migrate_source(PROGRAM.read_text(), path=str(PROGRAM))
    assert result.new_text is not None
    # No finding: EvalSpec(steps=None) reads module-level arrays of known length, so the
    # evaluation input is marked with them (on TPU the loop counts whole batches; on CPU it
    # runs to the end of the input, as the original does).
    assert not result.findings, [f.render() for f in result.findings]
    migrated_text = result.new_text
    assert "tpu_runtime.sized_input_fn(eval_input_fn, examples=" in migrated_text
    assert 'drop_remainder="context" in params' in migrated_text
    assert "tpu_runtime.train_and_evaluate(" in migrated_text
    migrated = tmp / "migrated.py"
    migrated.write_text(migrated_text)
    stretches = tmp / "stretches.py"
    stretches.write_text(
        migrated_text.replace(
            "tpu_runtime.train_and_evaluate(", "tpu_runtime.loop.train_in_stretches("
        )
    )
    return {"original": original, "migrated": migrated, "stretches": stretches}


def _run(harness: ModuleType, program: Path, work: Path, max_steps: str) -> dict[str, Any]:
    results = work / "results.json"
    try:
        proc = subprocess.run(
            [harness.tf_python(), str(program), str(work / "model"), str(results), max_steps],
            env=harness.tf_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{program.name} (max_steps={max_steps}) did not end in {TIMEOUT_S} s")
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads(results.read_text())
    return report


@pytest.fixture(scope="module")
def runs(
    harness: ModuleType, tf_python: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("semantics")
    programs = _variants(tmp)
    return {
        (name, max_steps): _run(harness, program, tmp / f"{name}-{max_steps}", max_steps)
        for name, program in programs.items()
        for max_steps in ("15", "none")
    }


def test_repeated_shuffled_pipeline_over_three_stretches_is_equal(
    runs: dict[tuple[str, str], dict[str, Any]],
) -> None:
    original = runs[("original", "15")]
    assert original["metrics"]["global_step"] == 15
    assert [e["metrics"]["global_step"] for e in original["evaluations"]] == [5, 10, 15]
    assert [e["final"] for e in original["evaluations"]] == [False, False, True]
    assert len(original["losses"]) == 15
    # Every evaluation saw all 150 examples: batches of 32 and a last one of 22.
    assert all(e["metrics"]["count"] == 30.0 for e in original["evaluations"])
    assert runs[("migrated", "15")] == original
    assert runs[("stretches", "15")] == original


def test_max_steps_none_over_finite_input_is_one_pass_then_evaluates(
    runs: dict[tuple[str, str], dict[str, Any]],
) -> None:
    original = runs[("original", "none")]
    # 150 examples, batches of 32: 5 steps, the last on 22 examples.
    assert original["metrics"]["global_step"] == 5
    assert len(original["losses"]) == 5
    assert [e["metrics"]["global_step"] for e in original["evaluations"]] == [2, 4, 5]
    assert runs[("migrated", "none")] == original
    assert runs[("stretches", "none")] == original
