"""Hostile input in one real CLI run: every file is migrated correctly or left byte-for-byte.

The run goes through `est2tpu migrate` (Typer's CliRunner, in-process) over one tree that
holds good Estimator files next to every kind of file that can break a migration tool.
The whole temporary directory (the tree and a sibling directory outside it) is
snapshotted (bytes, modes, link targets) before and after, so that any write that was not
a correct migration of a file inside the tree shows up.

Tests run as root here, so `chmod 000` does not stop a read: the unreadable file is
simulated by making `Path.read_bytes` and the scan's `open` raise `PermissionError` for that
one path, which is exactly what the API sees for a real unreadable file.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from est2tpu import runner
from est2tpu.cli import app

GOOD = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""

#: Every file in the tree that must come out migrated.
MIGRATED = {
    "good.py",
    "latin1.py",
    "bom.py",
    "crlf.py",
    "mixed.py",
    "tabs.py",
    "readonly.py",
    "script.py",
    "x.py/inner.py",
}

#: Every file that must be reported as failed, and a word its reason must contain.
FAILED = {
    "py2.py": "print",
    "syntax.py": "syntax error",
    "nonutf8.py": "cannot decode",
    "binary.py": "binary",
    "deep_parens.py": "nested",
    "deep_plus.py": "nested",
    "deep_calls.py": "nested",
    "link_out.py": "outside the tree",
    "unreadable.py": "Permission denied",
    "fifo.py": "not a regular file",
    "broken.ipynb": "",
}

Snapshot = dict[str, tuple[str, int, bytes | str]]


def snapshot(root: Path) -> Snapshot:
    """Kind, permission bits and content (or link target) of everything under root."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", mode, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode, b"")
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:  # not Path.read_bytes, which a test patches
                    out[rel] = ("file", mode, f.read())
            else:
                out[rel] = ("other", mode, b"")
    return out


def notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "execution_count": 1,
                    "metadata": {},
                    "outputs": [{"name": "stdout", "output_type": "stream", "text": ["hi\n"]}],
                    "source": cell.splitlines(keepends=True),
                }
                for cell in cells
            ],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


def build_tree(tmp: Path) -> Path:
    proj = tmp / "proj"
    outside = tmp / "outside"
    proj.mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text(GOOD)
    (outside / "pkg_out").mkdir()
    (outside / "pkg_out" / "mod.py").write_text(GOOD)

    def put(name: str, data: bytes | str, mode: int | None = None) -> None:
        path = proj / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        if mode is not None:
            path.chmod(mode)

    put("good.py", GOOD)
    put("py2.py", 'import tensorflow as tf\nprint "x"\nest = tf.estimator.Estimator(model_fn=f)\n')
    put("syntax.py", "import tensorflow as tf\nest = tf.estimator.Estimator(\n")
    put("nonutf8.py", b'# estimator\nname = "caf\xe9"\n')
    latin1 = "# -*- coding: latin-1 -*-\n# caf\xe9 na\xefve\n" + GOOD
    put("latin1.py", latin1.encode("latin-1"))
    put("bom.py", codecs.BOM_UTF8 + GOOD.encode())
    put("crlf.py", GOOD.replace("\n", "\r\n"))
    lines = GOOD.splitlines(keepends=True)
    put("mixed.py", "".join(ln.replace("\n", "\r\n") for ln in lines[:4]) + "".join(lines[4:]))
    put("tabs.py", GOOD.replace("    ", "\t"))
    put("empty.py", b"")
    put("binary.py", b"\x7fELF\x00\x01estimator\xff\xfe" * 50)
    # 5 MB of generated data without a name any rule reacts to: the pre-filter skips it.
    put("big.py", "".join(f"ROW_{i} = ({i}, {i * 2}, 'payload')\n" for i in range(190_000)))
    nest = 1000
    put("deep_parens.py", GOOD + "x = " + "(" * nest + "1" + ")" * nest + "\n")
    put("deep_plus.py", GOOD + "x = " + "+".join(["a"] * 5000) + "\n")
    put("deep_calls.py", GOOD + "x = " + "f(" * 150 + "1" + ")" * 150 + "\n")
    (proj / "link_inside.py").symlink_to("good.py")
    (proj / "link_out.py").symlink_to(outside / "secret.py")
    (proj / "linkdir").symlink_to(outside / "pkg_out", target_is_directory=True)
    put("unreadable.py", GOOD)
    put("readonly.py", GOOD, 0o444)
    put("script.py", "#!/usr/bin/env python\n" + GOOD, 0o755)
    put("x.py/inner.py", GOOD)
    put("broken.ipynb", '{"cells": [{"cell_type": "code", "source": ["tf.estimator.Estimator(')
    put(
        "magics.ipynb",
        notebook(
            "%matplotlib inline\n!pip install something\n%%time\n",
            "import tensorflow as tf\n\n\n" + GOOD.split("\n", 1)[1],
        ),
    )
    os.mkfifo(proj / "fifo.py")
    return proj


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    build_tree(tmp_path)
    real_read_bytes = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "unreadable.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)

    def open_file(file: str | os.PathLike[str], *args: Any, **kwargs: Any) -> Any:
        if Path(file).name == "unreadable.py":
            raise PermissionError(13, "Permission denied", str(file))
        return open(file, *args, **kwargs)

    # the scan reads a file with `open`, to take its stat from the open file
    monkeypatch.setattr(runner, "open", open_file, raising=False)
    return tmp_path


def migrated_text(data: bytes, encoding: str = "utf-8") -> str:
    text = data.decode(encoding)
    assert "tf.compat.v1.estimator.tpu.TPUEstimator(" in text
    assert "TPUEstimatorSpec" in text
    compile(text.lstrip("\ufeff"), "<migrated>", "exec", dont_inherit=True)
    return text


def test_one_run_over_hostile_tree(tree: Path) -> None:
    before = snapshot(tree)
    result = CliRunner().invoke(app, ["migrate", "proj"])
    after = snapshot(tree)
    out = result.stderr

    assert result.exception is None or isinstance(result.exception, SystemExit), out
    assert result.exit_code == 2, out
    assert "Traceback" not in result.output
    assert "internal error" not in out, out

    # One line per failed file, naming the file and the reason.
    error_lines = [line for line in out.splitlines() if ": error: " in line]
    for name, word in FAILED.items():
        mine = [line for line in error_lines if line.startswith(f"proj/{name}: error: ")]
        assert len(mine) == 1, (name, out)
        assert word in mine[0], (name, mine[0])
    notebook_failed = any(line.startswith("proj/magics.ipynb: ") for line in error_lines)
    assert len(error_lines) == len(FAILED) + notebook_failed, out
    for name in MIGRATED:
        assert f"migrated proj/{name}\n" in out, (name, out)

    # Nothing appeared, disappeared or changed kind; outside the tree nothing changed at all.
    assert after.keys() == before.keys()
    changed = {rel for rel in before if before[rel] != after[rel]}
    expected = {f"proj/{name}" for name in MIGRATED}
    if not notebook_failed:
        expected.add("proj/magics.ipynb")
    assert changed == expected
    for rel in before:
        assert before[rel][:2] == after[rel][:2], rel  # kind and mode kept, links kept
    assert after["proj/link_inside.py"] == ("link", before["proj/link_inside.py"][1], "good.py")

    def new(name: str) -> bytes:
        data = after[f"proj/{name}"][2]
        assert isinstance(data, bytes)
        return data

    for name in ("good.py", "tabs.py", "readonly.py", "script.py", "x.py/inner.py"):
        migrated_text(new(name))
    assert after["proj/readonly.py"][1] == 0o444
    assert after["proj/script.py"][1] == 0o755
    assert new("script.py").startswith(b"#!/usr/bin/env python\n")
    assert b"\n\treturn tf.compat.v1.estimator.tpu.TPUEstimatorSpec(" in new("tabs.py")

    # Encoding: the cookie stays, non-ASCII bytes stay latin-1.
    latin1 = new("latin1.py")
    assert latin1.startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9 na\xefve\n")
    migrated_text(latin1, "latin-1")

    bom = new("bom.py")
    assert bom.startswith(codecs.BOM_UTF8) and bom.count(codecs.BOM_UTF8) == 1
    migrated_text(bom[len(codecs.BOM_UTF8) :])

    # CRLF stays CRLF everywhere, new lines included.
    crlf = new("crlf.py")
    assert b"\n" not in crlf.replace(b"\r\n", b"") and b"\r" not in crlf.replace(b"\r\n", b"")
    migrated_text(crlf)

    # Mixed endings: each kept line keeps its own ending.
    mixed = new("mixed.py")
    migrated_text(mixed)
    assert b"\nimport tensorflow as tf\r\n" in mixed or mixed.startswith(
        b"import tensorflow as tf\r\n"
    )
    assert b'params):\r\n    loss = tf.reduce_mean(features["x"])\n    return ' in mixed

    if not notebook_failed:
        data = new("magics.ipynb")
        nb = json.loads(data)
        sources = ["".join(cell["source"]) for cell in nb["cells"]]
        assert sources[0] == "%matplotlib inline\n!pip install something\n%%time\n"
        assert "TPUEstimator" in sources[1]
        assert all(cell["outputs"] for cell in nb["cells"])


def test_explicit_paths_to_hostile_files(tree: Path) -> None:
    """Files named on the command line get the same treatment as files found by a walk."""
    before = snapshot(tree)
    names = ["proj/fifo.py", "proj/binary.py", "proj/x.py", "proj/empty.py", "proj/missing.py"]
    result = CliRunner().invoke(app, ["migrate", *names, "proj/good.py"])
    out = result.stderr
    assert result.exit_code == 2, out
    assert "Traceback" not in result.output
    assert "proj/fifo.py: error: not a regular file (a FIFO)" in out
    assert "proj/binary.py: error: binary file" in out
    assert "proj/missing.py: error: no such file or directory" in out
    assert "migrated proj/x.py/inner.py" in out
    assert "migrated proj/good.py" in out
    after = snapshot(tree)
    changed = {rel for rel in before if before[rel] != after[rel]}
    assert changed == {"proj/good.py", "proj/x.py/inner.py"}


def test_write_failure_mid_run_leaves_file_and_no_temp_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only directory cannot be simulated as root: make the rename itself fail."""
    real_replace = os.replace

    def replace(src: str, dst: str | Path) -> None:
        if Path(dst).name == "crlf.py":
            raise PermissionError(13, "Permission denied")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    before = snapshot(tree)
    result = CliRunner().invoke(app, ["migrate", "proj/crlf.py", "proj/good.py"])
    assert result.exit_code == 2, result.stderr
    assert "proj/crlf.py: error: cannot write: Permission denied" in result.stderr
    after = snapshot(tree)
    assert after.keys() == before.keys()  # no temp file left behind
    assert {rel for rel in before if before[rel] != after[rel]} == {"proj/good.py"}


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param("f(" * 90 + "1" + ")" * 90, id="90_nested_calls"),
        pytest.param("[" * 90 + "1" + "]" * 90, id="90_nested_lists"),
        pytest.param("+".join(["a"] * 95), id="95_term_sum"),
        pytest.param("(" * 150 + "1" + ")" * 150, id="150_parentheses"),
    ],
)
def test_deep_but_compilable_code_still_migrates(shape: str) -> None:
    """The nesting guard refuses only what the rules cannot walk; real code is far below it."""
    from est2tpu.api import migrate_source
    from est2tpu.ftypes import Status

    result = migrate_source(GOOD + "x = " + shape + "\n", path="deep.py")
    assert result.status is Status.CHANGED, result.error
    assert result.new_text is not None
    migrated_text(result.new_text.encode())
