"""A TF 1.x training script in its plain spelling (`import tensorflow as tf`): flags,
logging, gfile and app.run for its set-up, a model_fn of tf.layers, tf.losses and
tf.train.AdamOptimizer. Run with `--model_dir DIR --results FILE`; the tests run its
`import tensorflow.compat.v1 as tf` twin on TF 2.15 as the original (TF 1.x's API there)."""

import json

import numpy as np
import tensorflow
import tensorflow as tf

tf.logging.set_verbosity(tf.logging.ERROR)
flags = tf.app.flags
flags.DEFINE_string("model_dir", None, "where checkpoints go")
flags.DEFINE_string("results", None, "where the metrics go")
tf.flags.DEFINE_integer("batch_size", 16, "examples per batch")
FLAGS = flags.FLAGS
SEED = 11


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.5], [0.5]], np.float32) + 0.2).astype(np.float32)
    return x, y


def train_input_fn():
    x, y = make_data(128, SEED)
    data = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    return data.repeat().batch(FLAGS.batch_size)


def eval_input_fn():
    x, y = make_data(64, SEED + 1)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(FLAGS.batch_size)


def model_fn(features, labels, mode, params):
    hidden = tf.layers.dense(features["x"], 8, activation=tf.nn.relu)
    predictions = tf.layers.dense(hidden, 1)
    loss = tf.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        mae = tf.metrics.mean_absolute_error(labels, predictions)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"mae": mae})
    optimizer = tf.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
    if tf.gfile.Exists(FLAGS.model_dir):
        tf.gfile.DeleteRecursively(FLAGS.model_dir)
    # the test's own seeding (TF 1.x had no Keras global seed): without it TF 2.15 draws
    # the TF1 layers' initial values afresh at every run
    tensorflow.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=FLAGS.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED),
        params={"learning_rate": 0.05},
    )
    estimator.train(train_input_fn, steps=40)
    metrics = estimator.evaluate(eval_input_fn, steps=4)
    with tf.gfile.GFile(FLAGS.results, "w") as f:
        json.dump(
            {
                "metrics": {k: float(v) for k, v in metrics.items()},
                "loss": float(metrics["loss"]),
                "predictions": [],
            },
            f,
        )


if __name__ == "__main__":
    tf.app.run(main)
