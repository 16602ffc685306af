"""TPU011 refuses at migrate time exactly the Keras optimizers est2tpu.runtime.model_to_estimator
refuses at run time: the table TPU011 decides by (`project/keras_models`) is the runtime's (read
without TensorFlow)."""

from __future__ import annotations

from est2tpu.project import keras_models as facts
from est2tpu.project.keras_models import UNKNOWN, CompiledOptimizer
from est2tpu.runtime import keras as runtime


def test_rule_and_runtime_share_the_mapping() -> None:
    assert facts.MAPPED == runtime._MAPPED
    assert facts.UNMAPPABLE_SETTINGS == runtime._UNMAPPABLE_SETTINGS


def test_only_literal_settings_refuse() -> None:
    assert facts.why_unmappable(CompiledOptimizer("SGD", False, {"nesterov": True})) is None
    assert facts.why_unmappable(CompiledOptimizer("Adam", False, {"amsgrad": UNKNOWN})) is None
    assert facts.why_unmappable(CompiledOptimizer("Adam", False, {"clipnorm": None})) is None
    assert facts.why_unmappable(CompiledOptimizer("Adam", False, {"clipnorm": 1.0})) is not None
    assert facts.why_unmappable(CompiledOptimizer("adam", True)) is None
    assert facts.why_unmappable(CompiledOptimizer("Nadam", True)) is not None
