"""`make demo` on a clean clone, as a new user runs it: the migration is shown, the migrated copy
is kept where the demo says, and `est2tpu verify` ends it with the table that compares the
original and the migrated program. Without Python 3.11 the demo says so before anything is
installed, still shows the migration (which needs no TensorFlow), and installs no TensorFlow.

The clone builds its own `.venv` (est2tpu, a minute). TensorFlow 2.15 comes from
EST2TPU_TF215_PYTHON when it is set (scripts/test.sh sets it); otherwise the demo builds
`.venv-tf215` in the clone, as it does for a user.

The TensorFlow environment scripts say what they build, its size and how long it takes before
they start: run here with an interpreter that fails at the first build step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _clean_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EST2TPU_", "PYTHON", "VIRTUAL_ENV"))
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


@pytest.mark.slow
@pytest.mark.xdist_group("demo-clone")
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


@pytest.mark.slow
@pytest.mark.xdist_group("demo-clone")
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
    # Then verify --tpu on the same copy: TPUEstimator's own TPU path finds nothing to reject.
    tpu_report = done.stdout[done.stdout.index("5. est2tpu verify --tpu") :]
    assert "TPU-READY: every check passes" in tpu_report
    # The copy that was verified is kept, and the demo says where.
    migrated = clone / "build" / "demo" / "quickstart" / "train.py"
    assert "build/demo/quickstart/train.py" in done.stdout
    assert "tpu_runtime.use_tpu()" in migrated.read_text()
    assert (clone / "examples" / "quickstart" / "train.py").read_bytes() == (
        REPO / "examples" / "quickstart" / "train.py"
    ).read_bytes()


# -- what the environment scripts say before a build (fast: the build fails at its first step) --

FAKE_PYTHON = """#!/bin/sh
# Runs (the scripts check that), then fails at the first thing that would build.
if [ "$1" = "-c" ]; then exit 0; fi
echo "build step: $*"
exit 1
"""


@pytest.mark.parametrize(
    ("script", "args", "python_var", "venv"),
    [
        ("tf215-env.sh", [], "PYTHON311", ".venv-tf215"),
        ("tfcur-env.sh", [], "PYTHONCUR", ".venv-tfcur"),
        ("tfcur-env.sh", ["--no-keras"], "PYTHONCUR", ".venv-tfcur-nokeras"),
    ],
    ids=["tf215", "tfcur", "tfcur-nokeras"],
)
def test_env_scripts_say_what_they_build_and_how_long_before_they_start(
    tmp_path: Path, script: str, args: list[str], python_var: str, venv: str
) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / script, tmp_path / "scripts" / script)
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", f"scripts/{script}", *args],
        cwd=tmp_path,
        env=_clean_env() | {python_var: str(fake)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    out = done.stdout
    announce = out.index(f"building {venv} with {fake}")
    assert re.search(r"about 1\.\d GB, 1-4 minutes", out)
    assert announce < out.index("build step: -m venv") < out.index(f"building {venv} failed")
    assert not (tmp_path / venv).exists()


def test_tf215_env_refuses_a_python311_that_does_not_run(tmp_path: Path) -> None:
    # A pyenv shim of a version that is not selected is on PATH but does not run.
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "tf215-env.sh", tmp_path / "scripts")
    shim = tmp_path / "python3.11"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.11: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    done = subprocess.run(
        ["bash", "scripts/tf215-env.sh"],
        cwd=tmp_path,
        env=_clean_env() | {"PYTHON311": str(shim)},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert "TensorFlow 2.15 needs Python 3.11" in done.stderr
    assert "building" not in done.stdout
