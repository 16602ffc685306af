"""The heart of the product: each end-to-end project, migrated to TPUEstimator, trains on CPU
(use_tpu=False) to exactly the same loss, metrics and predictions as the original."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from est2tpu.api import migrate_paths
from est2tpu.ftypes import FileResult, Status

# Findings the migration of each project is expected to leave (rule IDs), and why.
EXPECTED_FINDINGS: dict[str, set[str]] = {
    "single_file_classifier": set(),
    "two_module_trainer": set(),
    # `input_fn(..., training=False)` feeds both eval and predict and has no `mode`:
    # static eval batches on TPU need the function split (TPU005 says so).
    "compat_v1_spelling": {"TPU005"},
    "estimator_module_alias": set(),
    "keras_model_to_estimator": set(),
    # `evaluate(eval_input_fn)` runs to the end of a num_epochs=1 numpy input: the migrated
    # `tpu_runtime.evaluate` counts whole batches on TPU, and on CPU evaluates to the end as
    # the original did.
    "numpy_input": set(),
    "train_and_evaluate_exporter": set(),
    # `input_fn` names the training input, then the evaluation one; the program calls
    # `predict_input_fn()` itself (both migrated silently to crashing code).
    "rebound_input_fns": set(),
    # Params rebound in the model_fn, the metrics dict built only in EVAL by a
    # helper of another module, filled in a loop, with weights=.
    "eval_metrics_branches": set(),
    # The optimizer chosen in if/elif/else (wrapped once, after the branches), the
    # metrics built before the dict.
    "optimizer_branches": set(),
    # A metric built before the dict and logged as a training summary, with other
    # summaries: metric_fn and host_call; the same summary tags are written (results JSON).
    "metrics_and_summaries": set(),
    # On public layouts: the scalars and the histogram move to host_call (one
    # before the TRAIN branch, one rebound after its summary, `del config`); the v1 image
    # summary stays, reported, and the Estimator still writes its tags.
    "summaries_beside_images": {"TPU009"},
    # The metrics dict made by a project helper, its update op logged
    # while training; a dict of metrics logged in a loop: both rebuilt in host_call.
    "metrics_dict_summaries": set(),
    # The metric built again in each mode's branch (TRAIN logs it, EVAL puts it
    # in the dict), a metric reading `loss`, bound to None first. The TRAIN branch's metric,
    # named for a LoggingTensorHook, would run on the TPU: reported.
    "metric_in_each_mode_branch": {"TPU009"},
    # tf.compat.v1.layers.Dense(...)(x) and the other class forms.
    "class_form_layers": set(),
    # The model_fn is a bound method (`model_fn=self.model_fn`) and the
    # Estimator is built in another method of the class.
    "model_fn_in_a_class": set(),
    # An input_fn lambda bound to a name and passed by it; eval/predict inputs
    # made by a project function that returns numpy_input_fn(...).
    "input_fn_factories": set(),
    # Iterators: input functions return a one-shot iterator's tensors, restructured
    # after get_next() (a tuple made a dict, the label popped but for predict), and a lambda
    # returns get_next() over a project function's dataset: they return the dataset, mapped.
    "iterator_inputs": set(),
    # Helpers: input functions return what a helper module makes, batched by the
    # helper's argument (a helper of a helper, returning one-shot iterator tensors; a default
    # batch size; a partial): params["batch_size"] reaches the helpers.
    "helper_batched_inputs": set(),
}


def migrate_tree(root: Path) -> list[FileResult]:
    """Migrate a tree in place through the public API, the way the CLI does."""
    from est2tpu.textio import encode
    from est2tpu.writer import write_atomic

    results = list(migrate_paths([root]))
    for result in results:
        assert result.status is not Status.FAILED, (result.path, result.error)
        if result.changed:
            assert result.new_text is not None
            write_atomic(result.path, encode(result.new_text, result.encoding, result.bom))
    return results


@pytest.fixture(scope="module")
def migrated(
    tmp_path_factory: pytest.TempPathFactory, harness: ModuleType
) -> Callable[[str], Path]:
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            dest = harness.copy_project(name, tmp_path_factory.mktemp(f"mig-{name}") / "project")
            results = migrate_tree(dest)
            rules = {f.rule_id for r in results for f in r.findings}
            assert rules == EXPECTED_FINDINGS[name], [
                f.render() for r in results for f in r.findings
            ]
            cache[name] = dest
        return cache[name]

    return get


def test_migration_is_complete_and_idempotent(
    tpu_project_name: str, migrated: Callable[[str], Path]
) -> None:
    root = migrated(tpu_project_name)
    text = "".join(p.read_text() for p in sorted(root.rglob("*.py")))
    assert not re.search(r"\bEstimator\(", text.replace("TPUEstimator(", ""))
    assert not re.search(r"\bEstimatorSpec\(", text.replace("TPUEstimatorSpec(", ""))
    assert "eval_metric_ops=" not in text
    assert ("TPUEstimator(" in text and "use_tpu=tpu_runtime.use_tpu()" in text) or (
        "tpu_runtime.model_to_estimator(" in text
    )
    again = list(migrate_paths([root]))
    assert [r.path for r in again if r.changed] == [], "a second run must change nothing"


@pytest.mark.tf
def test_migrated_project_trains_identically(
    tpu_project_name: str,
    harness: ModuleType,
    original_run: Callable[[str], Any],
    migrated: Callable[[str], Path],
    tmp_path: Path,
) -> None:
    original = original_run(tpu_project_name)
    project = harness.PROJECTS[tpu_project_name]
    copy = tmp_path / "project"
    shutil.copytree(migrated(tpu_project_name), copy)
    result = harness.run_project(copy, project.entry, tmp_path / "run")
    # Plain Estimator and TPUEstimator(use_tpu=False) are bit-identical when the migration
    # is right: equal, not close.
    assert result.metrics == original.metrics
    assert result.loss == original.loss
    assert result.predictions == original.predictions
    assert result.results == original.results
