"""`optimizer.compute_gradients`, gradient clipping and `apply_gradients` in a model_fn, as
public Estimator programs write them.  ``python compute_apply_gradients.py MODEL_DIR RESULTS``."""

import json
import sys

import numpy as np
import tensorflow as tf

SEED = 5
rng = np.random.RandomState(SEED)
X = rng.normal(size=(96, 4)).astype(np.float32)
Y = (X @ np.array([2.0, -3.0, 0.5, 1.0], np.float32) + 0.1 * rng.normal(size=96)).astype(np.float32)


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(16)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 8, activation=tf.nn.relu)
    predictions = tf.squeeze(tf.compat.v1.layers.dense(hidden, 1), 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        mae = tf.compat.v1.metrics.mean_absolute_error(labels, predictions)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"mae": mae})
    optimizer = tf.compat.v1.train.MomentumOptimizer(0.05, momentum=0.9)
    grads_and_vars = optimizer.compute_gradients(loss)
    grads, variables = zip(*grads_and_vars)
    # Active from the first step: the gradient's norm is well above 1.
    clipped, _ = tf.clip_by_global_norm(grads, 1.0)
    train_op = optimizer.apply_gradients(
        zip(clipped, variables), global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(model_dir=model_dir, tf_random_seed=SEED)
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    estimator.train(train_input_fn, max_steps=30)
    metrics = estimator.evaluate(eval_input_fn)
    with open(results, "w") as f:
        json.dump({k: float(v) for k, v in metrics.items()}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
