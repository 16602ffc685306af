"""TPU011's decision on a Keras model compiled with an optimizer the runtime cannot map: the
`model_to_estimator` stays as it is, with the reason on the original line.

Which optimizers `est2tpu.runtime.model_to_estimator` maps exactly is a fact about the runtime
and the program (`est2tpu.project.keras_models.why_unmappable`, whose table a test holds
equal to the runtime's); the project index keeps the first reason on the construction's plan
(`CtorPlan.unmappable_optimizer`), and the finding is worded here.
"""

from __future__ import annotations


def optimizer_refusal(reason: str) -> str:
    """TPU011's finding for a `model_to_estimator` whose model is compiled with an optimizer
    the runtime would refuse, for `reason` (`why_unmappable`'s)."""
    return (
        f"the Keras model is compiled with an optimizer est2tpu.runtime.model_to_estimator "
        f"cannot train with exactly: {reason} (the TPUEstimator's model_fn needs a "
        "tf.compat.v1.train optimizer); compile it with SGD, Adam, RMSprop or Adagrad "
        "without weight decay, clipping, EMA or amsgrad, or a tf.compat.v1.train optimizer, "
        "or write a model_fn that returns a TPUEstimatorSpec by hand"
    )
