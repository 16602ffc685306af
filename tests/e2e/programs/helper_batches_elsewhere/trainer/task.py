"""Entry point: python -m trainer.task --model_dir DIR --results FILE."""

import argparse
import json

import tensorflow as tf

from trainer import data


def model_fn(features, labels, mode, params):
    hidden = tf.compat.v1.layers.dense(features["x"], params["units"], activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.compat.v1.metrics.accuracy(labels, tf.cast(logits > 0, tf.float32))
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def train_input_fn(params):
    return data.shuffled_batches(params, True)


def eval_input_fn():
    return data.batches(data.X, data.Y)


def train_more_input_fn():
    return data.batches(data.X, data.Y, 23, repeat=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tf.keras.utils.set_random_seed(data.SEED)
    params = {"units": 8, "learning_rate": 0.1, "batch_size": 24}
    estimator = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=data.SEED),
        params=params,
    )
    estimator.train(train_input_fn, steps=30)
    metrics = estimator.evaluate(eval_input_fn, steps=7)
    more = tf.estimator.Estimator(
        model_fn,
        model_dir=args.model_dir + "_more",
        config=tf.estimator.RunConfig(tf_random_seed=data.SEED),
        params={"units": 4, "learning_rate": 0.05},
    )
    more.train(train_more_input_fn, steps=15)
    more_metrics = more.evaluate(eval_input_fn, steps=7)
    with open(args.results, "w") as f:
        json.dump(
            {
                "metrics": {k: float(v) for k, v in metrics.items()},
                "more": {k: float(v) for k, v in more_metrics.items()},
                "loss": float(metrics["loss"]),
                "predictions": [],
            },
            f,
        )


if __name__ == "__main__":
    main()
