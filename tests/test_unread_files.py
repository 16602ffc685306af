"""Syntax errors are reported in the files est2tpu parses, not in the files it leaves alone.

A file that passes the byte pre-filter but that no selected rule acts on (judged from its
text and an import scan, `pipeline._applying`) is left unread, as a file the pre-filter
drops is: it is not compiled, and a syntax error in it is not est2tpu's to report. A file a
rule acts on, or that the project index reads, is parsed, and its syntax error fails it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from est2tpu import api
from est2tpu.ftypes import Status, Target

# Each passes the byte pre-filter (`input_fn`, `model_fn`, `RunConfig`), and no rule acts on it.
UNREAD = {
    "inputs.py": "def make_input_fn():\n    return (\n",
    "py2.py": '# model_fn\nprint "x"\n',
    "dupes.py": "def model_fn(x, x):\n    return x\n",  # parses; only compiling refuses it
    "tfops.py": "import tensorflow as tf\n\ndef input_fn(:\n    return tf.constant(1)\n",
}
# Each is acted on (an Estimator to migrate, an Estimator API to report).
READ = {
    "estimator.py": ("import tensorflow as tf\n\nest = tf.estimator.Estimator(model_fn=f\n"),
    "spec.py": (
        "import tensorflow as tf\n\n"
        "def model_fn(features, labels, mode):\n"
        "    return tf.estimator.EstimatorSpec(mode, loss=)\n"
    ),
    "py2_estimator.py": (
        "import tensorflow as tf\nprint 'x'\nest = tf.estimator.Estimator(model_fn=f)\n"
    ),
}


@pytest.mark.parametrize("target", list(Target))
def test_a_syntax_error_no_rule_acts_on_is_left_unread(tmp_path: Path, target: Target) -> None:
    for name, text in {**UNREAD, **READ}.items():
        (tmp_path / name).write_text(text)
    results = {r.path.name: r for r in api.migrate_paths([tmp_path], target=target, jobs=1)}
    assert set(results) == set(UNREAD) | set(READ)
    for name, text in UNREAD.items():
        result = results[name]
        assert (result.status, result.error, result.findings) == (Status.UNCHANGED, None, [])
        assert result.new_text == result.old_text == text
    for name in READ:
        result = results[name]
        assert result.status is Status.FAILED, name
        assert result.error is not None and result.error.startswith(("cannot parse", "syntax"))


def test_the_cli_reports_only_the_files_it_reads(tmp_path: Path) -> None:
    for name, text in {**UNREAD, **READ}.items():
        (tmp_path / name).write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "est2tpu", "check", "--no-cache", "-q", "-f", "json", "."],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stderr  # some file failed
    report = json.loads(run.stdout)
    files = {Path(f["path"]).name: f for f in report["files"]}
    assert {name for name, f in files.items() if f["status"] == "failed"} == set(READ)
    assert {name for name, f in files.items() if f["status"] == "unchanged"} == set(UNREAD)
    assert not report["findings"]
