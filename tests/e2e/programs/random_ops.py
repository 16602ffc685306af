"""Estimators whose training runs random ops: dropout, noise and unseeded shuffles.

Six shapes, each trained a few steps, evaluated and asked for one prediction:
``tf.compat.v1.layers.dropout`` over a seeded shuffle; ``tf.random.normal`` and
``tf.nn.dropout`` over an unseeded shuffle; a Keras ``Dropout`` layer called in a model_fn;
``tf.nn.dropout`` in every mode (Monte Carlo dropout); ``DNNClassifier(dropout=...)``; ``model_to_estimator`` of a Keras model with
``GaussianNoise`` and ``Dropout``.  A training hook records the seeds every random op of the
training graph runs with (the op's ``seed``/``seed2`` attributes, a shuffle's seed inputs);
a Keras layer built after each shape and a draw of Python's ``random`` show where Python's
seed generators stand.

``python random_ops.py MODEL_DIR RESULTS``.  With ``SEEDED`` true the program seeds what
makes an Estimator reproducible: ``RunConfig(tf_random_seed=...)`` and
``tf.keras.utils.set_random_seed``.
"""

import json
import os
import random
import sys

import numpy as np
import tensorflow as tf

SEEDED = True
SEED = 11
BATCH = 16
STEPS = 10
MODEL_DIR, RESULTS_FILE = sys.argv[1], sys.argv[2]
rng = np.random.RandomState(SEED)
X = rng.normal(size=(96, 4)).astype(np.float32)
Y = (X.sum(axis=1) > 0).astype(np.int64) + (X[:, 0] > 1).astype(np.int64)
RESULTS = {}


def seeded_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return data.shuffle(96, seed=SEED).repeat().batch(BATCH)


def unseeded_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
    return data.shuffle(96).repeat().batch(BATCH)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(BATCH)


def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": X}).batch(BATCH)


def keras_input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"noise_input": X}, Y))
    return data.shuffle(96).repeat().batch(BATCH)


def keras_eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"noise_input": X}, Y)).batch(BATCH)


class RandomOpSeeds(tf.compat.v1.train.SessionRunHook):
    """Records the seeds each random op of the training graph runs with."""

    def __init__(self, name):
        self.name = name
        self.seeds = []
        self.shuffles = {}

    def begin(self):
        for op in tf.compat.v1.get_default_graph().get_operations():
            if "seed2" in op.node_def.attr:
                self.seeds.append([op.name, op.get_attr("seed"), op.get_attr("seed2")])
            elif op.type.startswith("ShuffleDataset"):
                inputs = dict(zip([arg.name for arg in op.op_def.input_arg], op.inputs))
                self.shuffles[op.name] = [inputs["seed"], inputs["seed2"]]

    def after_create_session(self, session, coord):
        # A shuffle's seeds are tensors that avoid (0, 0); read their values.
        values = session.run(self.shuffles)
        shuffles = [[name] + [int(v) for v in values[name]] for name in sorted(values)]
        RESULTS.setdefault(self.name, {})["seeds"] = self.seeds + shuffles


def layers_dropout_model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
    hidden = tf.compat.v1.layers.dropout(hidden, 0.3, training=mode == tf.estimator.ModeKeys.TRAIN)
    logits = tf.compat.v1.layers.dense(hidden, 3)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def nn_ops_model_fn(features, labels, mode):
    inputs = features["x"]
    if mode == tf.estimator.ModeKeys.TRAIN:
        inputs += tf.random.normal(tf.shape(inputs), stddev=0.3)
    hidden = tf.compat.v1.layers.dense(inputs, 16, activation=tf.nn.relu)
    if mode == tf.estimator.ModeKeys.TRAIN:
        hidden = tf.nn.dropout(hidden, rate=0.3)
    logits = tf.compat.v1.layers.dense(hidden, 3)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def keras_layers_model_fn(features, labels, mode):
    training = mode == tf.estimator.ModeKeys.TRAIN
    hidden = tf.keras.layers.Dense(16, activation="relu")(features["x"])
    hidden = tf.keras.layers.Dropout(0.3)(hidden, training=training)
    logits = tf.keras.layers.Dense(3)(hidden)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def mc_dropout_model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
    hidden = tf.nn.dropout(hidden, rate=0.3)  # in every mode: Monte Carlo dropout
    logits = tf.compat.v1.layers.dense(hidden, 3)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def config(name):
    return tf.estimator.RunConfig(
        model_dir=os.path.join(MODEL_DIR, name), tf_random_seed=SEED if SEEDED else None
    )


def start():
    if SEEDED:
        tf.keras.utils.set_random_seed(SEED)
        random.seed(SEED)


def record(name, metrics, predictions):
    first = next(predictions)
    predictions.close()  # leaves the prediction graph
    RESULTS[name]["loss"] = float(metrics["loss"])
    RESULTS[name]["prediction"] = np.asarray(first["logits"]).tolist()
    # What Python's seed generators give next: a layer's initial weights, `random`.
    probe = tf.keras.layers.Dense(2)
    probe.build((None, 4))
    RESULTS[name]["next_layer"] = probe.kernel.numpy().tolist()
    RESULTS[name]["next_random"] = random.random()


start()
layers_dropout = tf.estimator.Estimator(layers_dropout_model_fn, config=config("layers"))
layers_dropout.train(seeded_input_fn, steps=STEPS, hooks=[RandomOpSeeds("layers_dropout")])
record(
    "layers_dropout",
    layers_dropout.evaluate(eval_input_fn, steps=2),
    layers_dropout.predict(predict_input_fn),
)

start()
nn_ops = tf.estimator.Estimator(nn_ops_model_fn, config=config("nn_ops"))
nn_ops.train(unseeded_input_fn, steps=STEPS, hooks=[RandomOpSeeds("nn_ops")])
record("nn_ops", nn_ops.evaluate(eval_input_fn, steps=2), nn_ops.predict(predict_input_fn))

start()
keras_layers = tf.estimator.Estimator(keras_layers_model_fn, config=config("keras_layers"))
keras_layers.train(seeded_input_fn, steps=STEPS, hooks=[RandomOpSeeds("keras_layers")])
record(
    "keras_layers",
    keras_layers.evaluate(eval_input_fn, steps=2),
    keras_layers.predict(predict_input_fn),
)

start()
mc_dropout = tf.estimator.Estimator(mc_dropout_model_fn, config=config("mc_dropout"))
mc_dropout.train(unseeded_input_fn, steps=STEPS, hooks=[RandomOpSeeds("mc_dropout")])
record(
    "mc_dropout", mc_dropout.evaluate(eval_input_fn, steps=2), mc_dropout.predict(predict_input_fn)
)

start()
premade = tf.estimator.DNNClassifier(
    hidden_units=[16],
    feature_columns=[tf.feature_column.numeric_column("x", shape=(4,))],
    n_classes=3,
    dropout=0.3,
    config=config("premade"),
)
premade.train(input_fn=unseeded_input_fn, steps=STEPS, hooks=[RandomOpSeeds("premade")])
record("premade", premade.evaluate(eval_input_fn, steps=2), premade.predict(predict_input_fn))

start()
model = tf.keras.models.Sequential(
    [
        tf.keras.layers.GaussianNoise(0.2, input_shape=(4,), name="noise"),
        tf.keras.layers.Dense(16, activation="relu", name="hidden"),
        tf.keras.layers.Dropout(0.3, name="drop"),
        tf.keras.layers.Dense(3, name="logits"),
    ]
)
model.compile(
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer="adam"
)
keras_model = tf.keras.estimator.model_to_estimator(keras_model=model, config=config("keras"))
keras_model.train(input_fn=keras_input_fn, steps=STEPS, hooks=[RandomOpSeeds("keras_model")])
record(
    "keras_model",
    keras_model.evaluate(input_fn=keras_eval_input_fn, steps=2),
    keras_model.predict(keras_eval_input_fn),
)

with open(RESULTS_FILE, "w") as f:
    json.dump(RESULTS, f, indent=1, sort_keys=True)
