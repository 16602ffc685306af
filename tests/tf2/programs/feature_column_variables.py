"""A model_fn whose feature-column `input_layer` (an embedding column, inside a
`variable_scope`) and `linear_model` create their variables through
`tf.compat.v1.get_variable`. ``python feature_column_variables.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 11
STEPS = 120
rng = np.random.RandomState(SEED)
N = 512
X = rng.normal(size=(N, 4)).astype(np.float32)
IDS = rng.randint(0, 5, size=(N, 1)).astype(np.int64)
Y = ((X[:, 0] - X[:, 1] + 0.5 * (IDS[:, 0] % 2)) > 0).astype(np.int64)


def input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": X, "ids": IDS}, Y))
        ds = ds.shuffle(N, seed=SEED).repeat() if train else ds
        return ds.batch(64)

    return fn


def loss_of(logits, labels):
    return tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)


def spec(mode, logits, labels, loss, train_op=None):
    if mode == tf.estimator.ModeKeys.EVAL:
        predicted = tf.argmax(logits, axis=1)
        return tf.estimator.EstimatorSpec(
            mode,
            loss=loss,
            eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(labels, predicted)},
        )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def feature_column_model_fn(features, labels, mode):
    ids = tf.feature_column.categorical_column_with_identity("ids", num_buckets=5)
    columns = [
        tf.feature_column.numeric_column("x", shape=(4,)),
        tf.feature_column.embedding_column(ids, dimension=3),
    ]
    with tf.compat.v1.variable_scope("deep"):
        net = tf.compat.v1.feature_column.input_layer(features, columns)
        net = tf.compat.v1.layers.dense(net, 16, activation=tf.nn.relu, name="hidden")
    wide = tf.compat.v1.feature_column.linear_model(
        features, [tf.feature_column.indicator_column(ids)], units=2
    )
    logits = tf.compat.v1.layers.dense(net, 2) + wide
    loss = loss_of(logits, labels)
    optimizer = tf.compat.v1.train.AdagradOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return spec(mode, logits, labels, loss, train_op)


def run(estimator):
    estimator.train(input_fn(True), steps=STEPS)
    return {k: float(v) for k, v in estimator.evaluate(input_fn(False)).items()}


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    out = {}
    out["feature_columns"] = run(
        tf.estimator.Estimator(feature_column_model_fn, os.path.join(model_dir, "columns"), config)
    )
    with open(results, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
