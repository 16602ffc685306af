"""Odd input gets one line, not a traceback; the command line behaves as users of ruff and
pyupgrade expect. Real subprocess runs of the CLI over real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


def est2tpu(
    cwd: Path, *args: str, stdin: bytes | None = None, columns: str = "80"
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        cwd=cwd,
        input=stdin,
        env={
            **os.environ,
            "NO_COLOR": "1",
            "COLUMNS": columns,
            "XDG_CACHE_HOME": str(cwd / ".xdg"),
        },
        capture_output=True,
        check=False,
        timeout=300,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def notebook(source: str) -> bytes:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    doc = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(doc, indent=1) + "\n").encode()


def test_notebook_on_stdin_is_migrated_as_a_notebook(tmp_path: Path) -> None:
    data = notebook(GOOD)
    checked = est2tpu(tmp_path, "check", "-", stdin=data)
    assert checked.returncode == 1, checked.stderr
    assert "would migrate -" in checked.stderr
    migrated = est2tpu(tmp_path, "migrate", "-", stdin=data)
    assert migrated.returncode == 0, migrated.stderr
    doc = json.loads(migrated.stdout)  # still a notebook
    assert "TPUEstimator(" in "".join(doc["cells"][0]["source"])
    assert doc["nbformat"] == 4
    # A notebook with nothing to do passes through byte for byte.
    clean = notebook("x = 1\n")
    same = est2tpu(tmp_path, "migrate", "-", stdin=clean)
    assert same.returncode == 0 and same.stdout.encode() == clean


def test_symlink_loop_named_with_a_file_is_one_line_and_the_file_migrates(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "self.py").symlink_to("self.py")
    done = est2tpu(tmp_path, "migrate", "a.py", "self.py")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("self.py: error: symlink loop") == 1
    assert "TPUEstimator(" in (tmp_path / "a.py").read_text(encoding="utf-8")


def test_deeply_nested_pyproject_is_one_usage_error_line(tmp_path: Path) -> None:
    deep = "[" * 600 + "]" * 600
    (tmp_path / "pyproject.toml").write_text(f"[tool.other]\nx = {deep}\n", encoding="utf-8")
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    done = est2tpu(tmp_path, "check", "a.py")
    assert done.returncode == 2
    assert "RecursionError" not in done.stderr and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "nested too deeply" in line
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == GOOD


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 compiles on Python 3.12+")
def test_pep695_file_on_python_311_says_it_needs_a_newer_python(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD + "\ntype Vector = list[float]\n", encoding="utf-8")
    done = est2tpu(tmp_path, "migrate", "a.py")
    assert done.returncode == 2
    assert "internal error" not in done.stderr
    assert "cannot compile this file" in done.stderr and "PEP 695" in done.stderr
    assert (tmp_path / "a.py").read_text(encoding="utf-8").endswith("list[float]\n")


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--select", "NOPE1", "."],
        ["check", "--cache-dir", "LINK", "."],
        ["check", "--no-such-option", "."],
        ["check", "-f", "nope", "."],
        ["check", "-f", "sarif", "--diff", "."],
    ],
    ids=["unknown_rule", "cache_dir_symlink", "unknown_option", "bad_choice", "diff_and_sarif"],
)
def test_usage_errors_are_one_line_on_a_pipe(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "target").mkdir()
    (tmp_path / "LINK").symlink_to(tmp_path / "target")
    long_dir = tmp_path / ("d" * 120)
    long_dir.mkdir()
    done = est2tpu(long_dir if "LINK" not in args else tmp_path, *args)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ")


def test_config_error_naming_a_long_path_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / ("p" * 100)
    deep.mkdir()
    (deep / "pyproject.toml").write_text("[tool.est2tpu]\nbogus = 1\n", encoding="utf-8")
    done = est2tpu(deep, "check", ".")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "bogus" in line


def test_migrate_diff_exits_1_while_changes_are_pending(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    pending = est2tpu(tmp_path, "migrate", "--diff", "a.py")
    assert pending.returncode == 1
    assert pending.stdout.startswith("--- a/a.py")
    assert (tmp_path / "a.py").read_text(encoding="utf-8") == GOOD
    assert est2tpu(tmp_path, "migrate", "a.py").returncode == 0
    assert est2tpu(tmp_path, "migrate", "--diff", "a.py").returncode == 0


def test_diff_headers_of_an_absolute_path_have_one_slash(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    done = est2tpu(tmp_path, "migrate", "--diff", str(tmp_path / "a.py"))
    spelled = (tmp_path / "a.py").as_posix().lstrip("/")
    assert done.stdout.startswith(f"--- a/{spelled}\n+++ b/{spelled}\n")


def test_check_quiet_names_each_file_that_would_change(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "b.py").write_text(GOOD, encoding="utf-8")
    done = est2tpu(tmp_path, "check", "-q", ".")
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["would migrate a.py", "would migrate b.py"]


@pytest.mark.parametrize("command", [[], ["migrate"], ["check"], ["rules"], ["explain"]])
def test_dash_h_is_help(tmp_path: Path, command: list[str]) -> None:
    short = est2tpu(tmp_path, *command, "-h")
    long = est2tpu(tmp_path, *command, "--help")
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout and "Usage:" in short.stdout


@pytest.mark.parametrize("command", ["migrate", "check"])
def test_help_at_80_columns_cuts_no_text(tmp_path: Path, command: str) -> None:
    done = est2tpu(tmp_path, command, "--help", columns="80")
    assert done.returncode == 0
    assert "…" not in done.stdout
    assert "$XDG_CACHE_HOME" in done.stdout
