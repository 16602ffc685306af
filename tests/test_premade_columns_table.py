"""TPU010 refuses at migrate time the feature columns est2tpu.runtime.premade refuses on a TPU
at run time: the rule's table is the runtime's (read without TensorFlow)."""

from __future__ import annotations

import libcst as cst

from est2tpu import tfapi
from est2tpu.runtime import premade as runtime

CALL = cst.parse_expression("tf.estimator.DNNClassifier(hidden_units=[8], feature_columns=c)")


def test_rule_and_runtime_share_the_columns_a_tpu_takes() -> None:
    assert tuple(tfapi.TPU_PREMADE_COLUMNS.values()) == runtime._TPU_COLUMNS


def test_a_premade_over_string_or_sparse_columns_stays() -> None:
    assert isinstance(CALL, cst.Call)
    qualified = "tensorflow.estimator.DNNClassifier"
    refuse = tfapi.premade_refusal
    assert refuse("DNNClassifier", qualified, CALL, True, ["numeric_column"]) is None
    assert refuse("DNNClassifier", qualified, CALL, True, tfapi.TPU_PREMADE_COLUMNS) is None
    why = refuse("DNNClassifier", qualified, CALL, True, ["numeric_column", "embedding_column"])
    assert why is not None and "columns (embedding_column)" in why


def test_column_kinds_are_the_functions_that_build_columns() -> None:
    kinds = ["numeric_column", "categorical_column_with_hash_bucket", "shared_embedding_columns"]
    assert all(tfapi.is_column_kind(name) for name in kinds)
    others = ["input_layer", "linear_model", "make_parse_example_spec"]
    assert not any(tfapi.is_column_kind(name) for name in others)
