"""Build a ``TPUEstimator`` from a compiled Keras model (``model_to_estimator``).

This is what est2tpu emits for ``tf.keras.estimator.model_to_estimator``.  It
mirrors ``tensorflow_estimator``'s own ``keras_lib.model_to_estimator`` (TF
2.15), and reuses its model cloning (``_clone_and_build_model``), so that the
graph built in each mode is the one the original Estimator built: the same
variables, the same compiled loss (``model.total_loss``), the same metric
objects.  What differs is what TPU needs:

- the model_fn takes ``params`` and returns a ``TPUEstimatorSpec``;
- the optimizer is a ``tf.compat.v1.train`` optimizer (the only kind
  ``CrossShardOptimizer`` can wrap), built from the Keras optimizer's
  hyperparameters, wrapped in ``CrossShardOptimizer`` only on TPU;
- compiled metrics are computed in a ``metric_fn`` (``eval_metrics``);
- the model's current weights are saved once to ``model_dir/keras`` and are
  the warm start of the first training run, as Keras' ``_save_first_checkpoint``
  does.

Optimizer mapping (TF1 class, hyperparameters copied exactly):

- ``SGD`` without momentum -> ``GradientDescentOptimizer`` (same kernel as Keras), with
  or without ``nesterov`` (Nesterov momentum 0 steps by ``-lr * g``).
- ``SGD`` with momentum -> a ``MomentumOptimizer`` whose update is Keras'
  (``ResourceApplyKerasMomentum``: ``accum = m*accum - lr*g; var += accum``).
  The stock TF1 kernel (``accum = m*accum + g; var -= lr*accum``) is the same
  rule algebraically but rounds differently, so results would drift apart in
  the last bits.
- ``Adam`` -> ``AdamOptimizer`` with Keras' ``beta_1``/``beta_2``/``epsilon``
  (Keras' epsilon defaults to 1e-7, TF1's to 1e-8), bias-correction powers
  computed as Keras does (``beta ** (global_step + 1)``).
- ``RMSprop`` -> ``RMSPropOptimizer`` with Keras' ``rho``/``momentum``/
  ``epsilon``/``centered``, with Keras' update: mean-square slot starting at 0
  (TF1 starts it at 1) and, without momentum, epsilon added outside the square
  root (TF1 adds it inside).
- ``Adagrad`` -> ``AdagradOptimizer`` with Keras' ``initial_accumulator_value``
  and Keras' epsilon (``ResourceApplyAdagradV2``; TF1's kernel has no epsilon).

- A TF1 optimizer the model was compiled with (Keras wraps it in a ``TFOptimizer``) ->
  that very optimizer, which the original's training applied too.

- A legacy optimizer's ``decay`` -> the learning rate through TF1's
  ``inverse_time_decay(lr, global_step, 1, decay)``: Keras' ``lr / (1 + decay * iterations)``.

Anything else (other classes, ``amsgrad``, ``weight_decay``, gradient clipping,
EMA) raises ``ValueError``: there is no exact TF1 equivalent.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

__all__ = ["model_to_estimator", "tf1_optimizer"]

# Keras optimizer settings that have no TF1 counterpart: any of them set (not
# None/0/False) makes the optimizer unmappable.
_UNMAPPABLE_SETTINGS = (
    "weight_decay",
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "amsgrad",
)
# Keras optimizer classes (lower-cased names) with an exact TF1 mapping.
_MAPPED = ("sgd", "adam", "rmsprop", "adagrad")


def _unmappable(name: str, why: str) -> ValueError:
    return ValueError(
        f"est2tpu.runtime.model_to_estimator: cannot map the Keras optimizer {name} "
        f"to an exact tf.compat.v1.train optimizer ({why}); compile the model with "
        "SGD, Adam, RMSprop or Adagrad without weight decay, clipping, EMA or amsgrad, "
        "or write the model_fn by hand"
    )


def _optimizer_classes() -> dict[str, type]:
    """TF1 optimizer subclasses that apply Keras' exact update rules (built lazily)."""
    import tensorflow as tf

    v1 = tf.compat.v1.train

    def cast(value: Any, dtype: Any) -> Any:
        return tf.cast(value, dtype.base_dtype)

    class KerasMomentumOptimizer(v1.MomentumOptimizer):  # type: ignore[misc,name-defined]
        """``MomentumOptimizer`` with Keras' update (``ResourceApplyKerasMomentum``)."""

        def _resource_apply_dense(self, grad: Any, var: Any) -> Any:
            return tf.raw_ops.ResourceApplyKerasMomentum(
                var=var.handle,
                accum=self.get_slot(var, "momentum").handle,
                lr=cast(self._learning_rate_tensor, grad.dtype),
                grad=grad,
                momentum=cast(self._momentum_tensor, grad.dtype),
                use_locking=self._use_locking,
                use_nesterov=self._use_nesterov,
            )

        def _resource_apply_sparse(self, grad: Any, var: Any, indices: Any) -> Any:
            return tf.raw_ops.ResourceSparseApplyKerasMomentum(
                var=var.handle,
                accum=self.get_slot(var, "momentum").handle,
                lr=cast(self._learning_rate_tensor, grad.dtype),
                grad=grad,
                indices=indices,
                momentum=cast(self._momentum_tensor, grad.dtype),
                use_locking=self._use_locking,
                use_nesterov=self._use_nesterov,
            )

        def _apply_dense(self, grad: Any, var: Any) -> Any:
            raise NotImplementedError("Keras momentum needs resource variables")

        _apply_sparse = _apply_dense

    class KerasAdamOptimizer(v1.AdamOptimizer):  # type: ignore[misc,name-defined]
        """``AdamOptimizer`` whose bias correction uses ``beta ** (global_step + 1)``.

        Keras computes the powers from its iteration counter (the Estimator's
        global step); TF1 multiplies accumulators, which rounds differently.
        Without a global step the TF1 accumulators are used.
        """

        _est2tpu_step: Any = None

        def apply_gradients(
            self, grads_and_vars: Any, global_step: Any = None, name: str | None = None
        ) -> Any:
            self._est2tpu_step = global_step
            return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

        def _powers(self, dtype: Any) -> tuple[Any, Any]:
            if self._est2tpu_step is None:
                b1, b2 = self._get_beta_accumulators()
                return cast(b1, dtype), cast(b2, dtype)
            step = tf.cast(self._est2tpu_step + 1, dtype.base_dtype)
            return (
                tf.pow(cast(self._beta1_t, dtype), step),
                tf.pow(cast(self._beta2_t, dtype), step),
            )

        def _resource_apply_dense(self, grad: Any, var: Any) -> Any:
            beta1_power, beta2_power = self._powers(grad.dtype)
            return tf.raw_ops.ResourceApplyAdam(
                var=var.handle,
                m=self.get_slot(var, "m").handle,
                v=self.get_slot(var, "v").handle,
                beta1_power=beta1_power,
                beta2_power=beta2_power,
                lr=cast(self._lr_t, grad.dtype),
                beta1=cast(self._beta1_t, grad.dtype),
                beta2=cast(self._beta2_t, grad.dtype),
                epsilon=cast(self._epsilon_t, grad.dtype),
                grad=grad,
                use_locking=self._use_locking,
            )

        def _resource_apply_sparse(self, grad: Any, var: Any, indices: Any) -> Any:
            # Keras' sparse Adam, written out as it is in keras.optimizers.legacy.Adam.
            dtype = grad.dtype
            beta1_power, beta2_power = self._powers(dtype)
            beta1 = cast(self._beta1_t, dtype)
            beta2 = cast(self._beta2_t, dtype)
            epsilon = cast(self._epsilon_t, dtype)
            lr = cast(self._lr_t, dtype) * (tf.sqrt(1 - beta2_power) / (1 - beta1_power))
            m = self.get_slot(var, "m")
            m_t = m.assign(m * beta1, use_locking=self._use_locking)
            with tf.control_dependencies([m_t]):
                m_t = m.scatter_add(tf.IndexedSlices(grad * (1 - beta1), indices))
            v = self.get_slot(var, "v")
            v_t = v.assign(v * beta2, use_locking=self._use_locking)
            with tf.control_dependencies([v_t]):
                v_t = v.scatter_add(tf.IndexedSlices((grad * grad) * (1 - beta2), indices))
            var_update = var.assign_sub(
                lr * m_t / (tf.sqrt(v_t) + epsilon), use_locking=self._use_locking
            )
            return tf.group(var_update, m_t, v_t)

        def _finish(self, update_ops: Any, name_scope: str) -> Any:
            if self._est2tpu_step is None:
                return super()._finish(update_ops, name_scope)
            return tf.group(*update_ops, name=name_scope)

        def _apply_dense(self, grad: Any, var: Any) -> Any:
            raise NotImplementedError("Keras Adam needs resource variables")

        _apply_sparse = _apply_dense

    class KerasRMSPropOptimizer(v1.RMSPropOptimizer):  # type: ignore[misc,name-defined]
        """``RMSPropOptimizer`` with Keras' update (rms from 0; eps outside sqrt w/o momentum)."""

        def _create_slots(self, var_list: Any) -> None:
            for v in var_list:
                self._zeros_slot(v, "rms", self._name)
                self._zeros_slot(v, "momentum", self._name)
                if self._centered:
                    self._zeros_slot(v, "mg", self._name)

        def _resource_apply_dense(self, grad: Any, var: Any) -> Any:
            dtype = grad.dtype
            lr = cast(self._learning_rate_tensor, dtype)
            rho = cast(self._decay_tensor, dtype)
            epsilon = cast(self._epsilon_tensor, dtype)
            rms = self.get_slot(var, "rms")
            if self._momentum > 0:
                mom = self.get_slot(var, "momentum")
                momentum = cast(self._momentum_tensor, dtype)
                if self._centered:
                    return tf.raw_ops.ResourceApplyCenteredRMSProp(
                        var=var.handle,
                        mg=self.get_slot(var, "mg").handle,
                        ms=rms.handle,
                        mom=mom.handle,
                        lr=lr,
                        rho=rho,
                        momentum=momentum,
                        epsilon=epsilon,
                        grad=grad,
                        use_locking=self._use_locking,
                    )
                return tf.raw_ops.ResourceApplyRMSProp(
                    var=var.handle,
                    ms=rms.handle,
                    mom=mom.handle,
                    lr=lr,
                    rho=rho,
                    momentum=momentum,
                    epsilon=epsilon,
                    grad=grad,
                    use_locking=self._use_locking,
                )
            one_minus_rho = 1.0 - rho
            rms_t = rms.assign(
                rho * rms + one_minus_rho * tf.square(grad), use_locking=self._use_locking
            )
            denom_t = rms_t
            if self._centered:
                mg = self.get_slot(var, "mg")
                mg_t = mg.assign(rho * mg + one_minus_rho * grad, use_locking=self._use_locking)
                denom_t = rms_t - tf.square(mg_t)
            var_t = var - lr * grad / (tf.sqrt(denom_t) + epsilon)
            return var.assign(var_t, use_locking=self._use_locking).op

        def _resource_apply_sparse(self, grad: Any, var: Any, indices: Any) -> Any:
            raise NotImplementedError(
                "est2tpu.runtime: RMSprop with sparse gradients (embeddings) is not mapped"
            )

        def _apply_dense(self, grad: Any, var: Any) -> Any:
            raise NotImplementedError("Keras RMSprop needs resource variables")

        _apply_sparse = _apply_dense

    class KerasAdagradOptimizer(v1.AdagradOptimizer):  # type: ignore[misc,name-defined]
        """``AdagradOptimizer`` with Keras' epsilon (``ResourceApplyAdagradV2``)."""

        def __init__(
            self,
            learning_rate: Any,
            initial_accumulator_value: float,
            epsilon: float,
            name: str = "Adagrad",
        ) -> None:
            super().__init__(learning_rate, initial_accumulator_value, name=name)
            self._keras_epsilon = epsilon

        def _resource_apply_dense(self, grad: Any, var: Any) -> Any:
            return tf.raw_ops.ResourceApplyAdagradV2(
                var=var.handle,
                accum=self.get_slot(var, "accumulator").handle,
                lr=cast(self._learning_rate_tensor, grad.dtype),
                epsilon=tf.constant(self._keras_epsilon, grad.dtype.base_dtype),
                grad=grad,
                use_locking=self._use_locking,
            )

        def _resource_apply_sparse(self, grad: Any, var: Any, indices: Any) -> Any:
            return tf.raw_ops.ResourceSparseApplyAdagradV2(
                var=var.handle,
                accum=self.get_slot(var, "accumulator").handle,
                lr=cast(self._learning_rate_tensor, grad.dtype),
                epsilon=tf.constant(self._keras_epsilon, grad.dtype.base_dtype),
                grad=grad,
                indices=indices,
                use_locking=self._use_locking,
            )

        def _apply_dense(self, grad: Any, var: Any) -> Any:
            raise NotImplementedError("Keras Adagrad needs resource variables")

        _apply_sparse = _apply_dense

    return {
        "momentum": KerasMomentumOptimizer,
        "adam": KerasAdamOptimizer,
        "rmsprop": KerasRMSPropOptimizer,
        "adagrad": KerasAdagradOptimizer,
    }


_CLASSES: dict[str, type] = {}


def _classes() -> dict[str, type]:
    if not _CLASSES:
        _CLASSES.update(_optimizer_classes())
    return _CLASSES


def _wrapped_tf1(optimizer: Any) -> Any:
    """The ``tf.compat.v1.train`` optimizer a Keras ``TFOptimizer`` wraps (a model compiled
    with a TF1 optimizer), or None."""
    import tensorflow as tf

    wrapped = getattr(optimizer, "optimizer", None)
    if type(optimizer).__name__ == "TFOptimizer" and isinstance(
        wrapped, tf.compat.v1.train.Optimizer
    ):
        return wrapped
    return None


def _keras_optimizer_config(optimizer: Any) -> tuple[str, dict[str, Any]]:
    """Return (Keras class name, config) of a Keras optimizer, new or legacy."""
    import tensorflow as tf

    name = type(optimizer).__name__
    try:
        # Keras reads variable hyperparameters with .numpy(): lift out of any graph.
        with tf.init_scope():
            config = dict(optimizer.get_config())
    except (NotImplementedError, AttributeError) as exc:
        raise _unmappable(name, "it has no get_config()") from exc
    for key in _UNMAPPABLE_SETTINGS:
        value = config.get(key)
        if value:
            raise _unmappable(name, f"{key}={value!r}")
    if name.lower() not in _MAPPED:
        raise _unmappable(name, "no exact TF1 equivalent is known")
    return name, config


def tf1_optimizer(keras_optimizer: Any, global_step: Any = None) -> Any:
    """Return the ``tf.compat.v1.train`` optimizer equivalent to ``keras_optimizer``.

    Must be called inside the graph that will train (the model_fn), with a
    ``keras_optimizer`` created outside it (Keras serializes its
    hyperparameters eagerly); a learning rate schedule is evaluated at
    ``global_step``.  See the module
    docstring for the mapping; anything not mapped exactly raises ValueError.
    """
    wrapped = _wrapped_tf1(keras_optimizer)
    if wrapped is not None:
        return wrapped
    name, config = _keras_optimizer_config(keras_optimizer)
    return _tf1_from_config(name, config, global_step)


def _tf1_from_config(name: str, config: dict[str, Any], global_step: Any = None) -> Any:
    import tensorflow as tf

    learning_rate = config.get("learning_rate")
    if isinstance(learning_rate, dict):
        schedule = tf.keras.optimizers.schedules.deserialize(learning_rate)
        if global_step is None:
            global_step = tf.compat.v1.train.get_or_create_global_step()
        learning_rate = schedule(global_step)
    elif learning_rate is None:
        raise _unmappable(name, "no learning_rate in its config")
    else:
        learning_rate = float(learning_rate)
    decay = float(config.get("decay") or 0.0)
    if decay:
        # A legacy Keras optimizer's `decay`: lr / (1 + decay * iterations), TF1's
        # inverse_time_decay over one step (not staircase).
        if global_step is None:
            global_step = tf.compat.v1.train.get_or_create_global_step()
        learning_rate = tf.compat.v1.train.inverse_time_decay(learning_rate, global_step, 1, decay)
    v1 = tf.compat.v1.train
    kind = name.lower()
    if kind == "sgd":
        momentum = float(config.get("momentum", 0.0))
        nesterov = bool(config.get("nesterov", False))
        if momentum == 0.0:
            # Nesterov with momentum 0 steps by -lr * grad: plain gradient descent.
            return v1.GradientDescentOptimizer(learning_rate)
        return _classes()["momentum"](learning_rate, momentum, use_nesterov=nesterov)
    if kind == "adam":
        return _classes()["adam"](
            learning_rate,
            beta1=float(config["beta_1"]),
            beta2=float(config["beta_2"]),
            epsilon=float(config["epsilon"]),
        )
    if kind == "rmsprop":
        return _classes()["rmsprop"](
            learning_rate,
            decay=float(config["rho"]),
            momentum=float(config.get("momentum", 0.0)),
            epsilon=float(config["epsilon"]),
            centered=bool(config.get("centered", False)),
        )
    if kind == "adagrad":
        return _classes()["adagrad"](
            learning_rate,
            initial_accumulator_value=float(config["initial_accumulator_value"]),
            epsilon=float(config["epsilon"]),
        )
    raise _unmappable(name, "no exact TF1 equivalent is known")


def _legacy_optimizer(optimizer: Any) -> Any:
    """The ``keras.optimizers.legacy`` optimizer Keras' graph-mode cloning needs."""
    import tensorflow as tf

    if isinstance(optimizer, tf.keras.optimizers.experimental.Optimizer):
        return tf.keras.__internal__.optimizers.convert_to_legacy_optimizer(optimizer)
    return optimizer


class _SwapOptimizer:
    """Context: give ``model`` a legacy optimizer while it is cloned, then restore."""

    def __init__(self, model: Any, optimizer: Any) -> None:
        self._model = model
        self._optimizer = optimizer
        self._saved: Any = None

    def __enter__(self) -> None:
        self._saved = self._model.optimizer
        self._model.optimizer = self._optimizer

    def __exit__(self, *exc: object) -> None:
        self._model.optimizer = self._saved


def _make_model_fn(
    keras_model: Any,
    legacy_optimizer: Any,
    custom_objects: Any,
    metric_names_map: dict[str, str] | None,
    export_outputs: dict[str, Any] | None,
) -> Any:
    import tensorflow as tf
    from tensorflow_estimator.python.estimator import keras_lib

    modes = tf.estimator.ModeKeys
    tpu = tf.compat.v1.estimator.tpu
    # A TF1 optimizer (in Keras' TFOptimizer) is used as it is: Keras clones the model
    # around the same object, and has no config to give.
    wrapped = _wrapped_tf1(legacy_optimizer)
    optimizer_config = None if wrapped is not None else legacy_optimizer.get_config()
    # Read now, eagerly: Keras cannot serialize its hyperparameters in a graph.
    optimizer_name, tf1_config = (
        ("", {}) if wrapped is not None else _keras_optimizer_config(legacy_optimizer)
    )
    default_key = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY

    def model_fn(features: Any, labels: Any, mode: Any, params: Any) -> Any:
        on_tpu = bool((params or {}).get("use_tpu", False))
        with _SwapOptimizer(keras_model, legacy_optimizer):
            model = keras_lib._clone_and_build_model(
                mode=mode,
                keras_model=keras_model,
                custom_objects=custom_objects,
                features=features,
                labels=labels,
                optimizer_config=optimizer_config,
            )
        predictions = dict(zip(model.output_names, model.outputs))
        spec: dict[str, Any] = {"mode": mode, "predictions": predictions}
        if mode != modes.PREDICT:
            spec["loss"] = model.total_loss
        if mode == modes.EVAL:
            spec["eval_metrics"] = _eval_metrics(model, metric_names_map)
        if mode == modes.TRAIN:
            global_step = tf.compat.v1.train.get_or_create_global_step()
            optimizer = (
                wrapped
                if wrapped is not None
                else _tf1_from_config(optimizer_name, tf1_config, global_step)
            )
            if on_tpu:
                optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
            minimize = optimizer.minimize(
                model.total_loss,
                global_step=global_step,
                var_list=model._collected_trainable_weights,
            )
            # Layer updates (BatchNormalization moving statistics) as Keras'
            # train function runs them.
            updates = model.get_updates_for(None) + model.get_updates_for(model.inputs)
            spec["train_op"] = tf.group(minimize, *updates)
        final_exports = {default_key: tf.estimator.export.PredictOutput(predictions)}
        for key, output_cls in (export_outputs or {}).items():
            if key not in predictions:
                raise KeyError(
                    f"export_outputs key {key!r} is not an output of the Keras model "
                    f"(outputs: {sorted(predictions)})"
                )
            final_exports[key] = output_cls(predictions[key])
        spec["export_outputs"] = final_exports
        return tpu.TPUEstimatorSpec(**spec)

    return model_fn


def _eval_metrics(model: Any, metric_names_map: dict[str, str] | None) -> Any:
    """``(metric_fn, tensors)`` computing the model's compiled metrics on the host."""
    import tensorflow as tf
    from keras.src import metrics as metrics_module

    compiled = list(getattr(model, "_compile_metric_functions", None) or [])
    if not getattr(model, "_compile_metrics", None) or not compiled:
        return None
    names = [m.name for m in compiled]
    if metric_names_map:
        unknown = set(names) - set(metric_names_map)
        extra = set(metric_names_map) - set(names)
        if unknown or extra:
            raise ValueError(
                f"Invalid metric_names_map: model metrics {sorted(names)}, "
                f"map keys {sorted(metric_names_map)}"
            )
        names = [metric_names_map[n] for n in names]
    # Which output and target each metric belongs to (Keras v1 compile records it).
    output_of: dict[int, int] = {}
    for index, per_output in enumerate(getattr(model, "_per_output_metrics", []) or []):
        for metric in (per_output or {}).values():
            output_of[id(metric)] = index
    slots = [output_of.get(id(m), 0) for m in compiled]
    templates = [metrics_module.clone_metric(m) for m in compiled]
    targets = list(model._targets)
    outputs = list(model.outputs)
    tensors: dict[str, Any] = {}
    for i in sorted(set(slots)):
        tensors[f"y_true_{i}"] = targets[i]
        tensors[f"y_pred_{i}"] = outputs[i]

    def metric_fn(**kwargs: Any) -> dict[str, Any]:
        result = {}
        for name, slot, template in zip(names, slots, templates):
            metric = metrics_module.clone_metric(template)
            update = metric.update_state(kwargs[f"y_true_{slot}"], kwargs[f"y_pred_{slot}"])
            result[name] = (metric.result(), update)
            # As the Estimator does for Metric objects in eval_metric_ops: metric
            # variables are local variables (initialized by the local init op).
            for collection in (
                tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                tf.compat.v1.GraphKeys.METRIC_VARIABLES,
            ):
                known = {id(v) for v in tf.compat.v1.get_collection(collection)}
                for variable in metric.variables:
                    if id(variable) not in known:
                        tf.compat.v1.add_to_collection(collection, variable)
        return result

    return metric_fn, tensors


class _PythonSeedsKept:
    """Context: put Python's seed generators back as they were on leaving.

    Keras draws the seeds of a layer's initializers from its own generator (the one
    ``tf.keras.utils.set_random_seed`` seeds) or from Python's ``random``; a clone of a model
    draws one per initializer.
    """

    def __init__(self) -> None:
        self._generators: list[Any] = []
        self._states: list[Any] = []

    def __enter__(self) -> None:
        import random

        try:
            from keras.src import backend
        except ImportError:  # Keras before 2.13
            from keras import backend
        keras_seeds = getattr(backend, "_SEED_GENERATOR", None)
        generators = [random, getattr(keras_seeds, "generator", None)]
        self._generators = [g for g in generators if g is not None]
        self._states = [g.getstate() for g in self._generators]

    def __exit__(self, *exc: object) -> None:
        for generator, state in zip(self._generators, self._states):
            generator.setstate(state)


def _save_first_checkpoint(
    keras_model: Any, custom_objects: Any, config: Any
) -> tuple[str, list[str]]:
    """Save the model's current weights under ``model_dir/keras`` (once) for warm start.

    Returns the checkpoint path and the names of the variables it holds.  Where that
    checkpoint exists, the clone that reads the names leaves Python's seed generators as
    they were: TensorFlow's ``model_to_estimator`` clones nothing then, so the seeds drawn
    after it (a layer built next, Python's ``random``) stay the original's.
    """
    import tensorflow as tf
    from tensorflow_estimator.python.estimator import keras_lib

    keras_dir = os.path.join(config.model_dir, "keras")
    latest = tf.train.latest_checkpoint(keras_dir)
    weights = keras_model.get_weights()
    with _PythonSeedsKept() if latest else contextlib.nullcontext(), tf.Graph().as_default():
        tf.compat.v1.random.set_random_seed(config.tf_random_seed)
        tf.compat.v1.train.create_global_step()
        model = keras_lib._clone_and_build_model(
            tf.estimator.ModeKeys.PREDICT, keras_model, custom_objects
        )
        names = [v.op.name for v in model.weights]
        if latest:
            return latest, names
        tf.io.gfile.makedirs(keras_dir)
        saver = tf.compat.v1.train.Saver(var_list=model.weights)
        with tf.compat.v1.Session(config=config.session_config) as sess:
            sess.run(tf.compat.v1.variables_initializer(model.weights))
            model.set_weights(weights)
            path = saver.save(sess, os.path.join(keras_dir, "keras_model.ckpt"))
    return path, names


def model_to_estimator(
    keras_model: Any = None,
    keras_model_path: str | None = None,
    custom_objects: dict[str, Any] | None = None,
    model_dir: str | None = None,
    config: Any = None,
    *,
    train_batch_size: int | None = None,
    eval_batch_size: int | None = None,
    predict_batch_size: int | None = None,
    checkpoint_format: str | None = None,
    metric_names_map: dict[str, str] | None = None,
    export_outputs: dict[str, Any] | None = None,
) -> Any:
    """Return a ``tf.compat.v1.estimator.tpu.TPUEstimator`` for a compiled Keras model.

    Arguments as in ``tf.keras.estimator.model_to_estimator``; the batch sizes
    are TPUEstimator's (input functions read theirs from ``params["batch_size"]``).
    ``checkpoint_format`` is accepted for compatibility: checkpoints are
    name-based (``"saver"``), as every TPUEstimator's are.  ``use_tpu`` is
    :func:`est2tpu.runtime.use_tpu`; ``config`` is converted with
    :func:`est2tpu.runtime.ensure_tpu_run_config`.
    """
    import tensorflow as tf
    from tensorflow_estimator.python.estimator import estimator as estimator_lib

    from est2tpu.runtime._tpu import ensure_tpu_run_config, use_tpu

    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specify either `keras_model` or `keras_model_path`, not both.")
    if checkpoint_format not in (None, "checkpoint", "saver"):
        raise ValueError(
            f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}'
        )
    if keras_model is None:
        keras_model = tf.keras.models.load_model(keras_model_path, custom_objects=custom_objects)
    if not getattr(keras_model, "optimizer", None):
        raise ValueError(
            "The given keras model has not been compiled yet. Please compile the model "
            "with `model.compile()` before calling `model_to_estimator()`."
        )
    if not (keras_model._is_graph_network or isinstance(keras_model, tf.keras.Sequential)):
        raise ValueError(
            "est2tpu.runtime.model_to_estimator supports Functional and Sequential Keras "
            "models; a subclassed model needs a hand-written model_fn"
        )
    legacy = _legacy_optimizer(keras_model.optimizer)
    # Cloning in a graph swaps the Keras model classes to their TF1 versions,
    # whose _get_compile_args cannot read an eagerly compiled model: cache the
    # compile arguments now, as Keras' clone_and_build_model does on its first
    # compiling clone (keras_lib's _save_first_checkpoint triggers that).
    compile_args = keras_model._get_compile_args()
    keras_model._get_compile_args = lambda: compile_args
    if _wrapped_tf1(legacy) is None:
        _keras_optimizer_config(legacy)  # fail now, not in the first train(), if unmappable
    run_config = estimator_lib.maybe_overwrite_model_dir_and_session_config(
        ensure_tpu_run_config(config), model_dir
    )
    warm_start = None
    if run_config.is_chief:
        path, names = _save_first_checkpoint(keras_model, custom_objects, run_config)
        warm_start = tf.estimator.WarmStartSettings(
            ckpt_to_initialize_from=path,
            vars_to_warm_start=["^" + re.escape(name) + ":0$" for name in names],
        )
    return tf.compat.v1.estimator.tpu.TPUEstimator(
        model_fn=_make_model_fn(
            keras_model, legacy, custom_objects, metric_names_map, export_outputs
        ),
        config=run_config,
        use_tpu=use_tpu(),
        train_batch_size=train_batch_size,
        eval_batch_size=eval_batch_size,
        predict_batch_size=predict_batch_size,
        warm_start_from=warm_start,
    )
