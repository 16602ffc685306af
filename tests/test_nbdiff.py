"""`--diff` on notebooks: cells' source lines under `nb.ipynb:cell N` headers by default, and
with `--notebook-diff json` the diff of the file's JSON, which `git apply` applies to give the
bytes `migrate` writes. The file written is the JSON either way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from est2tpu.ftypes import FileResult, Status
from est2tpu.nbdiff import NotebookDiff, cell_diff, diff

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"

MODEL_FN = """\
def model_fn(features, labels, mode, params):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)"""
ESTIMATOR = 'estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="m")'


def _notebook(cells: list[tuple[str, str]], *, as_lists: bool = True) -> str:
    """A notebook as Jupyter writes it (indent 1), cells given as (cell_type, source)."""

    def source(text: str) -> object:
        return text.splitlines(keepends=True) if as_lists else text

    data = {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source(text)}
            | ({"execution_count": None, "outputs": []} if kind == "code" else {})
            for kind, text in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _cli(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args, "--no-cache"],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"},
        timeout=300,
    )


def _headers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("--- ", "+++ "))]


@pytest.mark.parametrize("as_lists", [True, False], ids=["source_as_lines", "source_as_string"])
def test_cells_are_shown_as_source_lines_numbered_as_the_notebook_shows_them(
    tmp_path: Path, as_lists: bool
) -> None:
    text = _notebook(
        [
            ("markdown", '# Train\nA "quoted" word and a\ttab.'),
            ("code", "import tensorflow as tf"),
            ("markdown", "The model:"),
            ("code", MODEL_FN),
            ("code", ESTIMATOR),
        ],
        as_lists=as_lists,
    )
    nb = tmp_path / "nb.ipynb"
    nb.write_text(text, encoding="utf-8")
    done = _cli("migrate", "--diff", "nb.ipynb", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    out = done.stdout.decode()
    # Cell 2 gains the runtime import, 4 and 5 are migrated (markdown cells count, as in the
    # notebook and in findings).
    assert _headers(out) == [
        "--- a/nb.ipynb:cell 2",
        "+++ b/nb.ipynb:cell 2",
        "--- a/nb.ipynb:cell 4",
        "+++ b/nb.ipynb:cell 4",
        "--- a/nb.ipynb:cell 5",
        "+++ b/nb.ipynb:cell 5",
    ]
    assert (
        "-    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)\n" in out
    )
    assert "+estimator = tf.compat.v1.estimator.tpu.TPUEstimator(\n" in out
    # Source lines, not JSON: no escaped quotes or newlines, no "source" keys.
    assert '\\"' not in out and "\\n" not in out and '"source"' not in out
    assert nb.read_text(encoding="utf-8") == text  # --diff writes nothing

    # What migrate writes is still the notebook's JSON, layout kept.
    assert _cli("migrate", "nb.ipynb", cwd=tmp_path).returncode in (0, 1)
    written = nb.read_text(encoding="utf-8")
    cells = json.loads(written)["cells"]
    assert len(cells) == 5 and cells[0] == json.loads(text)["cells"][0]
    assert written.startswith('{\n "cells": [\n')


def test_check_diff_shows_cells_too(tmp_path: Path) -> None:
    (tmp_path / "nb.ipynb").write_text(
        _notebook([("code", "import tensorflow as tf\n\n" + MODEL_FN + "\n\n" + ESTIMATOR)]),
        encoding="utf-8",
    )
    done = _cli("check", "--diff", "nb.ipynb", cwd=tmp_path)
    assert done.returncode == 1
    assert _headers(done.stdout.decode()) == ["--- a/nb.ipynb:cell 1", "+++ b/nb.ipynb:cell 1"]


@pytest.mark.parametrize(
    "name",
    [
        "crlf_cell_sources",
        # The wider variants (magic cells kept byte for byte): not in `make check`.
        pytest.param("datalab_sh", marks=pytest.mark.slow),
        pytest.param("cell_magic_writefile_estimator_python", marks=pytest.mark.slow),
    ],
)
def test_json_diff_applies_with_git_apply(tmp_path: Path, name: str) -> None:
    source = NOTEBOOKS / f"{name}.before.ipynb"
    # A .py file beside the notebook: one patch for the whole run, as `git apply` takes it.
    for tree in ("applied", "migrated"):
        (tmp_path / tree).mkdir()
        shutil.copyfile(source, tmp_path / tree / "nb.ipynb")
        (tmp_path / tree / "train.py").write_text(
            f"import tensorflow as tf\n\n{MODEL_FN}\n\n{ESTIMATOR}\n"
        )
    applied, migrated = tmp_path / "applied", tmp_path / "migrated"

    done = _cli("migrate", "--diff", "--notebook-diff", "json", ".", cwd=applied)
    assert done.returncode in (0, 1), done.stderr
    assert b"--- a/nb.ipynb\n" in done.stdout and b":cell " not in done.stdout
    git = subprocess.run(
        ["git", "apply", "-"], cwd=applied, input=done.stdout, capture_output=True, check=False
    )
    assert git.returncode == 0, git.stderr
    assert _cli("migrate", ".", cwd=migrated).returncode in (0, 1)
    for file in ("nb.ipynb", "train.py"):
        assert (applied / file).read_bytes() == (migrated / file).read_bytes()
    assert (migrated / "nb.ipynb").read_bytes() != source.read_bytes()
    assert "TPUEstimator(" in (migrated / "train.py").read_text()


def test_the_flag_is_documented_in_help(tmp_path: Path) -> None:
    for command in ("migrate", "check"):
        out = _cli(command, "--help", cwd=tmp_path).stdout.decode()
        assert "--notebook-diff" in out and "git apply" in " ".join(out.split())


# -- the renderer on its own: the cases a run rarely produces ---------------------------------


def _result(old: str, new: str, path: str = "nb.ipynb") -> FileResult:
    return FileResult(Path(path), Status.CHANGED, old_text=old, new_text=new)


def test_a_py_file_is_always_a_unified_diff_of_its_text() -> None:
    result = _result("a = 1\n", "a = 2\n", "m.py")
    expected = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    assert diff(result) == diff(result, NotebookDiff.JSON) == expected


def test_cells_that_cannot_be_paired_fall_back_to_the_json_diff() -> None:
    old = _notebook([("code", "a = 1")])
    new = _notebook([("code", "a = 2"), ("code", "b = 1")])
    result = _result(old, new)
    assert cell_diff(result) is None
    assert diff(result).startswith("--- a/nb.ipynb\n+++ b/nb.ipynb\n")
    not_json = _result("{", "{ }")
    assert cell_diff(not_json) is None and diff(not_json).startswith("--- a/nb.ipynb\n")


def test_a_changed_line_ending_at_the_end_of_a_cell_is_said() -> None:
    same_end = _result(_notebook([("code", "a = 1\nb = 2")]), _notebook([("code", "a = 1\nb = 3")]))
    assert cell_diff(same_end) == (
        "--- a/nb.ipynb:cell 1\n+++ b/nb.ipynb:cell 1\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    )
    ending = _result(_notebook([("code", "a = 1")]), _notebook([("code", "a = 1\n")]))
    assert cell_diff(ending) == (
        "--- a/nb.ipynb:cell 1\n+++ b/nb.ipynb:cell 1\n@@ -1 +1 @@\n-a = 1\n"
        "\\ No newline at end of cell\n+a = 1\n"
    )


def test_an_unchanged_notebook_has_no_diff() -> None:
    text = _notebook([("code", "a = 1")])
    assert diff(_result(text, text)) == "" and cell_diff(_result(text, text)) == ""
