"""TF2003's plain TF1 names hold on current TensorFlow: each name it reports in its plain
spelling (`tf.get_variable`, `tf.summary.merge_all`) is missing from current TensorFlow's
`tf`, so a migrated model_fn calling it would fail, and is TF1's `tf.compat.v1` name of that
spelling; `tf.contrib` is missing too."""

from __future__ import annotations

import json
import textwrap
from types import ModuleType

import pytest

from est2tpu.rules.tf2003_unsupported_tf1 import PLAIN_TF1_ONLY

_PROBE = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf

    def has(root, dotted):
        for part in dotted.split("."):
            if not hasattr(root, part):
                return False
            root = getattr(root, part)
        return True

    names = json.loads(sys.argv[1])
    print(json.dumps({
        "plain": [n for n in names if has(tf, n)],
        "compat_v1_missing": [n for n in names if not has(tf.compat.v1, n)],
        "contrib": has(tf, "contrib"),
    }))
    """
)


@pytest.mark.tf
def test_plain_tf1_names_are_missing_from_current_tensorflow(
    tfcur: str, harness: ModuleType
) -> None:
    out = harness.run_tf_json(_PROBE, json.dumps(sorted(PLAIN_TF1_ONLY)), python=tfcur)
    assert out == {"plain": [], "compat_v1_missing": [], "contrib": False}
