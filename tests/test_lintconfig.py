"""The linter configuration's line length, found once per folder in a run: each file's
folder resolved as realpath resolves it, however the file is spelled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from est2tpu.lintconfig import _real_folder, configured_line_length


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "real" / "a" / "b").mkdir(parents=True)
    (tmp_path / "other" / "c").mkdir(parents=True)
    (tmp_path / "real" / "ruff.toml").write_text("line-length = 72\n")
    (tmp_path / "other" / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
    for name in ("real/a/b/m.py", "real/a/n.py", "other/c/o.py"):
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "link").symlink_to(tmp_path / "real" / "a")  # a folder link
    (tmp_path / "real" / "a" / "up").symlink_to(tmp_path / "other")  # a link inside the tree
    (tmp_path / "chain").symlink_to(tmp_path / "link")  # a link to a link
    (tmp_path / "real" / "a" / "b" / "f.py").symlink_to(tmp_path / "other" / "c" / "o.py")
    monkeypatch.chdir(tmp_path / "real")
    return tmp_path


SPELLINGS = [
    "{t}/real/a/b/m.py",
    "{t}/link/b/m.py",
    "{t}/chain/b/m.py",
    "{t}/chain/up/c/o.py",
    "{t}/real/a/up/c/o.py",
    "{t}/real/a/b/f.py",  # the file itself a link: its target's folder, not m.py's
    "{t}/real/./a//b/m.py",
    "{t}/real/a/up/../n.py",  # `..` after a link: the link's parent, as realpath says
    "a/b/m.py",  # relative to the working directory
    "a/up/c/o.py",
    "//{t}/real/a/n.py",
]


def test_each_folder_resolves_as_realpath_resolves_it(tree: Path) -> None:
    not_links = [s for s in SPELLINGS if not s.endswith("f.py")]
    for order in (not_links, not_links[::-1]):
        reals: dict[str, str] = {}
        for spelled in order:
            path = spelled.format(t=str(tree).lstrip("/") if spelled.startswith("//") else tree)
            assert _real_folder(path, reals) == os.path.dirname(os.path.realpath(path)), path


def test_one_runs_answers_through_links_are_each_files_own_answer(tree: Path) -> None:
    paths = [s.format(t=str(tree).lstrip("/") if s.startswith("//") else tree) for s in SPELLINGS]
    alone = [configured_line_length(path) for path in paths]
    assert alone[:3] == [72, 72, 72] and alone[3:6] == [100, 100, 100]
    for order in (paths, paths[::-1]):
        seen: dict[str, int | None] = {}
        reals: dict[str, str] = {}
        assert [configured_line_length(path, seen, reals) for path in order] == [
            alone[paths.index(path)] for path in order
        ]


def test_a_file_a_thousand_folders_deep(tmp_path: Path) -> None:
    (tmp_path / "ruff.toml").write_text("line-length = 64\n")
    deep = str(tmp_path)
    for _ in range(1000):  # one by one: pathlib's and os's makedirs recurse
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    with open(os.path.join(deep, "m.py"), "w") as f:
        f.write("x = 1\n")
    try:
        assert configured_line_length(os.path.join(deep, "m.py"), {}, {}) == 64
    finally:
        os.unlink(os.path.join(deep, "m.py"))
        while deep != str(tmp_path):  # shutil.rmtree recurses too
            os.rmdir(deep)
            deep = os.path.dirname(deep)
