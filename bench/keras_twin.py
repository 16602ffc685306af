"""A hand-written Keras twin of `fixtures/projects/single_file_classifier`, for bench.py.

Benchmark code, not a test: the model the project's model_fn builds (Dense 16 relu, Dense 16
relu, Dense 3 logits; glorot-uniform kernels and zero biases, as `tf.compat.v1.layers.dense`),
TF1's Adam hyperparameters (learning rate 0.01, epsilon 1e-8), the mean sparse softmax
cross-entropy of `tf.compat.v1.losses`, and the project's own `train_input_fn` (imported from
`--project`: same data, shuffle, repeat and batch of 32), trained with `model.fit` under the
default strategy or, with `--cpu-replicas N`, `MirroredStrategy` over N logical CPU devices
(what `EST2TPU_CPU_REPLICAS=N` gives the facade). No checkpoints, no summaries.

Speed is measured the way TF1's `StepCounterHook` measures `global_step/sec` (and so the
facade): the clock starts at the first step-count trigger, which comes after the first
execution (tracing included), and every `--log-steps` steps a rate over the steps since the
last one is taken. It prints one JSON line: `{"rates": [...], "steps": N, "cpu_per_1000": s}`,
the last the process's CPU seconds per 1,000 steps between the first and the last trigger.

`--keras 2` sets `TF_USE_LEGACY_KERAS=1` before TensorFlow is imported (tf-keras, the Keras
the migrated program's facade builds its layers with); `--keras 3` leaves `tf.keras` as Keras 3,
what a user writing new code on current TensorFlow gets.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--project", required=True, help="folder holding the original train.py")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--steps-per-execution", type=int, default=100)
    ap.add_argument("--log-steps", type=int, default=100, help="log_step_count_steps")
    ap.add_argument("--keras", choices=("2", "3"), default="3")
    ap.add_argument("--cpu-replicas", type=int, default=0)
    args = ap.parse_args()

    os.environ["TF_USE_LEGACY_KERAS"] = "1" if args.keras == "2" else "0"
    import tensorflow as tf

    if args.cpu_replicas > 1:
        cpus = tf.config.list_physical_devices("CPU")
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(args.cpu_replicas)]
        )
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(args.cpu_replicas)])
    else:
        strategy = tf.distribute.get_strategy()

    sys.path.insert(0, args.project)
    import train as project  # the original program: its data and input function

    keras = tf.keras
    keras.utils.set_random_seed(project.SEED)
    with strategy.scope():
        x = keras.Input(shape=(project.NUM_FEATURES,), name="x")
        net = x
        for units in (16, 16):
            net = keras.layers.Dense(units, activation="relu")(net)
        logits = keras.layers.Dense(project.NUM_CLASSES)(net)
        model = keras.Model({"x": x}, logits)
        model.compile(
            optimizer=keras.optimizers.Adam(
                learning_rate=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-8
            ),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            steps_per_execution=args.steps_per_execution,
        )

    rates: list[float] = []
    marks: list[tuple[float, int]] = []  # (process CPU time, batch) at the first/last trigger

    class StepCounter(keras.callbacks.Callback):  # type: ignore[misc,name-defined]
        """TF1's StepCounterHook: a rate every `log_steps` steps, from the first trigger."""

        last: tuple[float, int] | None = None

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            now = time.perf_counter()
            if self.last is None:
                self.last = (now, batch)
                marks[:] = [(time.process_time(), batch)]
            elif batch - self.last[1] >= args.log_steps:
                rates.append((batch - self.last[1]) / (now - self.last[0]))
                self.last = (now, batch)
                marks[1:] = [(time.process_time(), batch)]

    model.fit(
        project.train_input_fn(),
        steps_per_epoch=args.steps,
        epochs=1,
        verbose=0,
        callbacks=[StepCounter()],
    )
    cpu = None
    if len(marks) > 1:
        cpu = (marks[1][0] - marks[0][0]) / (marks[1][1] - marks[0][1]) * 1000
    print(json.dumps({"rates": rates, "steps": args.steps, "cpu_per_1000": cpu}))


if __name__ == "__main__":
    main()
