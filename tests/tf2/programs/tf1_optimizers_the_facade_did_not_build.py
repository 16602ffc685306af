"""TF1 optimizers no rule maps to the facade's: the model_fn of an Estimator subclass (kept as
TF1 code, its `tf.compat.v1.train.AdamOptimizer().minimize(...)` included) and a project's
TF1 optimizer subclass whose own `compute_gradients` calls TF1's (as tensorflow_privacy's
DP optimizers do). ``python tf1_optimizers_the_facade_did_not_build.py MODEL_DIR RESULTS``."""

import json
import sys

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(3)
X = rng.normal(size=(256, 4)).astype(np.float32)
Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)


class MyEstimator(tf.estimator.Estimator):
    pass


class ScaledSGD(tf.compat.v1.train.GradientDescentOptimizer):
    """A library-style TF1 optimizer subclass: its own compute_gradients calls TF1's."""

    def compute_gradients(self, loss, var_list=None, **kwargs):
        grads = super().compute_gradients(loss, var_list=var_list, **kwargs)
        return [(g * 0.5 if g is not None else None, v) for g, v in grads]


def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def subclass_model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = ScaledSGD(0.2).minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(model_dir, results):
    tf.keras.utils.set_random_seed(3)
    out = {}
    est = MyEstimator(model_fn=model_fn, model_dir=model_dir + "/a")
    est.train(input_fn, steps=50)
    out["subclassed_estimator"] = {k: float(v) for k, v in est.evaluate(eval_input_fn).items()}
    est = tf.estimator.Estimator(model_fn=subclass_model_fn, model_dir=model_dir + "/b")
    est.train(input_fn, steps=50)
    out["optimizer_subclass"] = {k: float(v) for k, v in est.evaluate(eval_input_fn).items()}
    with open(results, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
