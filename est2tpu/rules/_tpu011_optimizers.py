"""TPU011's decision on the optimizer a Keras model is compiled with: whether
`est2tpu.runtime.model_to_estimator` maps it to an exact `tf.compat.v1.train` optimizer.

The table is the runtime's (`est2tpu.runtime.keras`: the classes it maps and the settings it
refuses); a test holds the two equal. What the program shows at migrate time (a string, a
Keras optimizer class called with literal arguments) is decided here, so that a model the
runtime would refuse leaves the file as it is, with the reason on the original line; an
optimizer whose arguments are known only at run time is left to the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from est2tpu.project.keras_models import UNKNOWN, CompiledOptimizer

# Keras optimizer classes (lower-cased) the runtime maps exactly.
MAPPED = ("sgd", "adam", "rmsprop", "adagrad")
# Keras optimizer settings with no TF1 counterpart: any of them set (not None/0/False) makes
# the optimizer unmappable.
UNMAPPABLE_SETTINGS = (
    "weight_decay",
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "amsgrad",
)


def why_unmappable(optimizer: CompiledOptimizer) -> str | None:
    """Why the runtime cannot map this optimizer exactly; None when it can, or when only
    the run shows it (a setting that is no literal)."""
    shown = f'"{optimizer.name}"' if optimizer.from_string else f"{optimizer.name}(...)"
    if optimizer.name.lower() not in MAPPED:
        return f"{shown} has no exact tf.compat.v1.train equivalent"
    for key in UNMAPPABLE_SETTINGS:
        value = optimizer.settings.get(key)
        if value is not UNKNOWN and value:
            return f"{optimizer.name}({key}={value!r}) has no exact tf.compat.v1.train equivalent"
    return None


def optimizer_refusal(optimizers: Sequence[CompiledOptimizer] | None) -> str | None:
    """TPU011's finding for a `model_to_estimator` whose model is compiled with an optimizer
    the runtime would refuse; None when every one it may be compiled with maps (or the
    program does not show which)."""
    reasons = [why for why in map(why_unmappable, optimizers or ()) if why is not None]
    if not reasons:
        return None
    return (
        f"the Keras model is compiled with an optimizer est2tpu.runtime.model_to_estimator "
        f"cannot train with exactly: {reasons[0]} (the TPUEstimator's model_fn needs a "
        "tf.compat.v1.train optimizer); compile it with SGD, Adam, RMSprop or Adagrad "
        "without weight decay, clipping, EMA or amsgrad, or a tf.compat.v1.train optimizer, "
        "or write a model_fn that returns a TPUEstimatorSpec by hand"
    )
