"""A tf2 output never references `tf.estimator`: every fixture, project and program of the
repository, migrated with `--target tf2` and every rule of that target, either leaves the
file as it is (with findings saying what to port by hand) or leaves no Estimator API in
its code (comments and strings aside), since current TensorFlow has none."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from est2tpu.api import migrate_source
from est2tpu.ftypes import Status, Target

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [
        *(ROOT / "fixtures").glob("*/*.before.py"),
        *(ROOT / "fixtures" / "projects").rglob("*.py"),
        *(ROOT / "tests" / "tf2" / "programs").glob("*.py"),
    ]
)
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
