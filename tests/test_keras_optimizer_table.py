"""TPU011 refuses at migrate time exactly the Keras optimizers est2tpu.runtime.model_to_estimator
refuses at run time: the rule's table is the runtime's (read without TensorFlow)."""

from __future__ import annotations

from est2tpu.project.keras_models import UNKNOWN, CompiledOptimizer
from est2tpu.rules import _tpu011_optimizers as rule
from est2tpu.runtime import keras as runtime


def test_rule_and_runtime_share_the_mapping() -> None:
    assert rule.MAPPED == runtime._MAPPED
    assert rule.UNMAPPABLE_SETTINGS == runtime._UNMAPPABLE_SETTINGS


def test_only_literal_settings_refuse() -> None:
    assert rule.why_unmappable(CompiledOptimizer("SGD", False, {"nesterov": True})) is None
    assert rule.why_unmappable(CompiledOptimizer("Adam", False, {"amsgrad": UNKNOWN})) is None
    assert rule.why_unmappable(CompiledOptimizer("Adam", False, {"clipnorm": None})) is None
    assert rule.why_unmappable(CompiledOptimizer("Adam", False, {"clipnorm": 1.0})) is not None
    assert rule.why_unmappable(CompiledOptimizer("adam", True)) is None
    assert rule.why_unmappable(CompiledOptimizer("Nadam", True)) is not None
