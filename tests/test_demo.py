"""`make demo` on a clean clone, as a new user runs it: the migration is shown, the migrated copy
is kept where the demo says, and `est2tpu verify` ends it with the table that compares the
original and the migrated program. Without Python 3.11 the demo says so before anything is
installed, still shows the migration (which needs no TensorFlow), and installs no TensorFlow.

The clone builds its own `.venv` (est2tpu, a minute). TensorFlow 2.15 comes from
EST2TPU_TF215_PYTHON when it is set (scripts/test.sh sets it); otherwise the demo builds
`.venv-tf215` in the clone, as it does for a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("demo-clone")]


def _clean_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EST2TPU_", "PYTHON", "VIRTUAL_ENV", "PIP_"))
    }
    # The clone's own code, not the checkout's running these tests.
    env.update({"NO_COLOR": "1", "COLUMNS": "120", "PYTHON": sys.executable})
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("make") is None or shutil.which("git") is None:
        pytest.fail("the demo test needs make and git", pytrace=False)
    root = tmp_path_factory.mktemp("demo") / "est2tpu"
    subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True, timeout=300)
    assert not (root / ".venv").exists() and not (root / "build").exists()
    return root


def _make_demo(clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "demo"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )


def test_without_python_311_the_demo_still_shows_the_migration(clone: Path) -> None:
    env = _clean_env() | {"PYTHON311": str(clone / "no-such-python3.11")}
    done = _make_demo(clone, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # Said first, before the tool is installed.
    assert out.index("Python 3.11 not found") < out.index("== 1.")
    assert "--- a/quickstart/train.py\n+++ b/quickstart/train.py\n" in done.stdout
    assert "a//" not in done.stdout
    assert "+    estimator = tf.compat.v1.estimator.tpu.TPUEstimator(" in done.stdout
    assert "stopped before training" in done.stdout
    assert not (clone / ".venv-tf215").exists()
    migrated = clone / "build" / "demo" / "quickstart" / "train.py"
    assert "TPUEstimator(" in migrated.read_text()


def test_make_demo_ends_with_the_verify_table(clone: Path) -> None:
    env = _clean_env()
    tf_python = os.environ.get("EST2TPU_TF215_PYTHON")
    if tf_python:
        env["EST2TPU_TF215_PYTHON"] = tf_python
    done = _make_demo(clone, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "--- a/quickstart/train.py\n+++ b/quickstart/train.py\n" in done.stdout
    # The table verify prints: one row per metric, each original run and the migrated one.
    table = done.stdout[done.stdout.index("est2tpu verify (target tpu-estimator)") :]
    header = next(line for line in table.splitlines() if "metric" in line)
    for column in ("original #1", "original #2", "migrated", "result"):
        assert column in header
    for metric in ("accuracy", "global_step", "loss"):
        row = next(line for line in table.splitlines() if f" {metric} " in line)
        assert row.rstrip(" │|").endswith("equal"), row
    assert "AGREE" in table
    # The copy that was verified is kept, and the demo says where.
    migrated = clone / "build" / "demo" / "quickstart" / "train.py"
    assert "build/demo/quickstart/train.py" in done.stdout
    assert "tpu_runtime.use_tpu()" in migrated.read_text()
    assert (clone / "examples" / "quickstart" / "train.py").read_bytes() == (
        REPO / "examples" / "quickstart" / "train.py"
    ).read_bytes()
