"""TF2001's names: the Estimator API's names the tf2 facade has, with the same signature and
semantics (`FACADE_NAMES`, TF 1.x's contrib spellings included), and the arguments and hooks
it has no equivalent for."""

from __future__ import annotations

from est2tpu.tfapi import LEARN_RUN_CONFIG_ARGS

# Canonical TensorFlow name -> the facade's name for it (same signature, same semantics).
# tf.estimator.experimental's early-stopping functions, which tf.contrib.estimator re-exported.
_EARLY_STOPPING = (
    "stop_if_higher_hook",
    "stop_if_lower_hook",
    "stop_if_no_increase_hook",
    "stop_if_no_decrease_hook",
    "make_early_stopping_hook",
)

FACADE_NAMES: dict[str, str] = {
    "estimator.Estimator": "Estimator",
    "estimator.EstimatorSpec": "EstimatorSpec",
    "estimator.ModeKeys": "ModeKeys",
    "estimator.RunConfig": "RunConfig",
    "estimator.TrainSpec": "TrainSpec",
    "estimator.EvalSpec": "EvalSpec",
    "estimator.train_and_evaluate": "train_and_evaluate",
    "estimator.LatestExporter": "LatestExporter",
    "estimator.FinalExporter": "FinalExporter",
    "estimator.export.PredictOutput": "export.PredictOutput",
    "estimator.export.ServingInputReceiver": "export.ServingInputReceiver",
    "estimator.export.build_parsing_serving_input_receiver_fn": (
        "export.build_parsing_serving_input_receiver_fn"
    ),
    "estimator.export.build_raw_serving_input_receiver_fn": (
        "export.build_raw_serving_input_receiver_fn"
    ),
    "estimator.add_metrics": "add_metrics",
    "estimator.inputs.numpy_input_fn": "inputs.numpy_input_fn",
    "estimator.inputs.pandas_input_fn": "inputs.pandas_input_fn",
    "keras.estimator.model_to_estimator": "model_to_estimator",
    **{
        f"{space}.{hook}": f"hooks.{hook}"
        for space in ("estimator", "train")
        for hook in ("LoggingTensorHook", "StopAtStepHook", "StepCounterHook")
    },
    **{f"estimator.experimental.{fn}": f"hooks.{fn}" for fn in _EARLY_STOPPING},
    # TF 1.x's tf.contrib names for what the facade has, as TensorFlow 1.15 defines them:
    # the same functions (contrib.estimator re-exported tf.estimator's), the same strings
    # (contrib.learn's INFER is tf.estimator's PREDICT, "infer"), the same loaders.
    "contrib.estimator.add_metrics": "add_metrics",
    **{f"contrib.estimator.{fn}": f"hooks.{fn}" for fn in _EARLY_STOPPING},
    "contrib.learn.ModeKeys.TRAIN": "ModeKeys.TRAIN",
    "contrib.learn.ModeKeys.EVAL": "ModeKeys.EVAL",
    "contrib.learn.ModeKeys.INFER": "ModeKeys.PREDICT",
    "contrib.learn.RunConfig": "RunConfig",
    **{
        f"contrib.learn.datasets.base.{fn}": f"datasets.{fn}"
        for fn in ("load_csv_with_header", "load_csv_without_header")
    },
}
# tf.contrib.learn.RunConfig maps only when given tfapi.LEARN_RUN_CONFIG_ARGS, by keyword: its
# other arguments (master, num_cores, ...) configured the TF1 session and cluster.
CONTRIB_RUN_CONFIG_ARGS = LEARN_RUN_CONFIG_ARGS
# Private modules of the Estimator whose names programs import directly
# (`from tensorflow.python.estimator.export.export import build_raw_serving_input_receiver_fn`):
# module -> the public namespace that exports the same objects.
PRIVATE_MODULES: dict[str, str] = {
    f"{root}.python.estimator.export.{module}": "estimator.export"
    for root in ("tensorflow", "tensorflow_estimator")
    for module in ("export", "export_output", "export_lib")
}


def private_name(qualified: str | None) -> str | None:
    """The facade-mapped public name of a name imported from a private Estimator module."""
    module, _, short = (qualified or "").rpartition(".")
    space = PRIVATE_MODULES.get(module)
    name = f"{space}.{short}" if space is not None else None
    return name if name in FACADE_NAMES else None


# The facade's hooks (est2tpu.runtime.tf2.hooks): a `hooks=` argument made only of calls to
# these is passed on; any other hook needs a session the facade does not have.
FACADE_HOOKS = frozenset(name for name, new in FACADE_NAMES.items() if new.startswith("hooks."))
# Hooks with no facade equivalent, and what to do instead.
HOOK_ADVICE: dict[str, str] = {
    "ProfilerHook": (
        "profiles TF1 session runs; profile the facade's training with "
        "tf.profiler.experimental.start(logdir) / stop() around train()"
    ),
}
# Namespaces under tf.estimator (not symbols): reached only through a longer name.
NAMESPACES = frozenset(
    {"estimator", "estimator.export", "estimator.inputs", "estimator.tpu", "estimator.experimental"}
)
# Arguments the facade has no equivalent for, per facade constructor.
UNSUPPORTED_ARGS: dict[str, tuple[str, ...]] = {
    "EstimatorSpec": (
        "training_chief_hooks",
        "training_hooks",
        "scaffold",
        "evaluation_hooks",
        "prediction_hooks",
    ),
    "RunConfig": ("experimental_distribute",),
    "TrainSpec": ("hooks",),
    "EvalSpec": ("hooks",),
}
# `RunConfig(experimental_distribute=DistributeConfig(...))`: TF 1.x's spelling (the class
# was never public in TF 2; programs of TF 2 import it from its module).
DISTRIBUTE_CONFIG = "contrib.distribute.DistributeConfig"
DISTRIBUTE_CONFIG_QUALIFIED = "tensorflow.python.distribute.distribute_config.DistributeConfig"
DISTRIBUTE_CONFIG_ARGS = ("train_distribute", "eval_distribute", "remote_cluster")
# TF 1.x's tf.contrib strategies (gone in TF 2) that are the strategies the facade picks for
# the host itself: CollectiveAllReduceStrategy is TF 2's MultiWorkerMirroredStrategy (chosen
# from TF_CONFIG), MirroredStrategy mirrors the host's GPUs. Their arguments may only count
# GPUs, which the facade takes all of.
CONTRIB_STRATEGIES = frozenset(
    {"contrib.distribute.MirroredStrategy", "contrib.distribute.CollectiveAllReduceStrategy"}
)
CONTRIB_STRATEGY_ARGS = frozenset({"num_gpus", "num_gpus_per_worker"})
KERAS_TO_ESTIMATOR_NAMES = frozenset({"keras.estimator.model_to_estimator"})
# Estimator methods and where their `hooks` stand when passed by position.
HOOK_POSITIONS = {"train": 1, "evaluate": 2, "predict": 2}
# ... and where the constructors' unsupported arguments stand when passed by position.
UNSUPPORTED_POSITIONS: dict[str, dict[int, str]] = {
    "TrainSpec": {2: "hooks"},
    "EvalSpec": {3: "hooks"},
}
