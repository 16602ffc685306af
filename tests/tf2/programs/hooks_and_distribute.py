"""Hooks, distribution strategies and a summary over a metric's update op, as public
Estimator programs use them.  ``python hooks_and_distribute.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 7
rng = np.random.RandomState(SEED)
X = rng.normal(size=(96, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1 * rng.normal(size=96)).astype(np.float32)


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(16)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16)


def model_fn(features, labels, mode):
    predictions = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    rmse = tf.compat.v1.metrics.root_mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"rmse": rmse})
    tf.compat.v1.summary.scalar("train_rmse", rmse[1])
    tf.identity(loss, name="named_mse")
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    log_loss = tf.compat.v1.train.LoggingTensorHook({"hook_loss": loss}, every_n_iter=3)
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=[log_loss])


def summaries(directory):
    """{tag: [[step, value], ...]} of the scalar summaries in `directory`'s event files."""
    found = {}
    for name in sorted(os.listdir(directory)):
        if "tfevents" in name:
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
                for value in event.summary.value:
                    if value.HasField("simple_value"):
                        number = value.simple_value
                    else:
                        number = float(tf.make_ndarray(value.tensor))
                    found.setdefault(value.tag, []).append([event.step, number])
    return {tag: sorted(points) for tag, points in found.items()}


def main(model_dir, results):
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    tf.keras.utils.set_random_seed(SEED)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    config = tf.estimator.RunConfig(
        model_dir=model_dir,
        tf_random_seed=SEED,
        save_checkpoints_steps=5,
        save_summary_steps=5,
        train_distribute=strategy,
        eval_distribute=strategy,
    )
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    # Stops at the first check after the first evaluation (at the step-5 checkpoint).
    early = tf.estimator.experimental.stop_if_lower_hook(
        estimator, "loss", 1000.0, run_every_secs=None, run_every_steps=1
    )
    train_spec = tf.estimator.TrainSpec(
        input_fn=train_input_fn,
        max_steps=40,
        hooks=[early, tf.estimator.StepCounterHook(every_n_steps=2)],
    )
    eval_spec = tf.estimator.EvalSpec(input_fn=eval_input_fn, steps=None, throttle_secs=0)
    early_metrics, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    estimator.train(
        train_input_fn,
        hooks=[
            tf.compat.v1.train.StopAtStepHook(num_steps=7),
            tf.estimator.LoggingTensorHook(["named_mse"], every_n_iter=4),
        ],
        max_steps=100,
    )
    final = estimator.evaluate(eval_input_fn)
    with open(results, "w") as f:
        json.dump(
            {
                "early": {k: float(v) for k, v in early_metrics.items()},
                "final": {k: float(v) for k, v in final.items()},
                "train_summaries": summaries(model_dir),
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
