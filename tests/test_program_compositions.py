"""Generated trainers (`gen_programs.Composition`) migrate as an expert would change them.

Each composition is a whole program: [how the model_fn reaches the Estimator] x [where the
batch size lives, in the task module or a settings module] x [how input functions reach
train/evaluate/specs] x [layout: one module, model+task modules, a package, a notebook].
Migrated with `api.migrate_paths` on a real tree: no finding but those it expects, no failure,
a TPUEstimator with a train batch size, every written file compiles, and a second run changes
nothing.

A composition whose model_fn writes an image summary reports TPU009 for it (the only finding
a composition has: `Composition.findings`). A pairwise-covering set of compositions runs
here; under the `slow` marker, every fifteenth composition of the whole product (a fixed
stride, so each run checks the same ~780, every value of every axis among them), and all of
them with EST2TPU_ALL_COMPOSITIONS=1 (about two and a half hours of CPU).
tests/e2e/test_e2e_compositions.py trains a fixed sample under TensorFlow.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gen_programs import AXES, Composition, compositions, covering

from est2tpu import api
from est2tpu.ftypes import Status


def _write(root: Path, comp: Composition) -> None:
    for rel, text in comp.files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _code(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text)["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def check_composition(comp: Composition, root: Path) -> None:
    _write(root, comp)
    expected = comp.findings()
    first = list(api.migrate_paths([root], jobs=1))
    problems = [f"{r.path.name}: {r.error}" for r in first if r.status is Status.FAILED]
    problems += [f.render() for r in first for f in r.findings if f.rule_id not in expected]
    assert not problems, "\n".join(problems)
    assert {f.rule_id for r in first for f in r.findings} == expected
    for result in first:
        if result.new_text is not None and result.new_text != result.old_text:
            result.path.write_text(result.new_text, encoding="utf-8")
    code = {
        p.relative_to(root).as_posix(): _code(p)
        for p in sorted(root.rglob("*"))
        if p.suffix in (".py", ".ipynb")
    }
    for rel, text in code.items():
        compile(text, rel, "exec")
    task = "\n".join(code.values())
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in task
    assert "train_batch_size=" in task
    assert "tf.estimator.Estimator(" not in task
    second = list(api.migrate_paths([root], jobs=1))
    assert all(r.new_text == r.old_text for r in second), [
        r.path.name for r in second if r.new_text != r.old_text
    ]


@pytest.mark.parametrize("comp", covering(), ids=lambda c: c.name)
def test_covering_compositions_migrate_cleanly(comp: Composition, tmp_path: Path) -> None:
    check_composition(comp, tmp_path)


_SLOW_STRIDE = 15
_STRIDE = 1 if os.environ.get("EST2TPU_ALL_COMPOSITIONS") == "1" else _SLOW_STRIDE


@pytest.mark.slow
@pytest.mark.parametrize("comp", compositions()[::_STRIDE], ids=lambda c: c.name)
def test_every_composition_migrates_cleanly(comp: Composition, tmp_path: Path) -> None:
    check_composition(comp, tmp_path)


def test_the_slow_stride_holds_every_value_of_every_axis() -> None:
    sample = compositions()[::_SLOW_STRIDE]
    for axis, values in AXES.items():
        assert {getattr(c, axis) for c in sample} == set(values), axis
