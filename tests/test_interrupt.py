"""Interrupted runs: every file is fully old or fully new, and Ctrl-C leaves no temp file.

The CLI runs as a real subprocess over many generated Estimator files; the signal is sent
as soon as the first "migrated" line appears on stderr, so that the run is in the middle
of writing. A second, deterministic test delivers SIGINT inside `write_atomic` itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from est2tpu import api
from est2tpu.ftypes import Status
from est2tpu.writer import write_atomic

# Real signals to real runs, with waits: not in `make check`.
pytestmark = pytest.mark.slow

N_FILES = 120
TEMP_SUFFIX = ".est2tpu-tmp"  # writer.py: mkstemp(prefix=".<name>.", suffix=".est2tpu-tmp")

TEMPLATE = """\
import tensorflow as tf

MARK = "MARK_{i:03d}"


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"]) * {i}
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m{i}")
# end of MARK_{i:03d}
"""


@pytest.fixture(scope="module")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> str:
    """What file 0 becomes, through the same API the CLI uses."""
    root = tmp_path_factory.mktemp("template")
    (root / "m000.py").write_text(TEMPLATE.format(i=0))
    (result,) = api.migrate_paths([root])
    assert result.status is Status.CHANGED, result.error
    assert result.new_text is not None
    return result.new_text


def expected_new(template: str, i: int) -> bytes:
    return (
        template.replace("MARK_000", f"MARK_{i:03d}")
        .replace("* 0", f"* {i}")
        .replace("/tmp/m0", f"/tmp/m{i}")
        .encode()
    )


def make_tree(root: Path) -> dict[Path, bytes]:
    root.mkdir()
    old = {}
    for i in range(N_FILES):
        path = root / f"m{i:03d}.py"
        path.write_text(TEMPLATE.format(i=i))
        old[path] = path.read_bytes()
    return old


def run_and_signal(root: Path, sig: int) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "est2tpu", "migrate", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("migrated "):
            proc.send_signal(sig)
            break
    rest = proc.stderr.read()
    code = proc.wait(timeout=120)
    return code, "".join(seen) + rest


def classify(old: dict[Path, bytes], template: str) -> tuple[list[Path], list[Path]]:
    """(old files, new files); fails on any file that is neither."""
    olds, news = [], []
    for i, (path, before) in enumerate(sorted(old.items())):
        now = path.read_bytes()
        if now == before:
            olds.append(path)
        else:
            assert now == expected_new(template, i), f"{path} is neither old nor new"
            news.append(path)
    return olds, news


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_signal_mid_run_leaves_every_file_old_or_new(
    tmp_path: Path, migrated_template: str, sig: int
) -> None:
    root = tmp_path / "proj"
    old = make_tree(root)
    code, stderr = run_and_signal(root, sig)
    assert code != 0, stderr
    olds, news = classify(old, migrated_template)
    assert news, "the signal was sent after a file was migrated"
    assert olds, "the run was interrupted before the end"
    leftovers = sorted(p.name for p in root.iterdir() if p not in old)
    if sig == signal.SIGINT:
        assert leftovers == [], leftovers
        assert "Traceback" not in stderr
        assert code == 130, stderr  # the shell convention for Ctrl-C
        assert "interrupted" in stderr
    else:
        # SIGKILL cannot be handled: at most the one temp file being written may remain,
        # named so that it is recognisable and never mistaken for a module.
        assert len(leftovers) <= 1 and all(n.endswith(TEMP_SUFFIX) for n in leftovers)


@pytest.fixture(autouse=True)
def python_sigint_handler() -> Iterator[None]:
    """Python's own SIGINT handler, as an interactive run has it: a process started in the
    background by a non-interactive shell inherits SIGINT ignored, and Python then installs
    no handler, so no KeyboardInterrupt could happen here."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("where", ["write", "fchmod", "fsync", "replace"])
def test_sigint_inside_write_atomic_is_held_until_the_file_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A real SIGINT to this process at each step of a write: the write completes first."""
    target = tmp_path / "a.py"
    target.write_bytes(b"old\r\n")
    target.chmod(0o640)

    def interrupting(real):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            os.kill(os.getpid(), signal.SIGINT)
            return real(*args, **kwargs)

        return call

    if where == "write":
        real_fdopen = os.fdopen

        def fdopen(*args, **kwargs):  # type: ignore[no-untyped-def]
            os.kill(os.getpid(), signal.SIGINT)
            return real_fdopen(*args, **kwargs)

        monkeypatch.setattr(os, "fdopen", fdopen)
    else:
        monkeypatch.setattr(os, where, interrupting(getattr(os, where)))

    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, b"new\r\n")
    monkeypatch.undo()
    assert target.read_bytes() == b"new\r\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    # The handler is back: a later Ctrl-C is an ordinary KeyboardInterrupt again.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_failed_write_with_sigint_pending_still_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")

    def replace(src: str, dst: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, b"new\n")
    monkeypatch.undo()
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
