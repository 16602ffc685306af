"""Notebooks: code cells migrated as one program, IPython syntax kept, JSON layout kept."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

from est2tpu import api
from est2tpu.ftypes import Status
from est2tpu.notebook import load

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def code(source: list[str] | str, n: int | None = None, outputs: list[Any] | None = None) -> Any:
    return {
        "cell_type": "code",
        "execution_count": n,
        "metadata": {"id": f"cell{n}"},
        "outputs": outputs or [],
        "source": source,
    }


def markdown(source: list[str]) -> Any:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def real_notebook() -> Any:
    """Shaped like a Colab/Jupyter tutorial: markdown, shell, magics, outputs with images."""
    return {
        "cells": [
            markdown(["# Estimator on TPU — démo\n", "\n", "Train a tiny model."]),
            code(
                [
                    "!pip install -q tensorflow==2.15\n",
                    "import numpy as np\n",
                    "import tensorflow as tf",
                ],
                1,
                [{"name": "stdout", "output_type": "stream", "text": ["Successfully installed\n"]}],
            ),
            markdown(["## The model"]),
            code(
                [
                    "def model_fn(features, labels, mode, params):\n",
                    '    logits = tf.compat.v1.layers.dense(features["x"], 2)\n',
                    "    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)\n",
                    "    optimizer = tf.compat.v1.train.AdamOptimizer()\n",
                    "    train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())\n",
                    "    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)",
                ],
                2,
            ),
            code(
                [
                    "%%time\n",
                    "def train_input_fn():\n",
                    "    x = np.zeros((64, 4), np.float32)\n",
                    "    y = np.zeros((64,), np.int32)\n",
                    '    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)',
                ],
                3,
            ),
            code(
                [
                    "%time x = 1\n",
                    "tf.estimator.Estimator?\n",
                    'est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")\n',
                    "est.train(train_input_fn, steps=10)",
                ],
                4,
                [
                    {
                        "data": {"image/png": PNG, "text/plain": ["<Figure size 640x480>"]},
                        "metadata": {"needs_background": "light"},
                        "output_type": "display_data",
                    }
                ],
            ),
            code("%%bash\necho 'tf.estimator.Estimator'\n", 5),
        ],
        "metadata": {
            "colab": {"name": "demo.ipynb", "provenance": []},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 0,
    }


LAYOUTS = {
    # nbformat / Jupyter: indent 1, sorted keys, raw non-ASCII, final newline.
    "jupyter": lambda nb: json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    # Colab-like: indent 2, insertion order, \\u escapes, no final newline.
    "colab": lambda nb: json.dumps(nb, indent=2, ensure_ascii=True),
}


def changed_json_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def sources(nb: Any) -> list[str]:
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in nb["cells"]
    ]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_round_trip_changes_only_code_source_lines(tmp_path: Path, layout: str) -> None:
    original = real_notebook()
    raw = LAYOUTS[layout](original)
    path = tmp_path / "demo.ipynb"
    path.write_text(raw, encoding="utf-8")
    [result] = api.migrate_paths([tmp_path])
    assert result.status is Status.CHANGED, result.error
    new_text = result.new_text or ""
    new = json.loads(new_text)
    # Everything but the source of code cells is identical, key order included.
    assert list(new) == list(original)
    assert new["metadata"] == original["metadata"]
    for old_cell, new_cell in zip(original["cells"], new["cells"]):
        assert list(new_cell) == list(old_cell)
        assert {k: v for k, v in new_cell.items() if k != "source"} == {
            k: v for k, v in old_cell.items() if k != "source"
        }
        if old_cell["cell_type"] == "markdown":
            assert new_cell["source"] == old_cell["source"]
    # Layout kept: same final newline, indent and escaping; so re-dumping reproduces it.
    assert new_text == LAYOUTS[layout](new)
    # The JSON diff touches only source lines of code cells.
    removed, added = changed_json_lines(raw, new_text)
    code_lines = {
        json.dumps(line, ensure_ascii=layout == "colab")
        for cell in (*original["cells"], *new["cells"])
        if cell["cell_type"] == "code"
        for line in (cell["source"] if isinstance(cell["source"], list) else [cell["source"]])
    }
    for line in removed + added:
        assert line.strip().rstrip(",") in code_lines, line
    # The IPython syntax survived; the program was migrated across cells.
    src = sources(new)
    assert src[1].startswith(
        "!pip install -q tensorflow==2.15\nimport est2tpu.runtime as tpu_runtime\n"
        "import numpy as np\nimport tensorflow as tf"
    )
    assert "TPUEstimatorSpec(" in src[3]  # model_fn in one cell ...
    assert src[4].startswith("%%time\n") and "params['batch_size']" in src[4].replace('"', "'")
    assert src[5].startswith("%time x = 1\ntf.estimator.Estimator?\n")
    assert "TPUEstimator(" in src[5]  # ... the Estimator in a later one
    assert src[6] == "%%bash\necho 'tf.estimator.Estimator'\n"
    # nbformat's convention: no newline at the end of a cell's last line.
    assert not src[3].endswith("\n") and not src[5].endswith("\n")


def test_second_run_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "demo.ipynb"
    path.write_text(LAYOUTS["jupyter"](real_notebook()), encoding="utf-8")
    [first] = api.migrate_paths([path])
    path.write_text(first.new_text or "", encoding="utf-8")
    [second] = api.migrate_paths([path])
    assert second.status is Status.UNCHANGED
    assert second.new_text == first.new_text


def test_findings_point_at_the_cell_and_the_line_in_it(tmp_path: Path) -> None:
    nb = real_notebook()
    nb["cells"][3]["source"][4] = (
        "    train_op = tf.contrib.layers.optimize_loss(loss, None, 0.1, 'SGD', gradient_noise_scale=0.5)\n"
    )
    path = tmp_path / "demo.ipynb"
    path.write_text(LAYOUTS["jupyter"](nb), encoding="utf-8")
    [result] = api.migrate_paths([path])
    tpu004 = [f for f in result.findings if f.rule_id == "TPU004"]
    assert [(f.path, f.position.line, f.position.column) for f in tpu004] == [
        (f"{path}:cell 4", 5, 16)
    ]
    assert tpu004[0].render().startswith(f"{path}:cell 4:5:16: TPU004 ")


def test_suppression_comment_in_a_cell(tmp_path: Path) -> None:
    nb = real_notebook()
    nb["cells"][3]["source"][4] = (
        "    train_op = tf.contrib.layers.optimize_loss(loss, None, 0.1, 'SGD', gradient_noise_scale=0.5)"
        "  # est2tpu: ignore[TPU004]\n"
    )
    path = tmp_path / "demo.ipynb"
    path.write_text(LAYOUTS["jupyter"](nb), encoding="utf-8")
    [result] = api.migrate_paths([path])
    assert result.status is Status.CHANGED
    assert [f.rule_id for f in result.findings] == []


def test_a_cell_that_cannot_parse_fails_the_notebook_naming_the_cell(tmp_path: Path) -> None:
    nb = real_notebook()
    nb["cells"][5]["source"].append("\nest.train(input_fn=")
    path = tmp_path / "demo.ipynb"
    raw = LAYOUTS["jupyter"](nb)
    path.write_text(raw, encoding="utf-8")
    [result] = api.migrate_paths([tmp_path])
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.startswith("cannot parse cell 6:")
    assert "\n" not in result.error
    assert path.read_text(encoding="utf-8") == raw


def test_broken_json_fails_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [ tf.estimator', encoding="utf-8")
    [result] = api.migrate_paths([path])
    assert result.status is Status.FAILED and "invalid JSON" in (result.error or "")


def test_source_as_a_string_and_a_non_python_kernel(tmp_path: Path) -> None:
    nb = real_notebook()
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["source"] = "".join(cell["source"])
    path = tmp_path / "strings.ipynb"
    path.write_text(LAYOUTS["jupyter"](nb), encoding="utf-8")
    [result] = api.migrate_paths([path])
    assert result.status is Status.CHANGED
    assert isinstance(json.loads(result.new_text or "")["cells"][3]["source"], str)
    nb["metadata"]["kernelspec"]["language"] = "R"
    path.write_text(LAYOUTS["jupyter"](nb), encoding="utf-8")
    [result] = api.migrate_paths([path])
    assert result.status is Status.SKIPPED


def test_skip_file_in_the_first_code_cell(tmp_path: Path) -> None:
    nb = real_notebook()
    nb["cells"][1]["source"].insert(0, "# est2tpu: skip-file\n")
    path = tmp_path / "demo.ipynb"
    path.write_text(LAYOUTS["jupyter"](nb), encoding="utf-8")
    [result] = api.migrate_paths([path])
    assert result.status is Status.SKIPPED


def test_masking_is_reversible() -> None:
    nb = real_notebook()
    notebook = load(LAYOUTS["jupyter"](nb).encode())
    assert notebook.render(notebook.program) == notebook.raw
    assert "!pip" not in notebook.program and "%time" not in notebook.program
    compile(notebook.program, "nb", "exec")
