"""Generated trainers (tests/gen_programs.py), migrated with `--target tf2`, train like the
original under XLA over 8 CPU replicas (`EST2TPU_JIT_COMPILE=1 EST2TPU_CPU_REPLICAS=8`, the
closest CPU stand-in for a TPU) on current TensorFlow: the same metrics as the unmigrated
program on TF 2.15, within test_tf2_e2e's tolerance (losses and errors within 25%).

The sample is the compositions of the classes of real code that decide what the facade runs:
input functions that return a one-shot iterator's tensors (each spelling: the method, the
function with the iterator bound first and its tensors restructured, a helper called from a
lambda, a factory in another module), and a model_fn that writes scalar, histogram and image
summaries and trains at a learning rate it decays from the global step. Each crosses other
axes (model reach, batch source and place, layout) as tests/e2e/test_e2e_compositions.py's
sample does for the tpu-estimator target, which trains the same three.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gen_programs import TWINS, Composition, compositions
from test_tf2_e2e import STRATEGIES, assert_close, migrate_tree

# Each iterator input shape and "summaries", once: the compositions tests/e2e trains too
SAMPLE = [c for c in compositions() if c.name in TWINS.values()]


def test_the_sample_trains_every_new_value() -> None:
    assert len(SAMPLE) == len(TWINS)
    assert {c.inputs for c in SAMPLE} == {"iterator", "iterator_lambda", "iterator_factory"}
    assert "summaries" in {c.model for c in SAMPLE}


@pytest.mark.tf
@pytest.mark.parametrize("comp", SAMPLE, ids=lambda c: c.name)
def test_composition_trains_like_the_original_under_xla_over_8_replicas(
    comp: Composition, harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    original = tmp_path / "original"
    comp.write(original)
    migrated = tmp_path / "migrated"
    shutil.copytree(original, migrated)
    findings = {f.rule_id for r in migrate_tree(migrated) for f in r.findings}
    assert findings == comp.findings("tf2")
    text = "".join(p.read_text(encoding="utf-8") for p in migrated.rglob("*") if p.is_file())
    assert "tf2_runtime.Estimator(" in text
    assert "tf.estimator" not in text
    assert "make_one_shot_iterator" not in text
    before = harness.run_project(original, comp.entry(), tmp_path / "run-original")
    after = harness.run_project(
        migrated,
        comp.entry(),
        tmp_path / "run-migrated",
        env=STRATEGIES["xla_mirrored_8_cpus"],
        python=tfcur,
        timeout=500,
    )
    assert_close(after.metrics, before.metrics)
    assert after.metrics["global_step"] == 20


# The sample and the compositions it is the twin of, in the spelling of TF 1.x code.
TF1_SPELLED = sorted(
    [c for c in compositions() if c.name in TWINS or c.name in TWINS.values()],
    key=lambda c: c.name,
)
# TF1 names TF 2.x's `tf` lacks that no tf2 rule maps in their plain spelling: a model_fn
# spelling them fails on current TensorFlow (see rules/TF2002.md).
TF1_SPELLED_GAPS = {
    "summaries-literal-same-iterator-one_module": (
        "plain tf.train.exponential_decay and tf.summary.* (TF1's) are left as spelled"
    ),
}


@pytest.mark.tf
@pytest.mark.parametrize(
    "comp",
    [
        pytest.param(
            c,
            marks=pytest.mark.xfail(reason=TF1_SPELLED_GAPS[c.name], strict=True)
            if c.name in TF1_SPELLED_GAPS
            else (),
        )
        for c in TF1_SPELLED
    ],
    ids=lambda c: c.name,
)
def test_tf1_spelled_composition_trains_like_the_original(
    comp: Composition, harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    """The composition as TF 1.x code spells it (`tf.layers.dense`,
    `tf.losses.mean_squared_error`, `tf.train.AdamOptimizer`), migrated, trains like the
    original (its `tf.compat.v1` spelling on TF 2.15) under the default strategy."""
    original = tmp_path / "original"
    comp.write(original)
    migrated = tmp_path / "migrated"
    comp.write_tf1_spelled(migrated)
    findings = {f.rule_id for r in migrate_tree(migrated) for f in r.findings}
    assert findings == comp.findings("tf2")
    text = "".join(p.read_text(encoding="utf-8") for p in migrated.rglob("*") if p.is_file())
    assert "tf.estimator" not in text
    before = harness.run_project(original, comp.entry(), tmp_path / "run-original")
    after = harness.run_project(
        migrated, comp.entry(), tmp_path / "run-migrated", python=tfcur, timeout=500
    )
    assert_close(after.metrics, before.metrics)
    assert after.metrics["global_step"] == 20
