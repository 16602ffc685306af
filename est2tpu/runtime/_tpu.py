"""TPU discovery and the TPU RunConfig factory of the runtime shim (TensorFlow imported
lazily). A private module so that the shim's other modules (keras, premade) import it
without importing the package that re-exports them."""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from typing import Any

# Device nodes that exist only on a Cloud TPU VM: /dev/accel* on v2-v4,
# /dev/vfio/* on v5e, v5p and later.  Checking them costs one stat() each and
# no network round trip, unlike TPUClusterResolver(), which on a GCE host can
# wait on the metadata server.
_TPU_VM_DEVICES = ("/dev/accel0", "/dev/vfio/0")

# Settings of tf.estimator.RunConfig (TF 2.15) that ensure_tpu_run_config
# carries over, by constructor keyword.  The attribute holding each one is the
# keyword with a leading underscore.  save_checkpoints_steps/_secs are handled
# separately: the constructor refuses both set at once.
_RUN_CONFIG_SETTINGS = (
    "model_dir",
    "tf_random_seed",
    "save_summary_steps",
    "session_config",
    "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours",
    "log_step_count_steps",
    "train_distribute",
    "device_fn",
    "protocol",
    "eval_distribute",
    "experimental_distribute",
    "experimental_max_worker_delay_secs",
    "session_creation_timeout_secs",
    "checkpoint_save_graph_def",
)


def _tpu_name(tpu: str | None) -> str | None:
    """Return the TPU to resolve: the argument, ``$TPU_NAME``, ``"local"`` on a TPU VM."""
    if tpu:
        return tpu
    from_env = os.environ.get("TPU_NAME")
    if from_env:
        return from_env
    if any(os.path.exists(device) for device in _TPU_VM_DEVICES):
        return "local"
    return None


@functools.cache
def _resolve(tpu: str, zone: str | None, project: str | None) -> Any:
    import tensorflow as tf

    try:
        return tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu, zone=zone, project=project
        )
    except ValueError:
        # TPUClusterResolver raises ValueError when no TPU answers to `tpu`.
        return None


def cluster_resolver(
    tpu: str | None = None, zone: str | None = None, project: str | None = None
) -> Any:
    """Return a ``TPUClusterResolver`` for the TPU this program should use, or ``None``.

    The TPU is, in order: the ``tpu`` argument; the ``TPU_NAME`` environment
    variable; ``"local"`` when this host is a Cloud TPU VM (``/dev/accel0`` or
    ``/dev/vfio/0`` exists).  When none of these applies the answer is ``None``
    at once: no resolver is constructed, TensorFlow is not imported and nothing
    waits on the network.  A resolver that raises ``ValueError`` (no such TPU)
    also gives ``None``.

    Results are cached per (TPU name, zone, project), so that repeated calls
    from the generated code (``run_config()`` and ``use_tpu()``) agree and cost
    one resolution.
    """
    name = _tpu_name(tpu)
    if name is None:
        return None
    return _resolve(name, zone, project)


def use_tpu(tpu: str | None = None) -> bool:
    """Return whether a TPU was found; the value for ``TPUEstimator(use_tpu=...)``.

    ``True`` exactly when :func:`cluster_resolver` finds a TPU for ``tpu``.
    On CPU/GPU it is ``False``, and TPUEstimator then runs the model_fn as a
    plain Estimator would (bit-identical results under a fixed seed).
    """
    return cluster_resolver(tpu) is not None


def iterations_per_loop(n: int = 100, tpu: str | None = None) -> int:
    """``n`` on a TPU, 1 elsewhere: the value for ``TPUConfig(iterations_per_loop=...)``.

    On a TPU, ``n`` training steps run per ``session.run``. On CPU/GPU TPUEstimator runs
    one step per ``session.run`` but still divides ``log_step_count_steps`` by
    ``iterations_per_loop``: with 100 it would log ``global_step/sec`` (an extra session
    call and two summaries) after every step, which costs a small model about a third of
    its speed. With 1 it logs every ``log_step_count_steps`` steps, as Estimator does.
    """
    return n if use_tpu(tpu) else 1


# run_config's keyword of the same name shadows the function there.
_host_iterations_per_loop = iterations_per_loop


def _tpu_config(iterations_per_loop: int) -> Any:
    import tensorflow as tf

    tpu = tf.compat.v1.estimator.tpu
    return tpu.TPUConfig(
        iterations_per_loop=iterations_per_loop,
        per_host_input_for_training=tpu.InputPipelineConfig.PER_HOST_V2,
    )


def run_config(
    *, iterations_per_loop: int | None = None, tpu: str | None = None, **run_config_kwargs: Any
) -> Any:
    """Build a ``tf.compat.v1.estimator.tpu.RunConfig`` for this host.

    ``cluster`` is :func:`cluster_resolver` for ``tpu`` (``None`` off TPU),
    ``tpu_config`` is a ``TPUConfig`` with ``iterations_per_loop`` (default: 100 on a
    TPU, 1 elsewhere, see :func:`iterations_per_loop`) and
    ``per_host_input_for_training=PER_HOST_V2``.  Every other keyword
    (``model_dir``, ``tf_random_seed``, ``save_checkpoints_steps``, ...) is
    passed to the ``RunConfig`` constructor unchanged.
    """
    import tensorflow as tf

    if iterations_per_loop is None:
        iterations_per_loop = _host_iterations_per_loop(100, tpu)
    return tf.compat.v1.estimator.tpu.RunConfig(
        cluster=cluster_resolver(tpu),
        tpu_config=_tpu_config(iterations_per_loop),
        **run_config_kwargs,
    )


def ensure_tpu_run_config(
    config: Any = None, *, iterations_per_loop: int | None = None, tpu: str | None = None
) -> Any:
    """Return a TPU ``RunConfig`` equivalent to ``config``.

    - A ``tf.compat.v1.estimator.tpu.RunConfig`` is returned unchanged (its own
      ``TPUConfig`` and cluster win over ``iterations_per_loop`` and ``tpu``).
    - ``None`` gives a fresh :func:`run_config`.
    - A plain ``tf.estimator.RunConfig`` gives a TPU ``RunConfig`` that keeps
      every constructor setting of the original (``model_dir``,
      ``tf_random_seed``, checkpoint and summary schedules, ``session_config``,
      distribution strategies, ...) and adds the ``TPUConfig`` and cluster of
      :func:`run_config`.  The original is not modified; its
      ``session_config`` is copied, because a TPU cluster is merged into it.

    Raises:
        TypeError: if ``config`` is not a ``RunConfig``.
    """
    import tensorflow as tf

    if isinstance(config, tf.compat.v1.estimator.tpu.RunConfig):
        return config
    if config is None:
        return run_config(iterations_per_loop=iterations_per_loop, tpu=tpu)
    if not isinstance(config, tf.estimator.RunConfig):
        raise TypeError(
            f"ensure_tpu_run_config expects a tf.estimator.RunConfig or None, "
            f"got {type(config).__name__}"
        )
    kwargs = {name: getattr(config, "_" + name) for name in _RUN_CONFIG_SETTINGS}
    if kwargs["session_config"] is not None:
        session_config = tf.compat.v1.ConfigProto()
        session_config.CopyFrom(kwargs["session_config"])
        kwargs["session_config"] = session_config
    # At most one of the two is set on a constructed RunConfig; passing both
    # explicitly (one of them None) keeps the constructor from applying its
    # 600-second default.
    kwargs["save_checkpoints_steps"] = config.save_checkpoints_steps
    kwargs["save_checkpoints_secs"] = config.save_checkpoints_secs
    # A RunConfig subclass may set its own master (magenta's `MasterRunConfig` assigns
    # `self._master = FLAGS.master`), which no constructor argument carries. Off TPU it is
    # kept; on a TPU the TPU's cluster is the master (the TPU RunConfig refuses both).
    if cluster_resolver(tpu) is None:
        default = tf.estimator.RunConfig()
        for name in ("master", "evaluation_master"):
            if getattr(config, name) != getattr(default, name):
                kwargs[name] = getattr(config, name)
    return run_config(iterations_per_loop=iterations_per_loop, tpu=tpu, **kwargs)


def params_without_batch_size(params: Any) -> Any:
    """The Estimator's ``params`` as a TPUEstimator takes them: without ``batch_size``.

    TPUEstimator reserves that key (its constructor refuses params holding it) and gives
    each input function and model_fn the batch size its constructor's
    ``train/eval/predict_batch_size`` set, which est2tpu reads from this very
    ``params["batch_size"]``: on CPU the same value.  A mapping gives a dict copy without
    the key; an HParams-like object (with ``del_hparam``) a deep copy without it.  The
    original is not modified.

    Raises:
        TypeError: if ``params`` is neither.
    """
    if isinstance(params, Mapping):
        return {key: value for key, value in params.items() if key != "batch_size"}
    if hasattr(params, "del_hparam"):
        copied = copy.deepcopy(params)
        if "batch_size" in copied:
            copied.del_hparam("batch_size")
        return copied
    raise TypeError(
        f"params_without_batch_size expects a mapping or an HParams, got {type(params).__name__}"
    )
