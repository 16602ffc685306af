"""`tf.estimator.export` pieces the facade's `export_saved_model` understands."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any


def timestamped_dir(export_dir_base: Any) -> str:
    """`<base>/<seconds since the epoch>`, as TF1's `get_timestamped_export_dir`: a name
    already taken waits for the next second (two exports in one second must not collide:
    train_and_evaluate exports after every evaluation)."""
    for _ in range(10):
        path = os.path.join(os.fspath(export_dir_base), str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name under {export_dir_base}")


class PredictOutput:
    """`tf.estimator.export.PredictOutput`: the tensors a predict signature returns."""

    def __init__(self, outputs: Any) -> None:
        self.outputs = outputs if isinstance(outputs, dict) else {"output": outputs}


class ServingInputReceiver:
    """`tf.estimator.export.ServingInputReceiver` (built in TF1 style, with placeholders).

    As TF1's, a single features tensor reaches the model_fn as `{"feature": tensor}`.
    """

    def __init__(
        self,
        features: Any,
        receiver_tensors: Any,
        receiver_tensors_alternatives: Any = None,
    ) -> None:
        if receiver_tensors_alternatives:
            raise NotImplementedError(
                "est2tpu tf2 facade: receiver_tensors_alternatives is not supported"
            )
        self.features = features if isinstance(features, dict) else {"feature": features}
        self.receiver_tensors = (
            receiver_tensors if isinstance(receiver_tensors, dict) else {"input": receiver_tensors}
        )


def build_parsing_serving_input_receiver_fn(
    feature_spec: Any, default_batch_size: int | None = None
) -> Callable[[], ServingInputReceiver]:
    """`tf.estimator.export.build_parsing_serving_input_receiver_fn`: serialized
    `tf.Example`s fed to `examples` (placeholder `input_example_tensor`), parsed with
    `feature_spec`; the facade runs it in a TF1 graph, as TF1 did."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        import tensorflow as tf

        serialized = tf.compat.v1.placeholder(
            dtype=tf.string, shape=[default_batch_size], name="input_example_tensor"
        )
        features = tf.compat.v1.io.parse_example(serialized, feature_spec)
        return ServingInputReceiver(features, {"examples": serialized})

    return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(
    features: Any, default_batch_size: int | None = None
) -> Callable[[], ServingInputReceiver]:
    """`tf.estimator.export.build_raw_serving_input_receiver_fn`: one placeholder per
    feature, shaped `[default_batch_size, *tensor.shape[1:]]`, fed and passed on as is."""

    def serving_input_receiver_fn() -> ServingInputReceiver:
        import tensorflow as tf

        receivers = {}
        for name, tensor in features.items():
            shape = tf.TensorShape([default_batch_size]).concatenate(tensor.get_shape()[1:])
            try:
                op_name = tensor.op.name
            except AttributeError:  # an eager tensor has no op
                op_name = None
            receivers[name] = tf.compat.v1.placeholder(
                dtype=tensor.dtype, shape=shape, name=op_name
            )
        return ServingInputReceiver(receivers, receivers)

    return serving_input_receiver_fn
