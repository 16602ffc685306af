"""The TensorFlow API vocabulary the index and the rules share: which canonical names
(`estimator.Estimator`, `estimator.inputs.numpy_input_fn`, ...) build, feed or run an
Estimator, and which of the shim's names stand for them after a rule ran."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import libcst as cst

from est2tpu.cstutil import iter_calls
from est2tpu.names import ImportTable

ESTIMATOR_CTORS = frozenset(
    {"estimator.Estimator", "estimator.tpu.TPUEstimator", "contrib.tpu.TPUEstimator"}
)
TPU_ESTIMATOR_CTORS = frozenset({"estimator.tpu.TPUEstimator", "contrib.tpu.TPUEstimator"})
KERAS_TO_ESTIMATOR = frozenset({"keras.estimator.model_to_estimator"})
# params-aware shim versions exist for these; name -> positional index of batch_size
NUMPY_INPUTS = {"estimator.inputs.numpy_input_fn": 2, "estimator.inputs.pandas_input_fn": 2}
DEFAULT_NUMPY_BATCH = "128"
SPEC_CTORS = {"estimator.TrainSpec": "train", "estimator.EvalSpec": "eval"}
PREMADE = [
    "BaselineClassifier",
    "BaselineEstimator",
    "BaselineRegressor",
    "BoostedTreesClassifier",
    "BoostedTreesEstimator",
    "BoostedTreesRegressor",
    "DNNClassifier",
    "DNNEstimator",
    "DNNRegressor",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedEstimator",
    "DNNLinearCombinedRegressor",
    "LinearClassifier",
    "LinearEstimator",
    "LinearRegressor",
]
# Premade estimators that become a TPUEstimator built from TF 2.15's canned model function
# (est2tpu.runtime.premade), when spelled as TF2's class (`tf.estimator.X`): TF1's class
# (`tf.compat.v1.estimator.X`) has other defaults (SUM loss reduction, TF1 optimizers).
TPU_PREMADE = frozenset(
    {
        "DNNClassifier",
        "DNNRegressor",
        "LinearClassifier",
        "LinearRegressor",
        "DNNLinearCombinedClassifier",
        "DNNLinearCombinedRegressor",
    }
)
_PREMADE_V2_MODULES = ("tensorflow.estimator.", "tensorflow_estimator.estimator.")


# The argument only TF 1.x's V1 premade classes take (TF 2.15's `tf.estimator.X` raises a
# TypeError on it): a call that passes it is a TF 1.x program's V1 premade.
V1_PARTITIONER = {
    "DNNClassifier": "input_layer_partitioner",
    "DNNRegressor": "input_layer_partitioner",
    "LinearClassifier": "partitioner",
    "LinearRegressor": "partitioner",
    "DNNLinearCombinedClassifier": "input_layer_partitioner",
    "DNNLinearCombinedRegressor": "input_layer_partitioner",
}


# The feature columns a premade's TPUEstimator takes on a TPU (est2tpu.runtime.premade's
# `_TPU_COLUMNS`, by the class each function builds): the others read string or sparse
# features, which a TPU cannot take.
TPU_PREMADE_COLUMNS = {"numeric_column": "NumericColumn", "bucketized_column": "BucketizedColumn"}


def feature_column_calls(
    node: cst.CSTNode, tf_name: Callable[[cst.BaseExpression], str | None]
) -> set[str]:
    """The `tf.feature_column` functions called under `node`, in nested defs too, by their
    canonical names (`feature_column.embedding_column`)."""
    return {
        name
        for call in iter_calls(node, into_defs=True)
        if (name := tf_name(call.func) or "").startswith("feature_column.")
    }


def is_column_kind(name: str) -> bool:
    """A `tf.feature_column` function that builds a column (not `input_layer`,
    `linear_model`, `make_parse_example_spec`, ...)."""
    return name.endswith(("_column", "_columns")) or "_column_with_" in name


def premade_refusal(
    short: str, qualified: str, call: cst.Call, use_runtime: bool, columns: Iterable[str] = ()
) -> str | None:
    """Why a premade estimator call stays as it is under tpu-estimator; None: it converts.
    `columns`: the `tf.feature_column` functions the call's module calls."""
    if short.startswith("BoostedTrees"):
        return (
            f"premade {short} grows trees on the host and has no TPU form; keep it off TPU, "
            "or use `--target tf2`"
        )
    if short not in TPU_PREMADE:
        return (
            f"premade {short} has no TPUEstimator form in est2tpu.runtime (TPUEstimator needs "
            "a model_fn); use `--target tf2` or write a model_fn"
        )
    if not qualified.startswith(_PREMADE_V2_MODULES):
        return (
            f"{qualified or short} is TensorFlow 1's premade {short} (SUM loss reduction, "
            f"TF1 optimizers), which est2tpu.runtime.premade does not rebuild; "
            f"tf.estimator.{short} (TF2's) becomes a TPUEstimator"
        )
    v1_only = V1_PARTITIONER.get(short)
    if v1_only is not None and any(
        a.keyword is not None and a.keyword.value == v1_only for a in call.args
    ):
        return (
            f"premade {short}({v1_only}=...) is TensorFlow 1's V1 class (only it takes "
            f"{v1_only}; TF 2.15's tf.estimator.{short} raises a TypeError on it, and V1 sums "
            "its loss and builds TF1 optimizers), which est2tpu.runtime.premade does not "
            f"rebuild; use `--target tf2` (which drops {v1_only} exactly), or drop it and "
            "re-run if TF2's class is what you want"
        )
    if any(a.star for a in call.args):
        return f"premade {short} called with *args/**kwargs; convert it by hand"
    if not use_runtime:
        return (
            f"premade {short} becomes a TPUEstimator through est2tpu.runtime.premade, which "
            "--no-runtime forbids; write a model_fn"
        )
    off_tpu = sorted(set(columns) - set(TPU_PREMADE_COLUMNS))
    if off_tpu:
        return (
            f"premade {short} left as it is: this module builds feature columns "
            f"({', '.join(off_tpu)}) that read string or sparse features, which a TPU cannot "
            "take (est2tpu.runtime.premade refuses them on a TPU); turn them into dense "
            "numeric features in the input function (a lookup to ids and a numeric_column) "
            "and re-run, or use `--target tf2`"
        )
    return None


# `add_metrics(estimator, metric_fn)`: the metric_fn runs inside the Estimator's model_fn.
ADD_METRICS = frozenset({"estimator.add_metrics", "contrib.estimator.add_metrics"})
# Canonical names whose use makes a module worth the use-collecting walk.
USE_NAMES = (
    *sorted(ADD_METRICS),
    *ESTIMATOR_CTORS,
    *KERAS_TO_ESTIMATOR,
    *SPEC_CTORS,
    *NUMPY_INPUTS,
    "estimator.train_and_evaluate",
    *(f"estimator.{name}" for name in PREMADE),
)
RUN_CONFIGS = frozenset({"estimator.RunConfig", "estimator.tpu.RunConfig", "contrib.tpu.RunConfig"})
LEARN_RUN_CONFIG = "contrib.learn.RunConfig"
# tf.contrib.learn.RunConfig's keyword arguments that tf.estimator.RunConfig takes too, with
# the same meaning and default (TF 1's contrib RunConfig subclassed the core one). Its others
# (master, num_cores, log_device_placement, gpu_memory_fraction, evaluation_master) built its
# own session config or master: no core argument means the same.
LEARN_RUN_CONFIG_ARGS = frozenset(
    {
        "model_dir",
        "tf_random_seed",
        "save_summary_steps",
        "save_checkpoints_steps",
        "save_checkpoints_secs",
        "session_config",
        "keep_checkpoint_max",
        "keep_checkpoint_every_n_hours",
        "log_step_count_steps",
    }
)


def is_run_config_call(imports: ImportTable, call: cst.Call) -> bool:
    """A RunConfig (core or TPU), or a tf.contrib.learn.RunConfig TPU008 converts."""
    name = imports.tf_name(call.func)
    return name in RUN_CONFIGS or (name == LEARN_RUN_CONFIG and learn_run_config_maps(call))


def learn_run_config_maps(call: cst.Call) -> bool:
    """Does this tf.contrib.learn.RunConfig(...) take only keywords tf.estimator.RunConfig
    has (so it is that RunConfig)?"""
    return all(
        not a.star and a.keyword is not None and a.keyword.value in LEARN_RUN_CONFIG_ARGS
        for a in call.args
    )


# TF1's sessions: code that runs one runs TF1 graph code itself, outside any Estimator.
TF1_SESSIONS = (
    "Session",
    "InteractiveSession",
    "train.MonitoredTrainingSession",
    "train.MonitoredSession",
    "train.SingularMonitoredSession",
)
# The switches that turn TensorFlow 2's behaviour off for the whole process.
EAGER_OFF = "disable_eager_execution"
V2_OFF = "disable_v2_behavior"
RUN_METHODS = {"train": "train", "evaluate": "eval", "predict": "predict"}
BATCH_METHODS = frozenset({"batch", "padded_batch"})


SHIM = "est2tpu.runtime."


def call_kind(imports: ImportTable, func: cst.BaseExpression) -> str | None:
    """The kind of a call the index keys by order: stable when a rule converts the call.

    An Estimator stays a "ctor" when it becomes a TPUEstimator, model_to_estimator when it
    becomes the shim's, and so on, so the n-th call of a kind in a scope is the same call
    before and after any rule ran.
    """
    canonical = imports.tf_name(func)
    if canonical is None:
        qualified = imports.qualify(func) or ""
        if not qualified.startswith(SHIM):
            return None
        return _SHIM_KINDS.get(qualified[len(SHIM) :])
    if canonical in ESTIMATOR_CTORS or canonical in KERAS_TO_ESTIMATOR:
        return "ctor"
    if canonical.startswith("estimator.") and canonical[len("estimator.") :] in PREMADE:
        return "ctor"
    if canonical == "estimator.train_and_evaluate":
        return "train_and_evaluate"
    if canonical in SPEC_CTORS:
        # by order, not by text: a notebook's cells repeat one EvalSpec(...) word for word
        # for different estimators
        return "spec"
    if canonical in NUMPY_INPUTS:
        return "numpy"
    return None


_SHIM_KINDS = {
    "model_to_estimator": "ctor",
    "tf2.Estimator": "ctor",  # the tf2 target's facade
    "tf2.model_to_estimator": "ctor",
    "tf2.inputs.numpy_input_fn": "numpy",
    "tf2.inputs.pandas_input_fn": "numpy",
    "tf2.train_and_evaluate": "train_and_evaluate",
    "tf2.TrainSpec": "spec",
    "tf2.EvalSpec": "spec",
    **{f"premade.{name}": "ctor" for name in sorted(TPU_PREMADE)},
    "train_and_evaluate": "train_and_evaluate",
    "numpy_input_fn": "numpy",
    "pandas_input_fn": "numpy",
}
