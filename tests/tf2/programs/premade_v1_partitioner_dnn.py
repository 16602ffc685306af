"""A premade DNNRegressor given an input layer partitioner, as TF 1.x programs wrote it: the
embedding of integer ids its input layer holds sharded by `min_max_variable_partitioner`,
its optimizer the default (TF 1.x's: Adagrad at 0.05).
``python premade_v1_partitioner_dnn.py MODEL_DIR RESULTS``; RESULTS also lists the
checkpoint's variables, so a test sees the original was sharded."""

import json
import sys

import numpy as np
import tensorflow as tf

SEED = 5
STEPS = 150
rng = np.random.RandomState(SEED)
N = 256
X = rng.normal(size=(N, 3)).astype(np.float32)
IDS = rng.randint(0, 6, size=(N, 1)).astype(np.int64)
FEATURES = {"x": X, "id": IDS}
TARGETS = (
    X @ np.array([[0.8], [-1.2], [0.4]], np.float32)
    + np.linspace(-1.0, 1.0, 6, dtype=np.float32)[IDS[:, 0]][:, None]
    + 0.1 * rng.normal(size=(N, 1)).astype(np.float32)
)
COLUMNS = [
    tf.feature_column.numeric_column("x", shape=(3,)),
    tf.feature_column.embedding_column(
        tf.feature_column.categorical_column_with_identity("id", num_buckets=6), dimension=4
    ),
]


def input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(32)
        return ds.repeat() if train else ds

    return fn


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.DNNRegressor(
        hidden_units=[16, 8],
        feature_columns=COLUMNS,
        model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        input_layer_partitioner=tf.compat.v1.min_max_variable_partitioner(
            max_partitions=2, min_slice_size=16
        ),
    )
    report = {"before": estimator.evaluate(input_fn(False), steps=1)}
    estimator.train(input_fn(True), steps=STEPS)
    report["after"] = estimator.evaluate(input_fn(False))
    report = {k: {m: float(v) for m, v in d.items()} for k, d in report.items()}
    report["variables"] = [n for n, _ in tf.train.list_variables(model_dir)]
    with open(results, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
