"""Machine reports (json, github, sarif, junit) point at lines of the user's file and stay
valid documents whatever the file names hold. Real subprocess runs of the CLI over real
files; every SARIF document is validated against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from sarif_schema import validate as validate_sarif

PROGRAM = """\
import tensorflow as tf


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": [[1.0]] * 64}, [[0.0]] * 64))
    return ds.batch(32)


def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.AdamOptimizer().minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn)
est.train(input_fn=input_fn, steps=2)
est.evaluate(input_fn=input_fn, steps=1)
"""

LINES = PROGRAM.splitlines()
BATCH_LINE = LINES.index("    return ds.batch(32)") + 1
SPEC_LINE = next(i for i, line in enumerate(LINES, 1) if "EstimatorSpec(" in line)
ESTIMATOR_LINE = next(i for i, line in enumerate(LINES, 1) if "Estimator(model_fn" in line)


def check(
    root: Path, fmt: str, *paths: str, env: dict[str, str] | None = None
) -> tuple[int, bytes, str]:
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", "check", "-f", fmt, *(paths or (".",))],
        cwd=root,
        env={
            **os.environ,
            "NO_COLOR": "1",
            "XDG_CACHE_HOME": str(root.parent / "xdg"),
            **(env or {}),
        },
        capture_output=True,
        check=False,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")


def test_rewrite_locations_are_lines_of_the_users_file(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(PROGRAM, encoding="utf-8")
    code, out, err = check(root, "json")
    assert code == 1, err
    [entry] = json.loads(out)["files"]
    where = {(e["rule"], e["description"]): (e["line"], e["column"]) for e in entry["edits"]}
    assert all(1 <= line <= len(LINES) for line, _ in where.values()), where
    assert where["TPU007", "Estimator -> TPUEstimator"][0] == ESTIMATOR_LINE
    assert where["TPU006", "EstimatorSpec -> TPUEstimatorSpec"][0] == SPEC_LINE
    assert where["TPU005", "batch size read from params['batch_size']"] == (BATCH_LINE, 12)
    code, out, _ = check(root, "sarif")
    doc = validate_sarif(out.decode("utf-8"))
    lines = [
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in doc["runs"][0]["results"]
    ]
    assert lines and max(lines) <= len(LINES) and BATCH_LINE in lines
    code, out, _ = check(root, "junit")
    failure = ET.fromstring(out).find(".//failure")
    assert failure is not None and f"TPU007: {ESTIMATOR_LINE}:" in (failure.text or "")


def test_rewrite_locations_in_a_notebook_are_lines_of_their_cell(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    split = PROGRAM.index("\n\nest = ")
    sources = [PROGRAM[:split] + "\n", PROGRAM[split + 2 :]]
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": text.splitlines(keepends=True),
        }
        for text in sources
    ]
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "nb.ipynb").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    code, out, err = check(root, "json")
    assert code == 1, err
    [entry] = json.loads(out)["files"]
    assert entry["edits"]
    for edit in entry["edits"]:
        cell_lines = sources[edit["cell"] - 1].count("\n")
        assert 1 <= edit["line"] <= cell_lines, edit
    [estimator] = [e for e in entry["edits"] if e["rule"] == "TPU007"]
    assert (estimator["cell"], estimator["line"]) == (2, 1)


def test_github_lists_findings_before_rewrites(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.py").write_text(PROGRAM, encoding="utf-8")  # rewrites and a TPU005 finding
    (root / "b.py").write_text(PROGRAM, encoding="utf-8")
    code, out, err = check(root, "github")
    assert code == 1, err
    lines = out.decode("utf-8").splitlines()
    kinds = ["rewrite" if "::would rewrite: " in line else "finding" for line in lines]
    assert kinds.count("finding") == 2
    assert kinds == sorted(kinds)  # every finding ("finding" < "rewrite") comes first


ODD_NAMES = [b"my model.py", b"c#1.py", b"x\xff.py", b"tab\tand%25.py", b"ctl\x01.py"]


@pytest.fixture
def odd_tree(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    for name in ODD_NAMES:
        with open(os.path.join(os.fsencode(root), name), "w", encoding="utf-8") as f:
            f.write(PROGRAM)
    return root


def test_sarif_uris_are_percent_encoded_and_name_each_file(odd_tree: Path) -> None:
    code, out, err = check(odd_tree, "sarif")
    assert code == 1, err
    doc = validate_sarif(out.decode("utf-8"))
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    }
    assert {urllib.parse.unquote_to_bytes(u) for u in uris} == set(ODD_NAMES)
    assert "c%231.py" in uris and "my%20model.py" in uris
    # An absolute path is a file:// URI, valid too.
    code, out, _ = check(odd_tree, "sarif", str(odd_tree / "my model.py"))
    doc = validate_sarif(out.decode("utf-8"))
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"
    ].startswith("file:///")


@pytest.mark.parametrize("fmt", ["github", "junit", "json", "sarif", "text"])
def test_non_utf8_and_control_character_names_give_a_report_not_a_traceback(
    odd_tree: Path, fmt: str
) -> None:
    code, out, err = check(odd_tree, fmt, env={"PYTHONIOENCODING": "utf-8"})
    assert code == 1, err
    assert "Traceback" not in err
    text = out.decode("utf-8")  # every report is UTF-8
    if fmt == "github":
        assert "file=x\\xff.py," in text and "file=ctl\\x01.py," in text
    elif fmt == "junit":
        root = ET.fromstring(out)  # well-formed XML
        names = {case.get("name") for case in root.iter("testcase")}
        assert {"x\\xff.py", "ctl\\x01.py", "my model.py", "c#1.py"} <= names
    elif fmt == "json":
        assert len(json.loads(text)["files"]) == len(ODD_NAMES)
    elif fmt == "sarif":
        validate_sarif(text)
