"""Quickstart: a custom Estimator that classifies synthetic 3-class "blobs".

A typical TF1-era Estimator program: tf.compat.v1.layers in a model_fn,
tf.data input functions with a fixed batch size, eval metrics, Adam.
Run it as is with TensorFlow 2.15, or migrate it to TPUEstimator with

    est2tpu migrate examples/quickstart

and run the result unchanged on CPU (use_tpu=False) or on a Cloud TPU.
"""

import argparse
import tempfile

import numpy as np
import tensorflow as tf

SEED = 7
NUM_CLASSES = 3
NUM_FEATURES = 8


def make_blobs(num_examples, seed=SEED):
    rng = np.random.RandomState(seed)
    centers = rng.normal(scale=0.8, size=(NUM_CLASSES, NUM_FEATURES))
    labels = rng.randint(0, NUM_CLASSES, size=num_examples)
    features = centers[labels] + rng.normal(size=(num_examples, NUM_FEATURES))
    return features.astype(np.float32), labels.astype(np.int32)


FEATURES, LABELS = make_blobs(1280)
TRAIN_X, TRAIN_Y = FEATURES[:1024], LABELS[:1024]
EVAL_X, EVAL_Y = FEATURES[1024:], LABELS[1024:]


def train_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))
    return dataset.shuffle(1024, seed=SEED).repeat().batch(64)


def eval_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y))
    return dataset.batch(64)


def model_fn(features, labels, mode, params):
    net = features["x"]
    for units in params["hidden_units"]:
        net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(net, NUM_CLASSES)
    predicted_class = tf.argmax(logits, axis=1, output_type=tf.int32)

    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = {"class": predicted_class, "probabilities": tf.nn.softmax(logits)}
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)

    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        eval_metric_ops = {
            "accuracy": tf.compat.v1.metrics.accuracy(labels, predicted_class),
            "mean_loss": tf.compat.v1.metrics.mean(loss),
        }
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=eval_metric_ops)

    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default=None, help="default: a new temporary directory")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    model_dir = args.model_dir or tempfile.mkdtemp(prefix="quickstart-")

    tf.keras.utils.set_random_seed(SEED)
    estimator = tf.estimator.Estimator(
        model_fn=model_fn,
        model_dir=model_dir,
        config=tf.estimator.RunConfig(tf_random_seed=SEED, save_checkpoints_steps=100),
        params={"hidden_units": [32, 32], "learning_rate": 0.005},
    )
    estimator.train(input_fn=train_input_fn, steps=args.steps)
    metrics = estimator.evaluate(input_fn=eval_input_fn, steps=4)
    print(
        "step {global_step}: accuracy={accuracy:.4f} loss={loss:.4f}".format(**metrics)
    )


if __name__ == "__main__":
    main()
