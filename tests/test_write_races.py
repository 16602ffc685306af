"""A file edited or swapped for a symlink while est2tpu writes it is never overwritten.

The races are made deterministic with the writer's hook at the write point
(`est2tpu.writer.before_replace`, called once the new bytes are on disk, just before the last
check and the rename): a `sitecustomize.py` on the child's PYTHONPATH installs a hook that
edits the file at that very moment. Every test runs the real CLI in a subprocess over real
files and then looks at the files.
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


def run_with_hook(
    tmp_path: Path, hook_body: str, args: list[str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`python -m est2tpu ARGS` with `before_replace(path)` running ``hook_body``."""
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(
        "import os\n"
        "from pathlib import Path\n"
        "import est2tpu.writer\n\n"
        "def _hook(path):\n"
        + "".join(f"    {line}\n" for line in hook_body.splitlines())
        + "\nest2tpu.writer.before_replace = _hook\n",
        encoding="utf-8",
    )
    pythonpath = os.pathsep.join(filter(None, [str(hook_dir), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "NO_COLOR": "1",
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    return subprocess.run(
        [sys.executable, "-m", "est2tpu", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def temp_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*") if p.name.endswith(".est2tpu-tmp"))


def test_edit_saved_during_the_write_is_kept_and_the_file_fails(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text(GOOD, encoding="utf-8")
    (project / "b.py").write_text(GOOD, encoding="utf-8")
    edited = GOOD + "# the user's edit, saved while est2tpu writes\n"
    hook = f"if path.name == 'a.py':\n    path.write_text({edited!r})"
    done = run_with_hook(tmp_path, hook, ["migrate", "."], project)
    assert done.returncode == 2, done.stderr
    assert "a.py: error: the file changed on disk during the run" in done.stderr
    assert "migrated a.py" not in done.stderr
    assert (project / "a.py").read_text(encoding="utf-8") == edited
    assert "TPUEstimator(" in (project / "b.py").read_text(encoding="utf-8")
    assert temp_files(project) == []


def test_same_size_edit_within_the_same_second_is_caught(tmp_path: Path) -> None:
    # Same length, mtime put back: only the bytes (and ctime) tell.
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text(GOOD, encoding="utf-8")
    edited = GOOD.replace("/tmp/m", "/tmp/n")
    hook = (
        "if path.name == 'a.py':\n"
        "    st = path.stat()\n"
        f"    path.write_text({edited!r})\n"
        "    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))"
    )
    done = run_with_hook(tmp_path, hook, ["migrate", "a.py"], project)
    assert done.returncode == 2, done.stderr
    assert (project / "a.py").read_text(encoding="utf-8") == edited


@pytest.mark.parametrize("when", ["during_its_write", "before_its_write"])
def test_file_swapped_for_a_symlink_out_of_the_tree_is_not_written_through(
    tmp_path: Path, when: str
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "a.py").write_text(GOOD, encoding="utf-8")
    (project / "b.py").write_text(GOOD, encoding="utf-8")
    # The link's target holds the very bytes est2tpu read, so no content check can tell.
    (outside / "b.py").write_text(GOOD, encoding="utf-8")
    swap = (
        f"    (path.parent / 'b.py').unlink()\n"
        f"    (path.parent / 'b.py').symlink_to({str(outside / 'b.py')!r})"
    )
    # Written in path order: a swap during a.py's write happens before b.py's write starts.
    victim = "b.py" if when == "during_its_write" else "a.py"
    done = run_with_hook(
        tmp_path, f"if path.name == {victim!r}:\n{swap}", ["migrate", "."], project
    )
    assert done.returncode == 2, done.stderr
    assert "b.py: error:" in done.stderr
    assert (outside / "b.py").read_text(encoding="utf-8") == GOOD
    assert (project / "b.py").is_symlink()
    assert temp_files(tmp_path) == []


def test_file_swapped_for_a_symlink_inside_the_tree_is_not_written(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "a.py").write_text(GOOD, encoding="utf-8")
    (project / "keep.py").write_text(GOOD, encoding="utf-8")
    hook = (
        "if path.name == 'a.py':\n    path.unlink()\n    path.symlink_to(path.parent / 'keep.py')"
    )
    done = run_with_hook(tmp_path, hook, ["migrate", "a.py"], project)
    assert done.returncode == 2, done.stderr
    assert "a.py: error: the file changed on disk during the run" in done.stderr
    assert (project / "keep.py").read_text(encoding="utf-8") == GOOD
    assert (project / "a.py").is_symlink()
