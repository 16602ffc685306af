"""Small two-module Estimator projects several tests write to disk.

- `MODEL` / `TASK`: a model module (input_fn, model_fn) and the task that trains it, the
  shape of a project a pre-commit hook or a project-wide configuration sees.
- `HELPER_TASK` / `HELPER_PIPELINE`: a task whose input function returns what a helper
  module makes, batched by the helper's argument; the helper module names no Estimator, so
  the byte pre-filter skips it and only the project index reads it.
"""

MODEL = """\
import tensorflow as tf


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": [[1.0]] * 64}, [[0.0]] * 64))
    return ds.repeat().batch(32)


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)
"""

TASK = """\
import tensorflow as tf

import model

est = tf.estimator.Estimator(model_fn=model.model_fn)
est.train(input_fn=model.input_fn, steps=2)
est.evaluate(input_fn=model.input_fn, steps=1)
"""

HELPER_TASK = """\
import tensorflow as tf

import pipeline


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(tf.compat.v1.layers.dense(features, 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.no_op())


def train_input_fn():
    return pipeline.next_rows(32)


def main():
    estimator = tf.estimator.Estimator(model_fn)
    estimator.train(input_fn=train_input_fn, steps=10)
"""

HELPER_PIPELINE = """\
import tensorflow as tf


def rows(batch_size):
    return tf.data.Dataset.from_tensor_slices([[1.0], [2.0]]).repeat().batch(batch_size)


def next_rows(batch_size):
    return tf.compat.v1.data.make_one_shot_iterator(rows(batch_size)).get_next()
"""
