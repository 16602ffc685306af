"""`tf.estimator.LatestExporter` and `FinalExporter` for the tf2 facade (TensorFlow's
estimator/exporter.py), and the serving receiver the exports run."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from est2tpu.runtime.tf2._core import ModeKeys, invoke

# The facade's Estimator (its module imports this one): annotated as Any.
Estimator = Any


def _serving_receiver(
    serving_input_receiver_fn: Callable[[], Any],
) -> tuple[Any, list[Any], Any]:
    """The receiver as a function of its receiver tensors, their specs, its features' specs.

    The serving_input_receiver_fn may build TF1 placeholders: it runs in a TF1 graph
    (`tf.compat.v1.wrap_function`) and is pruned to a function of its receiver tensors.
    """
    import tensorflow as tf

    def receiver_structure() -> Any:
        receiver = serving_input_receiver_fn()
        return {"receivers": receiver.receiver_tensors, "features": receiver.features}

    wrapped = tf.compat.v1.wrap_function(receiver_structure, [])
    outputs = wrapped.structured_outputs
    receiver_names = sorted(outputs["receivers"])
    placeholders = [outputs["receivers"][k] for k in receiver_names]
    receive = wrapped.prune(feeds=placeholders, fetches=outputs["features"])
    input_spec = [
        tf.TensorSpec(p.shape, p.dtype, name=k) for k, p in zip(receiver_names, placeholders)
    ]
    features_spec = tf.nest.map_structure(
        lambda t: tf.TensorSpec(t.shape, t.dtype), outputs["features"]
    )
    return receive, input_spec, features_spec


class LatestExporter:
    """`tf.estimator.LatestExporter` (exports_to_keep is honoured)."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Any = None,
        as_text: bool = False,
        exports_to_keep: int = 5,
    ) -> None:
        self.name = name
        self._fn = serving_input_receiver_fn
        self._keep = exports_to_keep

    def export(
        self,
        estimator: Estimator,
        export_path: str,
        checkpoint_path: Any,
        eval_result: Any,
        is_the_final_export: bool,
    ) -> bytes | None:
        out: bytes = estimator.export_saved_model(export_path, self._fn)
        if self._keep:
            versions = sorted(d for d in os.listdir(export_path) if d.isdigit())
            import shutil

            for old in versions[: -self._keep]:
                shutil.rmtree(os.path.join(export_path, old), ignore_errors=True)
        return out


class FinalExporter(LatestExporter):
    """`tf.estimator.FinalExporter`: exports only the final model."""

    def __init__(
        self,
        name: str,
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Any = None,
        as_text: bool = False,
    ) -> None:
        super().__init__(name, serving_input_receiver_fn, exports_to_keep=0)

    def export(
        self,
        estimator: Estimator,
        export_path: str,
        checkpoint_path: Any,
        eval_result: Any,
        is_the_final_export: bool,
    ) -> bytes | None:
        if not is_the_final_export:
            return None
        return super().export(
            estimator, export_path, checkpoint_path, eval_result, is_the_final_export
        )


def export_saved_model(
    estimator: Estimator,
    export_dir_base: str,
    serving_input_receiver_fn: Callable[[], Any],
    assets_extra: Any = None,
    as_text: bool = False,
    checkpoint_path: str | None = None,
    experimental_mode: str = ModeKeys.PREDICT,
) -> bytes:
    """Write a SavedModel whose `serving_default` runs the model_fn in PREDICT mode.

    The serving_input_receiver_fn may build TF1 placeholders: it runs in a TF1 graph
    (`tf.compat.v1.wrap_function`) and is pruned to a function of its receiver tensors.
    Returns the export directory as bytes, like Estimator.
    """
    import tensorflow as tf

    if assets_extra or as_text or experimental_mode != ModeKeys.PREDICT:
        raise NotImplementedError(
            "est2tpu tf2 facade: export_saved_model supports PREDICT exports only, "
            "without assets_extra/as_text"
        )

    receive, input_spec, features_spec = _serving_receiver(serving_input_receiver_fn)
    estimator._build(
        ModeKeys.PREDICT,
        tf.data.Dataset.from_tensors(
            tf.nest.map_structure(
                lambda s: tf.zeros([d or 1 for d in s.shape], s.dtype), features_spec
            )
        ),
    )
    if checkpoint_path is not None:
        estimator._checkpoint.restore(checkpoint_path).expect_partial()
    state = estimator._ensure_state()

    def serve(*inputs: Any) -> Any:
        features = receive(*inputs)
        spec, _inv = invoke(
            state,
            ModeKeys.PREDICT,
            False,
            lambda: estimator._call_model_fn(features, None, ModeKeys.PREDICT),
        )
        export_outputs = spec.export_outputs or {}
        if export_outputs:
            key = "serving_default" if "serving_default" in export_outputs else min(export_outputs)
            return dict(export_outputs[key].outputs)
        predictions = spec.predictions
        return dict(predictions) if isinstance(predictions, dict) else {"output": predictions}

    serving = tf.function(serve, input_signature=input_spec, autograph=False)
    module = tf.Module()
    module.model = tf.train.Checkpoint(
        **{k.replace("/", "_"): v for k, v in state.trackables().items()}
    )
    module.receive = receive
    from est2tpu.runtime.tf2.export import timestamped_dir

    export_dir = timestamped_dir(export_dir_base)
    with estimator._strategy.scope():
        tf.saved_model.save(
            module, export_dir, signatures={"serving_default": serving.get_concrete_function()}
        )
    return export_dir.encode()
