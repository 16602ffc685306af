"""Two projects run together, each with its own `trainer/model.py`: an import of
`trainer.model` resolves to the importer's own project (the one sharing the most
directories), not to nothing because another project also claims the name."""

from __future__ import annotations

import ast
from pathlib import Path

from est2tpu import api
from est2tpu.project.facts import nearest_claim

TASK = """\
import tensorflow as tf
from trainer import model


def main(x, y):
    estimator = tf.estimator.Estimator(model.model_fn)
    train_input = lambda: model.make_input_fn(x, y, batch_size=32)
    estimator.train(input_fn=train_input, steps=10)
"""

MODEL = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(tf.compat.v1.layers.dense(features, 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())


def make_input_fn(features, labels, batch_size):
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).repeat()
    return dataset.batch(batch_size)
"""


def _project(root: Path) -> None:
    (root / "trainer").mkdir(parents=True)
    (root / "trainer" / "__init__.py").write_text("")
    (root / "trainer" / "task.py").write_text(TASK)
    (root / "trainer" / "model.py").write_text(MODEL)


def test_each_project_resolves_its_own_module(tmp_path: Path) -> None:
    for name in ("first", "second"):
        _project(tmp_path / name)
    results = {str(r.path.relative_to(tmp_path)): r for r in api.migrate_paths([tmp_path], jobs=1)}
    for name in ("first", "second"):
        task = results[f"{name}/trainer/task.py"]
        assert not task.findings, [f.render() for f in task.findings]
        assert task.new_text is not None
        # (the code, whatever its layout)
        assert "lambda params: model.make_input_fn(x, y, batch_size=params['batch_size'])" in (
            ast.unparse(ast.parse(task.new_text))
        )
        assert "train_batch_size=32" in task.new_text
        assert "drop_remainder=" in (results[f"{name}/trainer/model.py"].new_text or "")


def test_the_nearest_claim_is_unique_or_nothing() -> None:
    claims = ["/a/p1/trainer/model.py", "/a/p2/trainer/model.py"]
    assert nearest_claim(claims, "trainer.model", "/a/p1/trainer/task.py") == claims[0]
    assert nearest_claim(claims, "trainer.model", "/a/p3/trainer/task.py") is None
    assert nearest_claim([], "trainer.model", "/a/p3/trainer/task.py") is None
