"""A plain tf.estimator.Estimator through tf.estimator.train_and_evaluate, three ways: a
local run with an exporter (its return value, evaluations, checkpoints, exports), a call
that raises, and a run under a TF_CONFIG cluster (distributed mode: the chief trains, an
evaluator task would evaluate, the call returns None).  The test runs it as written and
with ``tpu_runtime.train_and_evaluate`` in place of each call, and compares.

Usage: plain_train_and_evaluate.py MODEL_DIR RESULTS
"""

import glob
import json
import os
import socket
import sys

import numpy as np
import tensorflow as tf

MODEL_DIR, RESULTS = sys.argv[1], sys.argv[2]
tf.keras.utils.set_random_seed(11)
X = np.random.RandomState(0).rand(100, 3).astype(np.float32)
Y = (X.sum(axis=1) > 1.5).astype(np.int32)


def input_fn(training):
    def make():
        dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y))
        if training:
            dataset = dataset.shuffle(100, seed=3).repeat()
        return dataset.batch(16)

    return make


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"logits": logits})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.2)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3])
    return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def eval_steps(model_dir):
    """The global steps of the evaluations the run wrote, in order."""
    steps = []
    for path in sorted(glob.glob(os.path.join(model_dir, "eval", "events.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            if any(v.tag == "accuracy" for v in event.summary.value):
                steps.append(event.step)
    return steps


# 1. Local: train 25 steps, checkpoints every 10, evaluate and export at each one.
local_dir = os.path.join(MODEL_DIR, "local")
estimator = tf.estimator.Estimator(
    model_fn,
    config=tf.estimator.RunConfig(
        model_dir=local_dir, tf_random_seed=11, save_checkpoints_steps=10
    ),
)
exporter = tf.estimator.LatestExporter("latest", serving_input_fn, exports_to_keep=None)
returned = tf.estimator.train_and_evaluate(
    estimator,
    tf.estimator.TrainSpec(input_fn(True), max_steps=25),
    tf.estimator.EvalSpec(input_fn(False), steps=4, exporters=exporter, throttle_secs=0),
)
eval_result, export_results = returned
state = tf.train.get_checkpoint_state(local_dir)
local = {
    "return_type": type(returned).__name__,
    "eval_result": {k: float(v) for k, v in sorted(eval_result.items())},
    "exports": [
        os.path.relpath(os.fsdecode(p), local_dir).split(os.sep)[:2] for p in export_results
    ],
    "exported": len(os.listdir(os.path.join(local_dir, "export", "latest"))),
    "checkpoints": [os.path.basename(p) for p in state.all_model_checkpoint_paths],
    "evaluations": eval_steps(local_dir),
    "kernel": tf.train.load_variable(local_dir, "dense/kernel").tolist(),
}

# 2. What it raises on something that is not an Estimator.
try:
    tf.estimator.train_and_evaluate(
        "not an estimator",
        tf.estimator.TrainSpec(input_fn(True), max_steps=1),
        tf.estimator.EvalSpec(input_fn(False), steps=1),
    )
    raised = None
except Exception as error:  # noqa: BLE001 - what it raises is what is compared
    raised = [type(error).__name__, str(error)]

# 3. Under TF_CONFIG: a one-chief cluster, distributed mode (the chief only trains).
with socket.socket() as probe:
    probe.bind(("localhost", 0))
    port = probe.getsockname()[1]
os.environ["TF_CONFIG"] = json.dumps(
    {"cluster": {"chief": [f"localhost:{port}"]}, "task": {"type": "chief", "index": 0}}
)
chief_dir = os.path.join(MODEL_DIR, "chief")
chief_estimator = tf.estimator.Estimator(
    model_fn, config=tf.estimator.RunConfig(model_dir=chief_dir, tf_random_seed=11)
)
chief_returned = tf.estimator.train_and_evaluate(
    chief_estimator,
    tf.estimator.TrainSpec(input_fn(True), max_steps=7),
    tf.estimator.EvalSpec(input_fn(False), steps=2, throttle_secs=0),
)
chief = {
    "returned": repr(chief_returned),
    "task_type": chief_estimator.config.task_type,
    "global_step": int(tf.train.load_variable(chief_dir, "global_step")),
    "evaluated": os.path.isdir(os.path.join(chief_dir, "eval")),
    "kernel": tf.train.load_variable(chief_dir, "dense/kernel").tolist(),
}

with open(RESULTS, "w") as f:
    json.dump({"local": local, "raised": raised, "chief": chief}, f)
