"""Setting inert top-level defs aside (est2tpu/inert.py) changes nothing but the time taken.

Each check runs the same migration twice, with the engine setting defs aside wherever it can
(`MIN_STATEMENTS = 0`, even in a five-line fixture) and never (the plain engine), and
requires the same text, findings and edits.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import libcst as cst
import pytest

from est2tpu import inert
from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import FileResult, Target
from est2tpu.index import ProjectIndex

REPO = Path(__file__).resolve().parents[1]
FIXTURES = data_dir("fixtures")
CASES = sorted(FIXTURES.glob("*/*.before.py")) + sorted(FIXTURES.glob("projects/**/*.py"))

_spec = importlib.util.spec_from_file_location(
    "gen_big_module", REPO / "bench" / "gen_big_module.py"
)
assert _spec is not None and _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_big_module"] = gen
_spec.loader.exec_module(gen)


def facts(result: FileResult) -> tuple[object, ...]:
    return (result.status, result.new_text, result.findings, result.edits, result.error)


def both_ways(
    monkeypatch: pytest.MonkeyPatch, text: str, target: Target
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    with monkeypatch.context() as m:
        m.setattr(inert, "MIN_STATEMENTS", 0)
        aside = facts(migrate_source(text, path="m.py", target=target))
    with monkeypatch.context() as m:
        m.setattr(inert, "MIN_STATEMENTS", 10**9)
        plain = facts(migrate_source(text, path="m.py", target=target))
    return aside, plain


@pytest.mark.slow  # every fixture, twice per target
@pytest.mark.parametrize("target", list(Target), ids=lambda t: t.value)
def test_every_fixture_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target
) -> None:
    differ = []
    for path in CASES:
        aside, plain = both_ways(monkeypatch, path.read_text(encoding="utf-8"), target)
        if aside != plain:
            differ.append(str(path.relative_to(FIXTURES)))
    assert not differ


HELPERS_AROUND = '''
BATCH = 32


def _scale(x):
    """Called by the model_fn: the tf2 rules follow it by name."""
    return tf.compat.v1.layers.dense(x, 4)


def unrelated(a):
    return os.path.join(a, "x")  # est2tpu: ignore[TPU001]


def uses_estimator_global():
    return ESTIMATOR.evaluate(input_fn)


def model_fn(features, labels, mode, params):
    net = _scale(features["x"])
    loss = tf.compat.v1.losses.mean_squared_error(labels, tf.compat.v1.layers.dense(net, 1))
    train_op = tf.compat.v1.train.AdagradOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step()
    )
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn(params):
    return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[1.0]])).repeat().batch(BATCH)


@property
def decorated(self):
    # nothing to see
    return 1


ESTIMATOR = tf.estimator.Estimator(model_fn=model_fn)
'''


def big_text() -> str:
    """60 helpers, the generator's model_fn and Estimator, the cases above, 30 helpers."""
    more = "".join(gen.HELPER.format(n=n, m=n % 7) for n in range(1000, 1030))
    return "import os\n" + gen.big_module(60) + HELPERS_AROUND + more


@pytest.mark.parametrize(
    "newline",
    # CRLF (about 1.5 s per target) in the full suite only.
    [pytest.param("\n", id="lf"), pytest.param("\r\n", id="crlf", marks=pytest.mark.slow)],
)
@pytest.mark.parametrize(
    "target",
    # tf2 (1.5 s) in the full suite only.
    [
        pytest.param(Target.TPU_ESTIMATOR, id=Target.TPU_ESTIMATOR.value),
        pytest.param(Target.TF2, id=Target.TF2.value, marks=pytest.mark.slow),
    ],
)
def test_a_big_module_gives_the_same_results(
    monkeypatch: pytest.MonkeyPatch, target: Target, newline: str
) -> None:
    text = big_text().replace("\n", newline)
    aside, plain = both_ways(monkeypatch, text, target)
    assert aside == plain
    assert aside[1] != text  # the Estimator constructs did change


def test_the_helpers_are_set_aside_and_the_rest_kept() -> None:
    text = big_text() + "\n\ndef last():\n    pass\n"
    reduced = inert.reduce(cst.parse_module(text), text, "m.py", ProjectIndex())
    assert reduced is not None
    kept = {
        s.name.value for s in reduced.module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))
    }
    # Tied to TensorFlow, to an import or to a kept statement by name; the last statement.
    assert kept == {
        "model_fn",
        "input_fn",
        "main",
        "_scale",
        "uses_estimator_global",
        "last",
    }
    assert len(reduced.module.body) < 25
    # Same line count: every line the rules report is the original's.
    assert reduced.module.code.count("\n") == text.count("\n")
    assert reduced.restore(reduced.module.code) == text


def test_no_setting_aside_under_a_star_import() -> None:
    text = "from tensorflow import *\n" + gen.big_module(60)
    assert inert.reduce(cst.parse_module(text), text, "m.py", ProjectIndex()) is None
