"""The facade's XLA embedding lookups (`runtime/tf2/_dense_lookup.py`) give TensorFlow's
results: every combiner, with and without weights and `default_id`, ids of rank 2 and 3,
invalid ids, empty rows, `max_norm`, a table split in `div` partitions, a feature column's
`input_layer` and `linear_model`, the non-safe `embedding_lookup_sparse_v2`, and
`sparse_reshape` with a -1. Each is computed by TensorFlow's own function in a plain
`tf.function` and by the dense one in a `jit_compile=True` function (which fails to compile
if any sparse op is left), with the gradient of the table, on current TensorFlow."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import ModuleType

import pytest

PROGRAM = """
import json
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.feature_column import feature_column_v2 as fc
from tensorflow.python.ops import embedding_ops, sparse_ops

from est2tpu.runtime.tf2._dense_lookup import compilable

rng = np.random.RandomState(0)
ids = rng.randint(-1, 5, size=(8, 3)).astype(np.int64)
ids[2, :] = -1  # a row with no id
table = tf.Variable(rng.normal(size=(5, 3)).astype(np.float32))
parts = [tf.Variable(rng.normal(size=(3, 3)).astype(np.float32)),
         tf.Variable(rng.normal(size=(2, 3)).astype(np.float32))]


def lookups(features):
    sp = fc._to_sparse_input_and_drop_ignore_values(features["ids"])
    weights = tf.SparseTensor(sp.indices, tf.cast(sp.values, tf.float32) - 1.5, sp.dense_shape)
    out = {}
    for combiner in ("mean", "sum", "sqrtn"):
        out[combiner] = embedding_ops.safe_embedding_lookup_sparse(table, sp, combiner=combiner)
        out[combiner + "_default"] = embedding_ops.safe_embedding_lookup_sparse(
            table, sp, combiner=combiner, default_id=3)
        out[combiner + "_weighted"] = embedding_ops.safe_embedding_lookup_sparse(
            table, sp, weights, combiner=combiner)
        out[combiner + "_partitioned"] = embedding_ops.safe_embedding_lookup_sparse(
            parts, sp, combiner=combiner)
    out["max_norm"] = embedding_ops.safe_embedding_lookup_sparse(table, sp, max_norm=0.5)
    out["rank3"] = embedding_ops.safe_embedding_lookup_sparse(
        table, sparse_ops.sparse_reshape(sp, [8, 3, 1]))
    out["rank3_inferred"] = embedding_ops.safe_embedding_lookup_sparse(
        table, sparse_ops.sparse_reshape(sp, [-1, 3, 1]))
    valid = tf.SparseTensor(sp.indices, tf.maximum(sp.values, 0), sp.dense_shape)
    out["v2"] = embedding_ops.embedding_lookup_sparse_v2(table, valid, None, combiner="mean")
    column = tf.feature_column.categorical_column_with_identity("ids", num_buckets=5)
    out["input_layer"] = tf.compat.v1.feature_column.input_layer(
        features, [tf.feature_column.embedding_column(column, 4, combiner="sqrtn")])
    out["linear_model"] = tf.compat.v1.feature_column.linear_model(features, [column], units=2)
    return out


created = []  # the feature columns' variables: made in the first trace, then handed back
position = [0]


def creator(next_creator, **kwargs):
    position[0] += 1
    if position[0] > len(created):
        created.append(next_creator(**kwargs))
    return created[position[0] - 1]


def run(compiled):
    def step(features):
        position[0] = 0
        with tf.GradientTape() as tape, tf.variable_creator_scope(creator):
            out = lookups(features)
            loss = tf.add_n([tf.reduce_sum(v * v) for v in out.values()])
        grads = tape.gradient(loss, [table, *parts])
        return out, [tf.convert_to_tensor(g) for g in grads]

    fn = tf.function(compilable(step), jit_compile=True) if compiled else tf.function(step)
    return fn({"ids": tf.constant(ids)})


tf.keras.utils.set_random_seed(1)
want, want_grads = run(False)
tf.keras.utils.set_random_seed(1)
got, got_grads = run(True)
report = {
    name: [list(want[name].shape), list(got[name].shape),
           float(np.abs(want[name].numpy() - got[name].numpy()).max())]
    for name in want
}
report["gradients"] = [0, 0, max(float(np.abs(a.numpy() - b.numpy()).max())
                                 for a, b in zip(want_grads, got_grads))]
with open(sys.argv[1], "w") as f:
    json.dump(report, f)
"""


@pytest.mark.tf
def test_dense_lookups_compile_and_give_tensorflows_results(
    harness: ModuleType, tfcur: str, tmp_path: Path
) -> None:
    import json

    results = tmp_path / "results.json"
    proc = subprocess.run(
        [tfcur, "-c", PROGRAM, str(results)],
        env=harness.tf_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(results.read_text())
    assert len(report) == 19  # 18 lookups and the gradients
    for name, (want_shape, got_shape, difference) in report.items():
        assert want_shape == got_shape, name
        assert difference < 1e-4, (name, difference)
