"""A premade LinearClassifier given a partitioner, as TF 1.x programs wrote it: its weights
sharded by `fixed_size_partitioner(2)` (kept on the instance, handed over by attribute), its
optimizer the default. ``python premade_v1_partitioner_linear.py MODEL_DIR RESULTS``;
RESULTS also lists the checkpoint's variables, so a test sees the original was sharded."""

import json
import sys

import numpy as np
import tensorflow as tf

SEED = 5
STEPS = 150
rng = np.random.RandomState(SEED)
N = 256
X = rng.normal(size=(N, 3)).astype(np.float32)
FEATURES = {"x": X}
LABELS = (X @ np.array([[1.0], [-1.5], [0.5]], np.float32) + 0.2 > 0).astype(np.int64)
COLUMNS = [tf.feature_column.numeric_column("x", shape=(3,))]


def input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).batch(32)
        return ds.repeat() if train else ds

    return fn


class Models:
    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.partitioner = tf.compat.v1.fixed_size_partitioner(2)

    def linear(self):
        return tf.estimator.LinearClassifier(
            feature_columns=COLUMNS,
            model_dir=self.model_dir,
            partitioner=self.partitioner,
        )


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    estimator = Models(model_dir).linear()
    report = {"before": estimator.evaluate(input_fn(False), steps=1)}
    estimator.train(input_fn(True), steps=STEPS)
    report["after"] = estimator.evaluate(input_fn(False))
    report = {k: {m: float(v) for m, v in d.items()} for k, d in report.items()}
    report["variables"] = [n for n, _ in tf.train.list_variables(model_dir)]
    with open(results, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
