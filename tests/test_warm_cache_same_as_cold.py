"""A warm cache gives the migration a cold run gives, also when the only change is in a file
the byte pre-filter skips but the project index reads (a new call of a helper it rewrites).

Real subprocess runs of the CLI (`check --diff`, cached and with --no-cache) over real files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from small_projects import HELPER_PIPELINE as PIPELINE
from small_projects import HELPER_TASK as TASK

# No Estimator name: the pre-filter skips it, the index reads it for calls of `next_rows`.
EXPLORE_BEFORE = "import pipeline\n\nprint('rows')\n"
EXPLORE_AFTER = "import pipeline\n\nprint(pipeline.next_rows(4))\n"


def check(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", "check", "--diff", *extra, "."],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(root.parent / "xdg")},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("aged", [False, True], ids=["racy_stat_read_again", "trusted_stat"])
def test_new_call_in_a_skipped_file_changes_the_warm_run_as_the_cold(
    tmp_path: Path, aged: bool
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "task.py").write_text(TASK, encoding="utf-8")
    (root / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    explore = root / "explore.py"
    explore.write_text(EXPLORE_BEFORE, encoding="utf-8")
    if aged:  # stat stamps are trusted only for files older than the cache's racy window
        time.sleep(2.2)
    first = check(root)
    assert "+    return rows(batch_size)" in first.stdout  # the helper is rewritten
    explore.write_text(EXPLORE_AFTER, encoding="utf-8")
    if aged:
        time.sleep(2.2)
    warm = check(root)
    cold = check(root, "--no-cache")
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        cold.returncode,
        cold.stdout,
        cold.stderr,
    )
    # explore.py needs the helper's tensors: the helper is no longer rewritten.
    assert "+    return rows(batch_size)" not in warm.stdout
    assert "calls it elsewhere too" in warm.stderr
