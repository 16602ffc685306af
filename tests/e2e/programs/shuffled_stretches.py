"""A Cloud-ML-style trainer whose pipeline reshuffles, repeats and ends in partial batches.

150 examples in batches of 32 (the last batch of each epoch has 22), reshuffled
with a seed at every epoch, repeated; ``train_and_evaluate`` over three
checkpoint stretches, evaluating the 150 examples (a partial last batch) at
every checkpoint.  ``python shuffled_stretches.py MODEL_DIR RESULTS [MAX_STEPS]``;
``MAX_STEPS`` of ``none`` trains one pass over a finite (unrepeated) input.
"""

import json
import sys

import numpy as np
import tensorflow as tf

SEED = 11
rng = np.random.RandomState(SEED)
X = rng.normal(size=(150, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1 * rng.normal(size=150)).astype(np.float32)
REPEAT = sys.argv[3] != "none"


def train_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).shuffle(64, seed=SEED)
    if REPEAT:
        dataset = dataset.repeat()
    return dataset.batch(32)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(32)


def model_fn(features, labels, mode):
    predictions = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(
            mode,
            loss=loss,
            eval_metric_ops={
                "rmse": tf.compat.v1.metrics.root_mean_squared_error(labels, predictions),
                "count": tf.compat.v1.metrics.mean(tf.size(labels)),
            },
        )
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


class RecordEvaluations(tf.estimator.Exporter):
    """Records every evaluation train_and_evaluate runs (an exporter sees each one)."""

    def __init__(self):
        self.calls = []

    @property
    def name(self):
        return "record"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.calls.append(
            {
                "metrics": {k: float(v) for k, v in eval_result.items()},
                "final": bool(is_the_final_export),
            }
        )


class RecordLosses(tf.compat.v1.train.SessionRunHook):
    """Records the training loss of every step."""

    def __init__(self):
        self.losses = []

    def begin(self):
        self._loss = tf.compat.v1.losses.get_losses()[0]

    def before_run(self, run_context):
        return tf.compat.v1.train.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        self.losses.append(float(run_values.results))


def main(model_dir, results, max_steps):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(
        model_dir=model_dir, tf_random_seed=SEED, save_checkpoints_steps=2 if not REPEAT else 5
    )
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    evaluations, losses = RecordEvaluations(), RecordLosses()
    train_spec = tf.estimator.TrainSpec(
        input_fn=train_input_fn, max_steps=max_steps, hooks=[losses]
    )
    eval_spec = tf.estimator.EvalSpec(
        input_fn=eval_input_fn, steps=None, exporters=[evaluations], throttle_secs=0
    )
    metrics, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    with open(results, "w") as f:
        json.dump(
            {
                "metrics": {k: float(v) for k, v in metrics.items()},
                "evaluations": evaluations.calls,
                "losses": losses.losses,
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], None if sys.argv[3] == "none" else int(sys.argv[3]))
