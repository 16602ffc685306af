"""The suite's own machinery: `xdist_group` marks keep a group on one worker, and the tests
sharing a module fixture are grouped (tests/conftest.py).

pytest 9.2 silently broke pytest-xdist's grouping (pytest-dev/pytest-xdist#1386) and nothing
failed: the expensive module fixtures were just built once per worker. This runs pytest with
two workers over a small tree that uses tests/conftest.py, as `make test` does.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

GROUPED = """
import os
import time
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "workers"


@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    (OUT / f"grouped-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    (OUT / f"free-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])


@pytest.fixture(scope="module")
def probe():
    (OUT / f"setup-{os.environ['PYTEST_XDIST_WORKER']}-{time.monotonic_ns()}").write_text("")


@pytest.mark.parametrize("i", range(8))
def test_shares_a_module_fixture(i, probe):
    (OUT / f"shares-{i}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


@pytest.mark.slow  # a pytest run with two worker processes
def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    shutil.copyfile(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "workers").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup"]
        + ["-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    worker = {p.name: p.read_text() for p in (tmp_path / "workers").iterdir()}
    setups = [name for name in worker if name.startswith("setup-")]
    assert len(worker) == 24 + len(setups), worker
    assert len({worker[f"grouped-{i}"] for i in range(8)}) == 1, worker
    # Ungrouped tests sharing a module fixture get a group: one worker, one setup.
    assert len({worker[f"shares-{i}"] for i in range(8)}) == 1, worker
    assert len(setups) == 1, setups
