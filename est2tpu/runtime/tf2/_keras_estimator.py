"""`tf.keras.estimator.model_to_estimator` on current TensorFlow: Keras under the strategy.

The Estimator that TF 2.15's `model_to_estimator` built cloned the compiled Keras model in
each mode, started from the model's current weights, trained it with the compiled loss and
optimizer and evaluated the compiled metrics. Here the model is cloned once under
`strategy().scope()` (TPUStrategy, MultiWorkerMirrored, Mirrored or default, see
`strategy()`), given the model's current weights, and compiled with a fresh copy of its
optimizer (same class and config), its loss, loss weights and metrics, with
`steps_per_execution` and `jit_compile` from the facade's RunConfig. `train` / `evaluate` /
`predict` run Keras' `fit` / `evaluate` / `predict` with explicit steps on the dataset each
input function returns, called like Estimator calls it (`params`, `mode`, `config` if it
asks). Checkpoints are object-based (`tf.train.Checkpoint(model=..., optimizer=...)`) under
`model_dir`; a later `train` or a new process resumes from the latest one, as Estimator did
(the model's own weights are only the starting point when `model_dir` has no checkpoint).
`global_step` is the optimizer's iteration count.

The model must be a tf-keras (Keras 2) model, which is what `tf.keras` is in a program that
imports `est2tpu.runtime.tf2` before it first touches `tf.keras` (the facade sets
`TF_USE_LEGACY_KERAS=1` when tf-keras is installed): Keras 2 is what `model_to_estimator`
programs were written for.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from est2tpu.runtime.tf2 import _strategy
from est2tpu.runtime.tf2._core import ModeKeys, input_dataset
from est2tpu.runtime.tf2._core import scalar_summary as _scalar_summary
from est2tpu.runtime.tf2._keras import keras
from est2tpu.runtime.tf2.exporter import _serving_receiver
from est2tpu.runtime.tf2.run_config import RunConfig
from est2tpu.runtime.tf2.training import CheckpointSaves


def _clone_compile_arg(value: Any) -> Any:
    """A fresh copy of a loss or metric object (created in the strategy's scope); strings
    and functions as they are."""
    import tensorflow as tf

    k = keras()

    def clone(item: Any) -> Any:
        if isinstance(item, (k.metrics.Metric, k.losses.Loss)):
            return type(item).from_config(item.get_config())
        return item

    return tf.nest.map_structure(clone, value)


class KerasEstimator:
    """What `model_to_estimator` returns: Estimator's train/evaluate/predict/export on a
    Keras model compiled under the facade's strategy."""

    def __init__(
        self,
        keras_model: Any,
        model_dir: str | None,
        config: RunConfig | None,
        custom_objects: dict[str, Any] | None,
        metric_names_map: dict[str, str] | None,
        export_outputs: dict[str, Any] | None,
    ) -> None:
        import tensorflow as tf

        k = keras()
        if not isinstance(keras_model, k.Model):
            raise TypeError(
                "est2tpu tf2 facade: model_to_estimator needs a tf-keras (Keras 2) model; got "
                f"{type(keras_model).__module__}.{type(keras_model).__name__}. Import "
                "est2tpu.runtime.tf2 before the program first uses tf.keras (it sets "
                "TF_USE_LEGACY_KERAS=1), or set TF_USE_LEGACY_KERAS=1 yourself"
            )
        if not getattr(keras_model, "optimizer", None):
            raise ValueError(
                "The given keras model has not been compiled yet. Please compile the model "
                "with `model.compile()` before calling `model_to_estimator()`."
            )
        if not (keras_model._is_graph_network or isinstance(keras_model, k.Sequential)):
            raise ValueError(
                "est2tpu tf2 facade: model_to_estimator supports Functional and Sequential "
                "Keras models (as TF 2.15 did); a subclassed model needs a hand-written loop"
            )
        self._config = config or RunConfig()
        model_dir = model_dir or self._config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="est2tpu-")
        self._model_dir = os.fspath(model_dir)
        self._config = self._config.replace(model_dir=self._model_dir)
        if self._config.tf_random_seed is not None:
            tf.random.set_seed(self._config.tf_random_seed)
        self._strategy = _strategy.strategy()
        self._metric_names_map = dict(metric_names_map or {})
        self._export_outputs = dict(export_outputs or {})
        args = keras_model._get_compile_args()
        weights = keras_model.get_weights()
        optimizer = keras_model.optimizer
        if type(optimizer).__name__ == "TFOptimizer":
            raise NotImplementedError(
                "est2tpu tf2 facade: model_to_estimator clones the model's optimizer from its "
                "Keras config, which a TF1 optimizer (tf.compat.v1.train.*) lacks; compile the "
                "model with a tf.keras.optimizers.legacy optimizer (TF1's "
                "GradientDescentOptimizer(lr) is legacy SGD(lr))"
            )
        with self._strategy.scope():
            model = k.models.clone_model(keras_model)
            model.set_weights(weights)
            self._optimizer = type(optimizer).from_config(optimizer.get_config())
            model.compile(
                optimizer=self._optimizer,
                loss=_clone_compile_arg(args["loss"]),
                metrics=_clone_compile_arg(args["metrics"]),
                loss_weights=args["loss_weights"],
                weighted_metrics=_clone_compile_arg(args["weighted_metrics"]),
                steps_per_execution=_execution_steps(self._config),
                jit_compile=self._config.jit_compile and self._strategy.num_replicas_in_sync == 1,
            )
            if self._config.jit_compile and self._strategy.num_replicas_in_sync > 1:
                _compile_replica_step(model)
            # Create the optimizer's slots now, so a checkpoint restores them too (a
            # tf.keras.optimizers.legacy optimizer creates them with _create_all_weights).
            if hasattr(self._optimizer, "build"):
                self._optimizer.build(model.trainable_variables)
            else:
                self._optimizer._create_all_weights(model.trainable_variables)
        self._model = model
        self._output_names = list(model.output_names)
        self._checkpoint = tf.train.Checkpoint(model=model, optimizer=self._optimizer)
        self._manager = tf.train.CheckpointManager(
            self._checkpoint,
            self._model_dir,
            max_to_keep=self._config.keep_checkpoint_max,
            checkpoint_name="ckpt",
        )
        latest = tf.train.latest_checkpoint(self._model_dir)
        if latest is not None:
            self._checkpoint.restore(latest).expect_partial()

    # -- what tf.estimator.Estimator has -------------------------------------------------

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def model(self) -> Any:
        """The Keras model this estimator trains (the clone under the strategy's scope)."""
        return self._model

    def latest_checkpoint(self) -> str | None:
        import tensorflow as tf

        path: str | None = tf.train.latest_checkpoint(self._model_dir)
        return path

    def get_variable_value(self, name: str) -> Any:
        for v in self._model.weights:
            if v.name in (name, f"{name}:0"):
                return v.numpy()
        raise ValueError(f"no variable named {name!r}")

    @property
    def global_step(self) -> int:
        return int(self._optimizer.iterations.numpy())

    def _dataset(self, input_fn: Callable[..., Any], mode: str) -> Any:
        return input_dataset(input_fn, {"params": {}, "mode": mode, "config": self._config})

    def _save(self) -> None:
        self._manager.save(checkpoint_number=self.global_step)

    # -- train / evaluate / predict ------------------------------------------------------

    def train(
        self,
        input_fn: Callable[..., Any],
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> KerasEstimator:
        """Train for `steps` more steps, or until the global step reaches `max_steps`
        (`fit` with `steps_per_epoch`; without either, until the input ends).

        `saving_listeners` are called around every checkpoint as TF1's CheckpointSaverHook
        calls them (the first at the starting step), with `session=None`; an `after_save`
        returning True stops training."""
        import tensorflow as tf

        if hooks:
            raise NotImplementedError("est2tpu tf2 facade: train(hooks=...) is not supported")
        listeners = list(saving_listeners or ())
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        start = self.global_step
        if max_steps is not None:
            todo: int | None = max_steps - start
        else:
            todo = steps
        if todo is not None and todo <= 0:
            return self
        dataset = self._dataset(input_fn, ModeKeys.TRAIN)
        saver = CheckpointSaves(self._save, lambda: self.global_step, listeners)
        saver.begin()
        callbacks = []
        every = self._config.save_checkpoints_steps
        if every:
            callbacks.append(_save_every(self, every, saver))
        history = self._model.fit(
            dataset, epochs=1, steps_per_epoch=todo, verbose=0, callbacks=callbacks
        )
        saver.end()
        losses = history.history.get("loss") or []
        if losses:
            with tf.summary.create_file_writer(self._model_dir).as_default():
                _scalar_summary("loss", losses[-1], self.global_step)
        return self

    def evaluate(
        self,
        input_fn: Callable[..., Any],
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Evaluate for `steps` batches (or until the input ends): the compiled metrics
        (renamed by `metric_names_map`), `loss` and `global_step`, as Estimator returned."""
        import numpy as np
        import tensorflow as tf

        if hooks:
            raise NotImplementedError("est2tpu tf2 facade: evaluate(hooks=...) is not supported")
        if checkpoint_path is not None:
            self._checkpoint.restore(checkpoint_path).expect_partial()
        dataset = self._dataset(input_fn, ModeKeys.EVAL)
        raw = self._model.evaluate(dataset, steps=steps, verbose=0, return_dict=True)
        results: dict[str, Any] = {}
        for key, value in raw.items():
            key = self._metric_names_map.get(key, key)
            results[key] = np.float32(value)
        results["global_step"] = np.int64(self.global_step)
        eval_dir = os.path.join(self._model_dir, "eval" if name is None else f"eval_{name}")
        with tf.summary.create_file_writer(eval_dir).as_default():
            for key, value in results.items():
                if key != "global_step":
                    _scalar_summary(key, value, self.global_step)
        return results

    def _outputs(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, (list, tuple)):
            raw = [raw]
        return dict(zip(self._output_names, raw))

    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yield `{output name: value}` for each example (or each batch) the input holds."""
        import tensorflow as tf

        if hooks:
            raise NotImplementedError("est2tpu tf2 facade: predict(hooks=...) is not supported")
        if checkpoint_path is not None:
            self._checkpoint.restore(checkpoint_path).expect_partial()
        dataset = self._dataset(input_fn, ModeKeys.PREDICT)
        outputs = self._outputs(self._model.predict(dataset, verbose=0))
        if predict_keys is not None:
            keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
            outputs = {key: outputs[key] for key in keys}
        if yield_single_examples:
            size = len(next(iter(outputs.values())))
            for i in range(size):
                yield {key: value[i] for key, value in outputs.items()}
            return
        sizes = dataset.map(lambda *e: tf.shape(tf.nest.flatten(e)[0])[0])
        at = 0
        for n in sizes.as_numpy_iterator():
            yield {key: value[at : at + n] for key, value in outputs.items()}
            at += int(n)

    # -- export -------------------------------------------------------------------------

    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Any = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """A SavedModel whose `serving_default` runs the model on the receiver's features;
        its outputs are the model's outputs by name (and `export_outputs`' keys)."""
        import tensorflow as tf

        if assets_extra or as_text or experimental_mode != ModeKeys.PREDICT:
            raise NotImplementedError(
                "est2tpu tf2 facade: export_saved_model supports PREDICT exports only, "
                "without assets_extra/as_text"
            )
        if checkpoint_path is not None:
            self._checkpoint.restore(checkpoint_path).expect_partial()
        receive, input_spec, _ = _serving_receiver(serving_input_receiver_fn)
        model = self._model
        names = self._output_names

        def serve(*inputs: Any) -> Any:
            features = receive(*inputs)
            return self._outputs(model(features, training=False)) if names else {}

        serving = tf.function(serve, input_signature=input_spec, autograph=False)
        module = tf.Module()
        module.model = model
        module.receive = receive
        from est2tpu.runtime.tf2.export import timestamped_dir

        export_dir = timestamped_dir(export_dir_base)
        with self._strategy.scope():
            tf.saved_model.save(
                module, export_dir, signatures={"serving_default": serving.get_concrete_function()}
            )
        return export_dir.encode()

    export_savedmodel = export_saved_model


def _execution_steps(config: RunConfig) -> int:
    """Keras runs `steps_per_execution` steps between callbacks: a divisor of
    `save_checkpoints_steps`, so checkpoints (and train_and_evaluate's evaluations) land on
    the steps TF1 saved at."""
    every = config.save_checkpoints_steps
    return math.gcd(config.steps_per_execution, every) if every else config.steps_per_execution


def _save_every(estimator: KerasEstimator, every: int, saver: CheckpointSaves) -> Any:
    """A Keras callback saving a checkpoint each time the step passes a multiple of `every`
    (with steps_per_execution, Keras reports every that many steps)."""
    k = keras()

    class SaveEvery(k.callbacks.Callback):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.last = estimator.global_step // every

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = estimator.global_step // every
            if now != self.last:
                self.last = now
                if saver.save():
                    self.model.stop_training = True

    return SaveEvery()


def model_to_estimator(
    keras_model: Any = None,
    keras_model_path: str | None = None,
    custom_objects: dict[str, Any] | None = None,
    model_dir: str | None = None,
    config: RunConfig | None = None,
    checkpoint_format: str = "checkpoint",
    metric_names_map: dict[str, str] | None = None,
    export_outputs: dict[str, Any] | None = None,
) -> KerasEstimator:
    """`tf.keras.estimator.model_to_estimator` for the tf2 facade (see the module doc).

    `checkpoint_format` is accepted: checkpoints are object-based (TF 2.15's "checkpoint").
    `export_outputs` is accepted; the export's outputs are the model's, by output name.
    """
    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specify either `keras_model` or `keras_model_path`, not both.")
    if checkpoint_format not in ("checkpoint", "saver"):
        raise ValueError(
            f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}'
        )
    if keras_model is None:
        keras_model = keras().models.load_model(keras_model_path, custom_objects=custom_objects)
    return KerasEstimator(
        keras_model, model_dir, config, custom_objects, metric_names_map, export_outputs
    )


def _compile_replica_step(model: Any) -> None:
    """Keras' `train_step` under XLA over several local replicas: the forward and backward
    pass compiled, on the replica's device; the optimizer's cross-replica sum and the
    metrics outside the compiled program (see `_xla`: a collective cannot run inside it)."""
    import tensorflow as tf

    from est2tpu.runtime.tf2._strategy import on_replica_device

    def forward_backward(x: Any, y: Any, sample_weight: Any) -> Any:
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = model.compute_loss(x, y, y_pred, sample_weight)
        grads = tape.gradient(loss, model.trainable_variables)
        connected[:] = [i for i, g in enumerate(grads) if g is not None]
        return y_pred, [g for g in grads if g is not None]

    connected: list[int] = []  # which variables have a gradient, known once traced
    program = on_replica_device(tf.function(forward_backward, jit_compile=True, autograph=False))

    def train_step(data: Any) -> Any:
        x, y, sample_weight = keras().utils.unpack_x_y_sample_weight(data)
        y_pred, grads = program(x, y, sample_weight)
        variables = model.trainable_variables
        model.optimizer.apply_gradients(zip(grads, [variables[i] for i in connected]))
        return model.compute_metrics(x, y, y_pred, sample_weight)

    model.train_step = train_step
