"""A tf2 output never references `tf.estimator`: every fixture, project and program of the
repository, migrated with `--target tf2` and every rule of that target, either leaves the
file as it is (with findings saying what to port by hand) or leaves no Estimator API in
its code (comments and strings aside), since current TensorFlow has none. So does every
value of every axis of the generated trainers (tests/gen_programs.py), each in a
composition migrated as a tree."""

from __future__ import annotations

import io
import json
import re
import sys
import tokenize
from pathlib import Path

import pytest

from est2tpu.api import migrate_paths, migrate_source
from est2tpu.ftypes import Status, Target

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [
        *(ROOT / "fixtures").glob("*/*.before.py"),
        *(ROOT / "fixtures" / "projects").rglob("*.py"),
        *(ROOT / "tests" / "tf2" / "programs").glob("*.py"),
    ]
)
sys.path.insert(0, str(ROOT / "tests"))

from gen_programs import AXES, Composition, compositions


def every_value() -> list[Composition]:
    """Compositions, in a fixed order, that hold every value of every axis between them."""
    wanted = {(axis, value) for axis, values in AXES.items() for value in values}
    every = compositions()
    chosen = []
    while wanted:
        best = max(every, key=lambda c: len({(a, getattr(c, a)) for a in AXES} & wanted))
        chosen.append(best)
        wanted -= {(a, getattr(best, a)) for a in AXES}
    return chosen


ESTIMATOR = re.compile(r"\btf\.estimator\b|\btensorflow\.estimator\b|\btensorflow_estimator\b")


def code_only(text: str) -> str:
    """`text` without its comments and string literals (docstrings may name tf.estimator)."""
    kept = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.COMMENT, tokenize.STRING):
            kept.append(token.string)
    return " ".join(kept)


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_tf2_output_never_references_tf_estimator(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    result = migrate_source(text, path=path.name, target=Target.TF2)
    if result.status is Status.FAILED or result.new_text in (None, text):
        return  # left as it was
    found = ESTIMATOR.search(code_only(result.new_text))
    assert found is None, (found, [f.render() for f in result.findings])


@pytest.mark.parametrize("comp", every_value(), ids=lambda c: c.name)
def test_tf2_output_of_generated_trainers_never_references_tf_estimator(
    comp: Composition, tmp_path: Path
) -> None:
    for rel, text in comp.files().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    results = list(migrate_paths([tmp_path], jobs=1, target=Target.TF2))
    assert any(r.new_text not in (None, r.old_text) for r in results)
    for result in results:
        assert result.status is not Status.FAILED, result.error
        text = result.new_text
        if text is None or text == result.old_text:
            continue
        if result.path.suffix == ".ipynb":
            cells = json.loads(text)["cells"]
            text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        found = ESTIMATOR.search(code_only(text))
        assert found is None, (result.path.name, found, [f.render() for f in result.findings])
