"""Over several local devices, the facade's distributed iterators end when they are dropped:
TensorFlow's per-device pipelines run without tf.data's autotuning thread, whose waits (up to
a minute each) deleting an iterator used to sit through. The user's own pipeline, on the
host, keeps its options. The training tests over 8 CPU replicas (tests/tf2/test_tf2_e2e.py)
show that the elements are the same."""

from __future__ import annotations

from types import ModuleType

import pytest

_PROBE = """
import json
import tensorflow as tf
import est2tpu.runtime.tf2 as runtime

def model_fn(features, labels, mode):
    raise AssertionError("not called")

estimator = runtime.Estimator(model_fn=model_fn)
strategy = estimator._strategy
dataset = tf.data.Dataset.range(64).batch(8).prefetch(tf.data.AUTOTUNE)
iterator = iter(strategy.experimental_distribute_dataset(dataset))
# TensorFlow's MultiDeviceIterator: one host pipeline, one small pipeline per device.
devices = iterator._iterators[0]._iterator
print(json.dumps({
    "replicas": strategy.num_replicas_in_sync,
    "per_device": [it._dataset.options().autotune.enabled for it in devices._device_iterators],
    "elements": [int(tf.reduce_sum(v)) for v in strategy.experimental_local_results(next(iterator))],
}))
"""


@pytest.mark.tf
def test_per_device_pipelines_run_without_autotuning(harness: ModuleType, tfcur: str) -> None:
    out = harness.run_tf_json(_PROBE, python=tfcur, env={"EST2TPU_CPU_REPLICAS": "2"}, timeout=300)
    assert out["replicas"] == 2
    assert out["per_device"] == [False, False]
    assert out["elements"] == [0 + 1 + 2 + 3, 4 + 5 + 6 + 7]
