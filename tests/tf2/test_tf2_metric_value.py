"""The facade on current TensorFlow: an eval_metric_ops entry pairing a metric's update op with
a value computed from the metric's (`(tf.exp(m[0]), m[1])`) fails loudly instead of being
reported as the metric's own value; the metric itself, as `(m[0], m[1])` or unpacked, still
evaluates (TF2003 refuses the derived entry statically too)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

_PROBE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf
    import est2tpu.runtime.tf2 as est

    X = np.linspace(0.0, 1.0, 32, dtype=np.float32)

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(({"x": X}, X)).batch(8)

    def model_fn(features, labels, mode, params):
        loss = tf.reduce_mean(features["x"])
        m = est.metrics.mean(features["x"])
        value, update = est.metrics.mean(features["x"] * 2.0)
        if params["derived"]:
            metrics = {"exp": (tf.exp(m[0]), m[1])}
        else:
            metrics = {"m": (m[0], m[1]), "twice": (value, update)}
        return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    out = {}
    for derived in (False, True):
        estimator = est.Estimator(
            model_fn, model_dir=sys.argv[1] + str(derived), params={"derived": derived}
        )
        try:
            result = estimator.evaluate(input_fn)
            out[str(derived)] = {k: float(v) for k, v in result.items() if k != "global_step"}
        except TypeError as error:
            out[str(derived)] = str(error)
    out["replicas"] = est.strategy().num_replicas_in_sync
    print(json.dumps(out))
    """
)


@pytest.mark.tf
@pytest.mark.parametrize("replicas", ["1", "4"])
def test_derived_metric_value_fails_loudly(
    tfcur: str, harness: ModuleType, tmp_path: Path, replicas: str
) -> None:
    out = harness.run_tf_json(
        _PROBE,
        str(tmp_path / "m"),
        python=tfcur,
        env={"EST2TPU_CPU_REPLICAS": replicas},
        timeout=400,
    )
    assert out["replicas"] == int(replicas)
    assert out["False"]["m"] == pytest.approx(0.5, abs=1e-6)
    assert out["False"]["twice"] == pytest.approx(1.0, abs=1e-6)
    assert isinstance(out["True"], str), out["True"]
    assert "eval_metric_ops['exp'] pairs a metric's update op with another value" in out["True"]
    assert not math.isnan(out["False"]["loss"])
