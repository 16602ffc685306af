"""Which tf.distribute strategy the facade runs under: TPU, TF_CONFIG workers, GPUs, or CPU."""

from __future__ import annotations

import json
import os
from typing import Any

CPU_REPLICAS_ENV = "EST2TPU_CPU_REPLICAS"

_STRATEGY: Any = None


def _tf_config_workers() -> int:
    """How many tasks TF_CONFIG describes (0 when unset or unreadable)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    try:
        cluster = json.loads(raw).get("cluster", {})
    except (ValueError, AttributeError):
        return 0
    return sum(len(v) for k, v in cluster.items() if k in ("chief", "worker"))


def cpu_replicas() -> int:
    """`EST2TPU_CPU_REPLICAS` (0 when unset)."""
    return int(os.environ.get(CPU_REPLICAS_ENV, "0") or 0)


def configure_cpu_replicas() -> int:
    """Split the host CPU into `EST2TPU_CPU_REPLICAS` logical devices (when it is > 1).

    It must happen before TensorFlow runs anything; doing it again with the same number is
    a no-op. The facade does it when it is imported with the variable set, because a
    `model_to_estimator` program builds its Keras model before it calls the facade.
    """
    replicas = cpu_replicas()
    if replicas <= 1:
        return replicas
    import tensorflow as tf

    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)]
        )
    except RuntimeError as exc:  # the runtime was initialised before us
        raise RuntimeError(
            f"{CPU_REPLICAS_ENV}={replicas}: logical CPU devices must be configured before "
            "TensorFlow runs anything; import est2tpu.runtime.tf2 (or call "
            "est2tpu.runtime.tf2.strategy()) first"
        ) from exc
    return replicas


def resolve_strategy(tpu: str | None = None) -> Any:
    """Build the strategy for this process (a new one on every call; see `strategy()`).

    In order: a TPU (resolver, `experimental_connect_to_cluster`, `initialize_tpu_system`,
    `TPUStrategy`); `TF_CONFIG` naming workers -> `MultiWorkerMirroredStrategy`;
    `EST2TPU_CPU_REPLICAS=N` -> N logical CPU devices under `MirroredStrategy` (the stand-in
    for an N-core TPU in tests); several GPUs -> `MirroredStrategy`; else the default strategy.
    """
    import tensorflow as tf

    from est2tpu.runtime._tpu import cluster_resolver

    resolver = cluster_resolver(tpu)
    if resolver is not None:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    if _tf_config_workers() > 0:
        return tf.distribute.MultiWorkerMirroredStrategy()
    replicas = configure_cpu_replicas()
    if replicas > 1:
        return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    if len(tf.config.list_physical_devices("GPU")) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def strategy() -> Any:
    """The process-wide strategy, resolved once (TPU and collective setup happen once)."""
    global _STRATEGY
    if _STRATEGY is None:
        _STRATEGY = resolve_strategy()
    return _STRATEGY


def on_replica_device(fn: Any) -> Any:
    """`fn` called under its replica's device scope, for an XLA-compiled `fn` run by
    `strategy.run` over several local devices.

    The call op of a `jit_compile=True` function is not placed by the replica's device
    scope the strategy entered: it lands on the first device, whose XLA executable then
    reads the other replicas' variables ("Trying to access resource ... located in device
    CPU:1 from device CPU:0"). Entering the replica's device again, at the call, places
    each replica's executable beside its variables. One device (the default strategy,
    TPUStrategy, whose replicas are one XLA program) needs nothing.
    """
    import tensorflow as tf

    def call(*args: Any, **kwargs: Any) -> Any:
        ctx = tf.distribute.get_replica_context()
        devices = getattr(tf.distribute.get_strategy().extended, "worker_devices", ())
        replica = None if ctx is None else tf.get_static_value(ctx.replica_id_in_sync_group)
        if replica is None or len(devices) <= 1 or int(replica) >= len(devices):
            return fn(*args, **kwargs)
        with tf.device(devices[int(replica)]):
            return fn(*args, **kwargs)

    return call
