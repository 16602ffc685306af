"""Model_fns that create their variables themselves, as public Estimator programs write
them: a Keras Sequential built at the top of the model_fn (from `import tensorflow.keras as
keras`, above the facade's import once migrated), a `tf.keras.Model` subclass with
`compute_gradients`/`apply_gradients` over `tf.compat.v1.trainable_variables()`, and a TF1
optimizer built outside and passed in `params`.
``python model_fn_variables.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf
import tensorflow.keras as keras  # noqa: PLR0402 - the spelling under test

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


def keras_sequential_model_fn(features, labels, mode):
    model = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(2)])
    logits = model(features["x"], training=mode == tf.estimator.ModeKeys.TRAIN)
    loss = loss_of(logits, labels)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return spec(mode, logits, labels, loss, train_op)


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(16, activation="relu")
        self.out = tf.keras.layers.Dense(2)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def subclass_model_fn(features, labels, mode):
    logits = Net()(features["x"])
    loss = loss_of(logits, labels)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    grads = optimizer.compute_gradients(loss, tf.compat.v1.trainable_variables())
    train_op = optimizer.apply_gradients(grads, global_step=tf.compat.v1.train.get_global_step())
    return spec(mode, logits, labels, loss, train_op)


def params_optimizer_model_fn(features, labels, mode, params):
    net = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, 2)
    loss = loss_of(logits, labels)
    train_op = params["optimizer"].minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return spec(mode, logits, labels, loss, train_op)


def run(estimator):
    estimator.train(input_fn(True), steps=STEPS)
    return {k: float(v) for k, v in estimator.evaluate(input_fn(False)).items()}


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    out = {}
    out["keras_sequential"] = run(
        tf.estimator.Estimator(
            keras_sequential_model_fn, os.path.join(model_dir, "sequential"), config
        )
    )
    out["keras_subclass"] = run(
        tf.estimator.Estimator(subclass_model_fn, os.path.join(model_dir, "subclass"), config)
    )
    out["params_optimizer"] = run(
        tf.estimator.Estimator(
            params_optimizer_model_fn,
            os.path.join(model_dir, "params"),
            config,
            params={"optimizer": tf.compat.v1.train.AdamOptimizer(0.01)},
        )
    )
    with open(results, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
