"""TF2003's plain TF1 names hold on current TensorFlow: each name it reports in its plain
spelling (`tf.get_variable`, `tf.summary.merge_all`) is missing from current TensorFlow's
`tf`, so a migrated model_fn calling it would fail, and is TF1's `tf.compat.v1` name of that
spelling; `tf.contrib` is missing too. And the names that mark a file written for TF 1.x
(`_tf2.written_for_tf1`: `tf.layers`, `tf.logging`, `tf.train.AdamOptimizer`, ...) are
missing from TF 2.15's `tf` as from current TensorFlow's: a file that spells one ran on
TF 1.x, where plain `tf.losses`/`tf.metrics` were TF1's."""

from __future__ import annotations

import json
import textwrap
from types import ModuleType

import pytest

from est2tpu.rules._tf2 import PLAIN_TF1_MODULES, PLAIN_TF1_NAMES, PLAIN_TF1_ONLY
from est2tpu.rules.tf2006_tf1_modules_compat_v1 import MODULES

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


@pytest.mark.tf
@pytest.mark.parametrize("release", ["2.15", "current"])
def test_names_marking_a_file_written_for_tf1_are_missing_from_tf2(
    release: str, tfcur: str, harness: ModuleType
) -> None:
    assert set(MODULES) <= PLAIN_TF1_MODULES  # TF2006's modules: probed here
    python = tfcur if release == "current" else harness.tf_python()
    names = sorted(PLAIN_TF1_MODULES | PLAIN_TF1_NAMES)
    out = harness.run_tf_json(_PROBE, json.dumps(names), python=python)
    # all but tf.contrib are still in tf.compat.v1 (where TF 1.x code finds them)
    assert out == {"plain": [], "compat_v1_missing": ["contrib"], "contrib": False}
