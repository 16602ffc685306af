"""Generated trainers (tests/gen_programs.py) train the same after migration.

A fixed sample of compositions, [how the model_fn reaches the Estimator] x [where the batch
size lives] x [how input functions reach train/evaluate/specs] x [layout], spread so that
every value of every axis appears: each is migrated to tpu-estimator on a real tree, then the
original and the migration are trained for a few steps on CPU under TensorFlow 2.15 with the
same seeds; their evaluation metrics must be equal, bit for bit (TPUEstimator with
use_tpu=False runs the Estimator's own graph).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gen_programs import TWINS, Composition, compositions, covering

from est2tpu import api
from est2tpu.ftypes import Status

# The first 40 of the pairwise-covering set of the first axes' values (every value of every
# axis, in a fixed order), and compositions of the shapes added since: a trainer class (its
# input functions methods passed directly, or called by lambdas; its Estimator built in
# __init__ or returned by a method, or given the model object whose method is the model_fn),
# a partial of a dict pick by a namespace's attribute, and params=vars(args) read by the
# model_fn (with the trainer class too: `self.batch_size` set from `args.batch_size`).
LATER = (
    "partial-flags-same-lambda-one_module-trainer_class",
    "dict_flag-hparams-other-direct-package-trainer_class",
    "dict_literal-hparams-other-lambda-one_module-trainer_method",
    "partial_of_pick-args_params-same-direct-one_module",
    "method-flags-other-direct-model_task-trainer_given_model",
    "method-constant-same-lambda-notebook-trainer_given_model",
    "direct-args_params-same-direct-one_module-trainer_class",
    # the train op from a chain of defs of the model module (make_train_op -> _optimize),
    # from a method of an instance of a class there, and from a chain in a module of its own,
    # TPU004's use_tpu flag threaded through
    "train_op_chain-flags-other-direct-package",
    "train_op_method-constant-same-lambda-model_task",
    "train_op_module-hparams-other-factory_other-model_task",
)
# Of the first 40, three train as their iterator twins (gen_programs.TWINS: input functions
# that return a one-shot iterator's tensors, and a model_fn that writes summaries and decays
# its learning rate), which tests/tf2/test_tf2_compositions.py trains under XLA over 8 CPU
# replicas too; and three are not trained, so that 47 compositions train over both targets
# (44 here, the three twins under tf2). The sample keeps 346 of the 358 pairs of values it
# covered with 47: these three are the ones whose absence loses the fewest.
NOT_TRAINED = (
    "alias-hparams-same-lambda-one_module",
    "direct-closure-same-spec_helper-one_module",
    "method-argparse-same-direct_and_lambda-notebook",
)
_BY_NAME = {c.name: c for c in compositions()}
SAMPLE = [
    _BY_NAME[TWINS.get(c.name, c.name)]
    for c in covering(first=True)[:40]
    if c.name not in NOT_TRAINED
] + [_BY_NAME[name] for name in LATER]


def _migrate(root: Path, comp: Composition) -> None:
    for result in api.migrate_paths([root], jobs=1):
        assert result.status is not Status.FAILED, result.error
        unexpected = [f.render() for f in result.findings if f.rule_id not in comp.findings()]
        assert not unexpected, unexpected
        if result.new_text is not None and result.new_text != result.old_text:
            result.path.write_text(result.new_text, encoding="utf-8")


@pytest.mark.tf
@pytest.mark.parametrize("comp", SAMPLE, ids=lambda c: c.name)
def test_composition_trains_like_the_original(
    comp: Composition, harness: ModuleType, tmp_path: Path
) -> None:
    original = tmp_path / "original"
    comp.write(original)
    migrated = tmp_path / "migrated"
    shutil.copytree(original, migrated)
    _migrate(migrated, comp)
    assert "TPUEstimator(" in "".join(
        p.read_text(encoding="utf-8") for p in migrated.rglob("*") if p.is_file()
    )
    before = harness.run_project(original, comp.entry(), tmp_path / "run-original")
    after = harness.run_project(migrated, comp.entry(), tmp_path / "run-migrated")
    assert after.metrics == before.metrics
    assert after.metrics["global_step"] == 20
