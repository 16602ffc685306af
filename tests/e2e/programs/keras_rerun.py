"""A ``model_to_estimator`` program run twice over one model directory, as a notebook cell
run again is: the second run resumes from the checkpoints of the first.

After ``model_to_estimator`` each run builds a Keras layer and draws from Python's
``random``: both take their seeds from the generators ``tf.keras.utils.set_random_seed``
seeded, which TensorFlow's ``model_to_estimator`` draws from only when it writes the
model's first checkpoint (the first run).  ``python keras_rerun.py MODEL_DIR RESULTS``.
"""

import json
import random
import sys

import numpy as np
import tensorflow as tf

SEED = 5
BATCH = 16
MODEL_DIR, RESULTS_FILE = sys.argv[1], sys.argv[2]
rng = np.random.RandomState(SEED)
X = rng.normal(size=(64, 4)).astype(np.float32)
Y = (X.sum(axis=1) > 0).astype(np.int64)


def input_fn():
    data = tf.data.Dataset.from_tensor_slices(({"hidden_input": X}, Y))
    return data.shuffle(64).repeat().batch(BATCH)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"hidden_input": X}, Y)).batch(BATCH)


runs = []
for _ in range(2):
    tf.keras.utils.set_random_seed(SEED)
    random.seed(SEED)
    model = tf.keras.models.Sequential(
        [
            tf.keras.layers.Dense(8, activation="relu", input_shape=(4,), name="hidden"),
            tf.keras.layers.Dropout(0.3, name="drop"),
            tf.keras.layers.Dense(2, name="logits"),
        ]
    )
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), optimizer="adam"
    )
    estimator = tf.keras.estimator.model_to_estimator(
        keras_model=model,
        config=tf.estimator.RunConfig(model_dir=MODEL_DIR, tf_random_seed=SEED),
    )
    probe = tf.keras.layers.Dense(2)
    probe.build((None, 4))
    estimator.train(input_fn=input_fn, steps=5)
    metrics = estimator.evaluate(input_fn=eval_input_fn, steps=2)
    runs.append(
        {
            "probe": probe.kernel.numpy().tolist(),
            "random": random.random(),
            "loss": float(metrics["loss"]),
            "global_step": int(metrics["global_step"]),
        }
    )

with open(RESULTS_FILE, "w") as f:
    json.dump(runs, f, indent=1)
