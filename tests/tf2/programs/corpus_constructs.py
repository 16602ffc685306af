"""Premade DNNs over one-hot, weighted and embedded integer ids, a RunConfig whose
strategies come in a DistributeConfig, and a Keras model compiled with TF1's
GradientDescentOptimizer for model_to_estimator, as public Estimator programs write them.
``python corpus_constructs.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.distribute.distribute_config import DistributeConfig

SEED = 5
STEPS = 1000
rng = np.random.RandomState(SEED)
N = 512
FEATURES = {
    "x": rng.normal(size=(N, 2)).astype(np.float32),
    "ids": rng.randint(0, 6, size=(N, 1)).astype(np.int64),
    "w": rng.uniform(0.5, 2.0, size=(N, 1)).astype(np.float32),
    "day": rng.randint(0, 7, size=(N, 1)).astype(np.int64),
}
CLASSES = (
    FEATURES["x"][:, 0] + (FEATURES["ids"][:, 0] % 2) * 1.5 + 0.3 * (FEATURES["day"][:, 0] > 3)
    > 0.7
).astype(np.int64)
TARGETS = (
    FEATURES["x"] @ np.array([0.5, -1.0], np.float32)
    + 0.4 * FEATURES["ids"][:, 0]
    - 0.2 * FEATURES["day"][:, 0]
).astype(np.float32)


def columns():
    ids = tf.feature_column.categorical_column_with_identity("ids", num_buckets=6)
    day = tf.feature_column.categorical_column_with_identity("day", num_buckets=7)
    x = tf.feature_column.numeric_column("x", shape=(2,))
    return [
        x,
        tf.feature_column.indicator_column(ids),
        tf.feature_column.indicator_column(tf.feature_column.weighted_categorical_column(ids, "w")),
        tf.feature_column.embedding_column(day, dimension=3),
        tf.feature_column.indicator_column(tf.feature_column.bucketized_column(x, [-0.5, 0.5])),
    ]


def input_fn(labels, train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((FEATURES, labels)).batch(64)
        return ds.repeat() if train else ds

    return fn


def keras_input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((FEATURES["x"], TARGETS)).batch(64)
        return ds.repeat() if train else ds

    return fn


def linear_model_fn(features, labels, mode):
    predictions = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    out = {}
    classifier = tf.estimator.DNNClassifier(
        hidden_units=[16, 8],
        feature_columns=columns(),
        optimizer="Adam",
        model_dir=os.path.join(model_dir, "classifier"),
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
    )
    classifier.train(input_fn(CLASSES, True), steps=STEPS)
    out["classifier"] = classifier.evaluate(input_fn(CLASSES, False))
    regressor = tf.estimator.DNNRegressor(
        hidden_units=[16],
        feature_columns=columns(),
        optimizer="Adam",
        model_dir=os.path.join(model_dir, "regressor"),
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
    )
    regressor.train(input_fn(TARGETS, True), steps=STEPS)
    out["regressor"] = regressor.evaluate(input_fn(TARGETS, False))
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    config = tf.estimator.RunConfig(
        model_dir=os.path.join(model_dir, "distributed"),
        tf_random_seed=SEED,
        experimental_distribute=DistributeConfig(
            train_distribute=mirrored, eval_distribute=mirrored
        ),
    )
    estimator = tf.estimator.Estimator(model_fn=linear_model_fn, config=config)
    estimator.train(input_fn(TARGETS, True), steps=50)
    out["distributed"] = estimator.evaluate(input_fn(TARGETS, False))
    tf.keras.utils.set_random_seed(SEED)
    model = tf.keras.Sequential()
    model.add(tf.keras.layers.Dense(4, activation="relu", input_shape=(2,)))
    model.add(tf.keras.layers.Dense(1))
    sgd = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    model.compile(loss="mse", optimizer=sgd)
    keras_estimator = tf.keras.estimator.model_to_estimator(
        keras_model=model, model_dir=os.path.join(model_dir, "keras")
    )
    keras_estimator.train(keras_input_fn(True), steps=30)
    out["keras"] = keras_estimator.evaluate(keras_input_fn(False), steps=8)
    with open(results, "w") as f:
        json.dump({k: {m: float(v) for m, v in d.items()} for k, d in out.items()}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
