"""The facade's premade estimators against TensorFlow 2.15's: the same constructor, and the
rule's table of arguments (positional order included) is that constructor."""

from __future__ import annotations

import inspect
import json
import textwrap
from types import ModuleType
from typing import Any

import pytest

from est2tpu.rules.tf2001_estimator_facade import PREMADE_FACADE
from est2tpu.runtime.tf2 import premade

# Printed by TF 2.15: each premade's parameters and the repr of each default.
_PROBE = textwrap.dedent(
    """
    import inspect, json
    import tensorflow as tf
    out = {}
    for name in NAMES:
        sig = inspect.signature(getattr(tf.estimator, name).__init__)
        out[name] = [
            [p.name, None if p.default is inspect.Parameter.empty else repr(p.default)]
            for p in list(sig.parameters.values())[1:]
        ]
    print(json.dumps(out))
    """
)
# Defaults spelled differently in the facade, with the same meaning: TF's relu (the facade
# takes None for it, to import no TensorFlow at construction) and Keras' reduction constant.
_SAME_MEANING = {
    ("activation_fn", "None"),
    ("loss_reduction", "'sum_over_batch_size'"),
}


@pytest.fixture(scope="module")
def tf215_signatures(harness: ModuleType) -> dict[str, Any]:
    code = _PROBE.replace("NAMES", repr(sorted(PREMADE_FACADE)))
    proc = harness.run_tf_code(code)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PREMADE_FACADE))
def test_premade_constructor_is_tf215s(name: str, tf215_signatures: dict[str, Any]) -> None:
    tf215 = tf215_signatures[name]
    assert tuple(p for p, _ in tf215) == PREMADE_FACADE[name]
    facade = list(inspect.signature(getattr(premade, name).__init__).parameters.values())[1:]
    assert [p.name for p in facade] == [p for p, _ in tf215]
    for param, (_, default) in zip(facade, tf215):
        mine = None if param.default is inspect.Parameter.empty else repr(param.default)
        assert mine == default or (param.name, mine) in _SAME_MEANING, (param.name, mine, default)
