"""Diagnostics that cannot be written never stop a migration; output that is lost is an error.

Real subprocess runs of the CLI with stderr on a full disk (`/dev/full`) or closed (`2>&-`),
then the files themselves are looked at.
"""

from __future__ import annotations

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

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (root / name).write_text(GOOD, encoding="utf-8")
    return root


def est2tpu_sh(redirect: str, args: str, cwd: Path, tmp_path: Path) -> int:
    """Exit code of `python -m est2tpu ARGS REDIRECT`, through a shell (for `2>&-`)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NO_COLOR": "1"}
    done = subprocess.run(
        ["sh", "-c", f'"$0" -m est2tpu {args} {redirect}', sys.executable],
        cwd=cwd,
        env=env,
        check=False,
        timeout=300,
        stdout=subprocess.DEVNULL,
    )
    return done.returncode


def migrated(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.py") if "TPUEstimator(" in p.read_text())


@pytest.mark.parametrize(
    "redirect",
    [pytest.param("2>/dev/full", marks=needs_dev_full, id="stderr_full_disk"), "2>&-"],
)
def test_unwritable_diagnostics_never_stop_the_migration(tmp_path: Path, redirect: str) -> None:
    root = project(tmp_path)
    assert est2tpu_sh(redirect, "migrate .", root, tmp_path) == 0
    assert migrated(root) == ["a.py", "b.py", "c.py"]


def test_closed_stderr_check_still_says_what_would_change_by_exit_code(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert est2tpu_sh("2>&-", "check .", root, tmp_path) == 1
    assert migrated(root) == []


@needs_dev_full
def test_lost_stdout_output_is_an_error_said_on_stderr(tmp_path: Path) -> None:
    # The output is the point of `-` and of --diff: losing it must not look like success.
    root = project(tmp_path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NO_COLOR": "1"}
    with open("/dev/full", "wb") as full, (root / "a.py").open("rb") as source:
        done = subprocess.run(
            [sys.executable, "-m", "est2tpu", "migrate", "-"],
            cwd=root,
            env=env,
            stdin=source,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=300,
        )
    assert done.returncode == 2
    assert "error: cannot write the output: No space left on device" in done.stderr
    assert migrated(root) == []
