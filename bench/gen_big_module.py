"""Write one big module: a model_fn and an Estimator among N small helper functions.

    python bench/gen_big_module.py OUT.py [--helpers 5000]

The issue-21 benchmark: 5,000 helpers of 9 lines each (about 45,000 lines) that no rule
touches, with the Estimator constructs in the middle of the file, so that every rule has to
look at the whole module to find them. Deterministic: the same N gives the same text.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HEAD = '''"""A generated module: one model_fn and one Estimator among many helpers."""
import numpy as np
import tensorflow as tf

'''

HELPER = '''
def helper_{n}(x, y=1):
    """Helper {n}: arithmetic no rule touches."""
    total = x + y * {n}
    if total > {m}:
        total = total - np.float32({m})
    values = [v * 2 for v in range(3)]
    for v in values:
        total += v
    return total, {{"n": {n}, "values": values}}
'''

ESTIMATOR = """

def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn(params):
    features = {"x": np.zeros((64, 4), np.float32)}
    labels = np.zeros((64,), np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.repeat().batch(params["batch_size"])


def main(model_dir):
    config = tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=100)
    estimator = tf.estimator.Estimator(
        model_fn=model_fn, config=config, params={"learning_rate": 0.01, "batch_size": 8}
    )
    estimator.train(lambda: input_fn({"batch_size": 8}), max_steps=10)
"""


def big_module(helpers: int) -> str:
    half = helpers // 2
    parts = [HEAD]
    parts += [HELPER.format(n=n, m=n % 97 + 3) for n in range(half)]
    parts.append(ESTIMATOR)
    parts += [HELPER.format(n=n, m=n % 97 + 3) for n in range(half, helpers)]
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--helpers", type=int, default=5000)
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(big_module(args.helpers), encoding="utf-8")


if __name__ == "__main__":
    main()
