"""evaluate() without steps over an input whose length only reading it tells (TensorFlow 2.15).

The migration hands such a call to ``tpu_runtime.evaluate``: off TPU it evaluates to the
end of the input as the original does (trained here, bit-identical); on a TPU the runtime
counts the whole batches of the input once (``est2tpu.runtime.inputs.whole_batches``,
checked here on real datasets) and passes them as steps.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from est2tpu import api
from est2tpu.ftypes import Status
from tests.test_runtime_keras import _harness

REPO = Path(__file__).resolve().parents[1]

COUNTING = textwrap.dedent(
    """
    import json

    import numpy as np
    import tensorflow as tf

    from est2tpu.runtime.inputs import whole_batches


    def slices(params):
        x = np.arange(70, dtype=np.float32).reshape(70, 1)
        data = tf.data.Dataset.from_tensor_slices(({"x": x}, x)).map(lambda f, y: (f, y * 2))
        return data.batch(params["batch_size"], drop_remainder="context" in params)


    def generated():
        def rows():
            for i in range(45):
                yield [float(i)], [float(i)]

        spec = (tf.TensorSpec([1], tf.float32), tf.TensorSpec([1], tf.float32))
        return tf.data.Dataset.from_generator(rows, output_signature=spec).batch(8)


    def errors(fn, batch):
        try:
            whole_batches(fn, batch)
        except (TypeError, ValueError) as error:
            return type(error).__name__
        return None


    print(json.dumps({
        "slices_32": whole_batches(slices, 32),
        "slices_32_again": whole_batches(slices, 32),
        "slices_8": whole_batches(slices, 8),
        "generated_8": whole_batches(generated, 8),
        "repeats": errors(lambda params: slices(params).repeat(), 32),
        "tensors": errors(lambda params: ({"x": tf.zeros([4, 1])}, tf.zeros([4])), 4),
    }))
    """
)

PROGRAM = textwrap.dedent(
    """
    import argparse
    import json

    import numpy as np
    import tensorflow as tf

    SEED = 7


    def rows(n, seed):
        rng = np.random.RandomState(seed)
        for _ in range(n):
            x = rng.normal(size=3).astype(np.float32)
            yield {"x": x}, np.float32(x @ np.array([1.0, -0.5, 2.0], np.float32) + 0.3)


    def input_fn(n, seed, batch_size, train):
        spec = ({"x": tf.TensorSpec([3], tf.float32)}, tf.TensorSpec([], tf.float32))
        data = tf.data.Dataset.from_generator(lambda: rows(n, seed), output_signature=spec)
        if train:
            data = data.repeat()
        return data.batch(batch_size)


    def model_fn(features, labels, mode, params):
        output = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), 1)
        loss = tf.compat.v1.losses.mean_squared_error(labels, output)
        train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
            loss, global_step=tf.compat.v1.train.get_or_create_global_step())
        metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, output)}
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--model_dir", required=True)
        parser.add_argument("--results", required=True)
        known = parser.parse_args()
        tf.keras.utils.set_random_seed(SEED)
        estimator = tf.estimator.Estimator(
            model_fn, known.model_dir, tf.estimator.RunConfig(tf_random_seed=SEED))
        estimator.train(lambda: input_fn(256, SEED, 32, True), steps=20)
        # no steps: to the end of a generator whose length only reading it tells
        metrics = estimator.evaluate(lambda: input_fn(70, SEED + 1, 32, False))
        with open(known.results, "w") as f:
            json.dump({"metrics": {k: float(v) for k, v in metrics.items()},
                       "loss": float(metrics["loss"]), "predictions": []}, f)
    """
)


@pytest.mark.tf
def test_whole_batches_of_real_datasets() -> None:
    harness = _harness()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(
        [harness.tf_python(), "-c", COUNTING], capture_output=True, text=True, env=env,
        timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    counted = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counted == {
        "slices_32": 2,  # 70 rows: two whole batches of 32
        "slices_32_again": 2,
        "slices_8": 8,
        "generated_8": 5,  # unknown cardinality: counted by reading it once
        "repeats": "ValueError",
        "tensors": "TypeError",
    }


@pytest.mark.tf
def test_evaluate_without_steps_over_a_generator_trains_like_the_original(
    tmp_path: Path,
) -> None:
    harness = _harness()
    original = tmp_path / "original"
    original.mkdir()
    (original / "train.py").write_text(PROGRAM, encoding="utf-8")
    migrated = tmp_path / "migrated"
    shutil.copytree(original, migrated)
    for result in api.migrate_paths([migrated], jobs=1):
        assert result.status is not Status.FAILED, result.error
        assert not result.findings, [f.render() for f in result.findings]
        assert result.new_text is not None
        result.path.write_text(result.new_text, encoding="utf-8")
    code = ast.unparse(ast.parse((migrated / "train.py").read_text(encoding="utf-8")))
    assert "tpu_runtime.evaluate(estimator, lambda params: input_fn(70" in code
    before = harness.run_project(original, ("train.py",), tmp_path / "run-original")
    after = harness.run_project(migrated, ("train.py",), tmp_path / "run-migrated")
    assert after.metrics == before.metrics
    assert before.metrics["global_step"] == 20
