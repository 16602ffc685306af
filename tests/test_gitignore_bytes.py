"""Files git ignores are never rewritten, byte for byte as git reads .gitignore: a UTF-8 BOM
at its start, names that are not UTF-8 listed literally, CRLF line endings, and a name
holding a form feed. Real git decides; the real CLI runs in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

GOOD = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""

NAMES = [b"bom_first.py", b"caf\xe9.py", b"crlf.py", b"feed\x0cname.py", b"kept.py"]
GITIGNORE = b"\xef\xbb\xbfbom_first.py\ncaf\xe9.py\r\ncrlf.py\r\nfeed\x0cname.py\n"


def test_files_git_ignores_are_left_untouched(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_bytes(GITIGNORE)
    for name in NAMES:
        with open(os.path.join(os.fsencode(root), name), "w", encoding="utf-8") as f:
            f.write(GOOD)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    by_git = {name for name in listed.split(b"\0") if name.endswith(b".py")}
    done = subprocess.run(
        [sys.executable, "-m", "est2tpu", "migrate", "."],
        cwd=root,
        env={**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg")},
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rewritten = set()
    for name in NAMES:
        with open(os.path.join(os.fsencode(root), name), encoding="utf-8") as f:
            if "TPUEstimator(" in f.read():
                rewritten.add(name)
    assert rewritten == by_git
    assert by_git == {b"kept.py"}  # git does ignore the other four
