"""Input functions that return what a helper module makes, batched by the helper's argument
(TPU005): the helper module names no Estimator (the byte pre-filter lets it through for its
`batch(`), and a helper returning one-shot iterator tensors returns its dataset only while
no other module calls it, including modules the index would not otherwise read."""

from __future__ import annotations

from pathlib import Path

from oracle import migrate_all_parsed
from small_projects import HELPER_PIPELINE as PIPELINE
from small_projects import HELPER_TASK as TASK

from est2tpu import api
from est2tpu.ftypes import FileResult, Status

# A notebook-like script that looks at a batch itself: it needs the tensors.
EXPLORE = """\
import pipeline

print(pipeline.next_rows(4))
"""


def _run(root: Path) -> dict[str, FileResult]:
    return {r.path.name: r for r in api.migrate_paths([root], jobs=1)}


def test_helper_module_without_estimator_names_is_migrated(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    results = _run(tmp_path)
    task, pipeline = results["task.py"], results["pipeline.py"]
    assert not task.findings and not pipeline.findings
    assert task.new_text is not None and pipeline.new_text is not None
    assert 'return pipeline.next_rows(params["batch_size"])' in task.new_text
    assert "train_batch_size=32" in task.new_text
    assert "return rows(batch_size)\n" in pipeline.new_text
    assert (
        ".batch(\n        batch_size,\n        drop_remainder=tpu_runtime.use_tpu(),\n    )"
        in pipeline.new_text
    )
    for name, result in results.items():
        assert result.new_text is not None
        (tmp_path / name).write_text(result.new_text)
    again = _run(tmp_path)
    assert [r.path.name for r in again.values() if r.status is Status.CHANGED] == []


def test_helper_called_by_a_module_the_index_skips_keeps_its_tensors(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    (tmp_path / "explore.py").write_text(EXPLORE)
    results = _run(tmp_path)
    pipeline, task = results["pipeline.py"], results["task.py"]
    assert pipeline.new_text is not None and "get_next()" in pipeline.new_text
    assert [f.rule_id for f in task.findings] == ["TPU005"]
    assert "the project calls it elsewhere too" in task.findings[0].message
    assert results["explore.py"].status is Status.SKIPPED


def test_the_reference_pipeline_agrees(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    (tmp_path / "explore.py").write_text(EXPLORE)
    fast = _run(tmp_path)
    reference = {r.path.name: r for r in migrate_all_parsed([tmp_path])}
    for name, result in fast.items():
        assert (result.status, result.new_text) == (
            reference[name].status,
            reference[name].new_text,
        )
        assert [f.render() for f in result.findings] == [
            f.render() for f in reference[name].findings
        ]


UNPACKING_TASK = TASK.replace(
    "    return pipeline.next_rows(32)\n",
    "    rows, labels = pipeline.next_pairs(32)\n    return {'x': rows}, labels\n",
)
PAIRS = """\
import tensorflow as tf


def next_pairs(batch_size):
    dataset = tf.data.Dataset.from_tensor_slices(([[1.0], [2.0]], [0, 1]))
    iterator = tf.compat.v1.data.make_one_shot_iterator(dataset.repeat().batch(batch_size))
    rows, labels = iterator.get_next()
    return rows, labels
"""


def test_unpacked_helper_tensors_migrate_once_and_check_clean(tmp_path: Path) -> None:
    (tmp_path / "task.py").write_text(UNPACKING_TASK)
    (tmp_path / "pipeline.py").write_text(PAIRS)
    results = _run(tmp_path)
    assert not [f for r in results.values() for f in r.findings]
    task = results["task.py"].new_text or ""
    assert (
        'return pipeline.next_pairs(params["batch_size"]).map(\n'
        "        lambda rows, labels: ({'x': rows}, labels),\n    )" in task
    )
    assert "return dataset.repeat().batch(batch_size" in (results["pipeline.py"].new_text or "")
    for name, result in results.items():
        (tmp_path / name).write_text(result.new_text or "")
    again = _run(tmp_path)
    assert [r.path.name for r in again.values() if r.status is Status.CHANGED] == []
    # `check` after `migrate` reports nothing: the mapped form is traced as well
    assert not [f.render() for r in again.values() for f in r.findings]
