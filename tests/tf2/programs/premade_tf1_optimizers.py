"""Premade estimators given TF1 optimizer instances, as TF 1.x programs wrote them: a
LinearRegressor per TF1 optimizer est2tpu maps (all starting from zero weights), and a
DNNRegressor whose optimizer is chosen in branches from a parameter of the same name.
``python premade_tf1_optimizers.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 11
STEPS = 150
rng = np.random.RandomState(SEED)
N = 256
FEATURES = {"x": rng.normal(size=(N, 3)).astype(np.float32)}
TARGETS = (
    FEATURES["x"] @ np.array([[0.8], [-1.2], [0.4]], np.float32)
    + 0.5
    + 0.1 * rng.normal(size=(N, 1)).astype(np.float32)
)
COLUMNS = [tf.feature_column.numeric_column("x", shape=(3,))]


def input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices((FEATURES, TARGETS)).batch(32)
        return ds.repeat() if train else ds

    return fn


def linear_regressors(model_dir):
    def directory(name):
        return os.path.join(model_dir, name)

    return {
        "adagrad": tf.estimator.LinearRegressor(
            COLUMNS,
            model_dir=directory("adagrad"),
            optimizer=tf.compat.v1.train.AdagradOptimizer(0.1, initial_accumulator_value=0.2),
        ),
        "adam": tf.estimator.LinearRegressor(
            feature_columns=COLUMNS,
            model_dir=directory("adam"),
            optimizer=tf.compat.v1.train.AdamOptimizer(0.02, 0.8, beta2=0.99),
        ),
        "ftrl": tf.estimator.LinearRegressor(
            COLUMNS,
            model_dir=directory("ftrl"),
            optimizer=tf.compat.v1.train.FtrlOptimizer(
                0.3,
                l1_regularization_strength=0.001,
                l2_regularization_strength=0.01,
                use_locking=True,
            ),
        ),
        "sgd": tf.estimator.LinearRegressor(
            COLUMNS,
            model_dir=directory("sgd"),
            optimizer=tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.002),
        ),
        "momentum": tf.estimator.LinearRegressor(
            COLUMNS,
            model_dir=directory("momentum"),
            optimizer=tf.compat.v1.train.MomentumOptimizer(0.001, 0.9, use_nesterov=True),
        ),
        "adadelta": tf.estimator.LinearRegressor(
            COLUMNS,
            model_dir=directory("adadelta"),
            optimizer=tf.compat.v1.train.AdadeltaOptimizer(60.0, rho=0.9),
        ),
    }


def dnn_regressor(model_dir, optimizer, learning_rate):
    optimizer_name = optimizer
    optimizer = tf.compat.v1.train.AdagradOptimizer(learning_rate)
    if optimizer_name == "Adam":
        optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    elif optimizer_name == "SGD":
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate)
    return tf.estimator.DNNRegressor(
        hidden_units=[16, 8],
        feature_columns=COLUMNS,
        model_dir=os.path.join(model_dir, "dnn"),
        optimizer=optimizer,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
    )


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    out = {}
    for name, estimator in linear_regressors(model_dir).items():
        estimator.train(input_fn(True), steps=STEPS)
        out[name] = estimator.evaluate(input_fn(False))
    dnn = dnn_regressor(model_dir, "Adam", 0.01)
    dnn.train(input_fn(True), steps=STEPS)
    out["dnn"] = dnn.evaluate(input_fn(False))
    with open(results, "w") as f:
        json.dump({k: {m: float(v) for m, v in d.items()} for k, d in out.items()}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
