"""Write one big module: a model_fn and an Estimator among N small helper functions.

    python bench/gen_big_module.py OUT.py [--helpers 5000] [--tf] [--evaluate 8000]

5,000 helpers of 9 lines each (about 45,000 lines) that no rule touches, with the Estimator
constructs in the middle of the file, so that every rule has to look at the whole module to
find them. `--tf`: the helpers call TensorFlow (`tf.multiply`, `tf.clip_by_value`,
`tf.nn.relu`: what real modules are made of, and nothing any rule changes).
`--evaluate N`: N `estimator.evaluate(...)` calls in `main` instead. Deterministic: the same
arguments give the same text.
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

TF_HELPER = '''
def helper_{n}(x, y=1.0):
    """Helper {n}: TensorFlow arithmetic no rule touches."""
    total = tf.multiply(x, y * {n})
    if {n} % 2:
        total = tf.clip_by_value(total, -{m}.0, {m}.0)
    values = [tf.nn.relu(total - v) for v in range(3)]
    for v in values:
        total = total + v
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


EVALUATE = '    estimator.evaluate(lambda: input_fn({{"batch_size": 8}}), steps={n})\n'


def big_module(helpers: int, tf_helpers: bool = False, evaluate: int = 0) -> str:
    """The module's text: `helpers` helpers (calling TensorFlow with `tf_helpers`) around
    the Estimator program, whose `main` makes `evaluate` evaluate calls after training."""
    helper = TF_HELPER if tf_helpers else HELPER
    half = helpers // 2
    parts = [HEAD]
    parts += [helper.format(n=n, m=n % 97 + 3) for n in range(half)]
    parts.append(ESTIMATOR)
    parts += [EVALUATE.format(n=n + 1) for n in range(evaluate)]
    parts += [helper.format(n=n, m=n % 97 + 3) for n in range(half, helpers)]
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--helpers", type=int, default=5000)
    ap.add_argument("--tf", action="store_true", help="helpers that call TensorFlow")
    ap.add_argument("--evaluate", type=int, default=0, help="evaluate calls in main")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(big_module(args.helpers, args.tf, args.evaluate), encoding="utf-8")


if __name__ == "__main__":
    main()
