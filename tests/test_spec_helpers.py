"""A TrainSpec/EvalSpec a project function of another module builds and returns
(`train_spec = inputs.get_train_spec(args.train_files, args.batch_size)`) is followed to its
input function, whose batch size reaches the TPUEstimator built in a third module."""

from __future__ import annotations

from pathlib import Path

from est2tpu import api
from est2tpu.ftypes import FileResult, Status

INPUTS = """\
import tensorflow as tf


def make_input_fn(files, shuffle, batch_size):
    def _input_fn():
        dataset = tf.data.TFRecordDataset(files).map(lambda r: ({"x": [1.0]}, 0.0))
        if shuffle:
            dataset = dataset.shuffle(100)
        return dataset.repeat().batch(batch_size)

    return _input_fn


def get_train_spec(files, batch_size, max_steps):
    return tf.estimator.TrainSpec(
        input_fn=make_input_fn(files, shuffle=True, batch_size=batch_size), max_steps=max_steps
    )


def get_eval_spec(files, batch_size):
    return tf.estimator.EvalSpec(input_fn=make_input_fn(files, False, batch_size), steps=10)
"""

MODEL = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(tf.compat.v1.layers.dense(features["x"], 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())


def build_estimator(config, args):
    return tf.estimator.Estimator(model_fn, model_dir=args.job_dir, config=config)
"""

TASK = """\
import tensorflow as tf

{import_line}
import model


def run(config, args):
    estimator = model.build_estimator(config, args)
    train_spec = {prefix}get_train_spec(args.train_files, args.batch_size, args.max_steps)
    eval_spec = {prefix}get_eval_spec(args.eval_files, args.eval_batch_size)
    tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
"""


def _migrate(root: Path, import_line: str, prefix: str) -> dict[str, FileResult]:
    files = {
        "trainer/inputs.py": INPUTS,
        "trainer/model.py": MODEL,
        "trainer/task.py": TASK.format(import_line=import_line, prefix=prefix),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    results = {}
    for result in api.migrate_paths([root], jobs=1):
        assert result.status is not Status.FAILED, result.error
        results[result.path.name] = result
    return results


def test_specs_from_another_module_bring_their_batch_sizes(tmp_path: Path) -> None:
    results = _migrate(tmp_path, "import inputs", "inputs.")
    assert [f.render() for r in results.values() for f in r.findings] == []
    model = results["model.py"].new_text or ""
    assert "train_batch_size=args.batch_size" in model
    assert "eval_batch_size=args.eval_batch_size" in model
    inputs = results["inputs.py"].new_text or ""
    assert "def _input_fn(params):" in inputs
    assert '.batch(params["batch_size"], drop_remainder="context" in params)' in inputs
    # the spec functions and their callers are left as they are
    assert "def get_train_spec(files, batch_size, max_steps):" in inputs
    assert "inputs.get_train_spec(args.train_files, args.batch_size" in (
        results["task.py"].new_text or ""
    )


def test_spec_function_imported_by_name_stays_a_finding(tmp_path: Path) -> None:
    # `make_input_fn` has no name in task.py: the spec's input function cannot be followed
    # from the call, and the finding says what to do by hand.
    results = _migrate(tmp_path, "from inputs import get_eval_spec, get_train_spec", "")
    findings = [f.render() for r in results.values() for f in r.findings]
    assert len(findings) == 2, findings
    assert all("cannot follow from the call" in f for f in findings)
    assert "train_batch_size" not in (results["model.py"].new_text or "")
