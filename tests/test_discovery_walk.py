"""The walk over a tree whose names repeat in every directory: the same files as git's own
listing, in path order whatever order the directories list their entries in."""

from __future__ import annotations

import subprocess
from pathlib import Path

from test_discovery import found, git_init, make

from est2tpu.discovery import is_ignored, parse_ignore_lines

# Lines that share names: an anchored line and an unanchored one for the same name, a
# negation deeper down, a suffix line and a directory-only line; names that sort differently
# as text and as path parts ("a-b" < "a/b" as text; "a" < "a-b" as parts).
GITIGNORE = "gen.py\n/pkg/a/util.py\n*_pb2.py\nbuild_*/\n!keep_pb2.py\nx/**/deep.py\n"
NAMES = ["__init__.py", "util.py", "gen.py", "model_pb2.py", "keep_pb2.py", "deep.py", "n.ipynb"]
DIRS = ["", "pkg", "pkg/a", "pkg/a-b", "pkg/a/b", "x", "x/y", "x/y/z", "build_out", "pkg/build_x"]


def tree(root: Path) -> None:
    git_init(root)
    make(root, *(f"{d}/{n}" if d else n for d in reversed(DIRS) for n in NAMES), "pkg/a/c.txt")
    (root / ".gitignore").write_text(GITIGNORE)
    (root / "pkg" / "a" / ".gitignore").write_text("!gen.py\n")


def git_listing(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [p for p in out if p.endswith((".py", ".ipynb"))]


def test_repeated_names_are_judged_by_their_own_directory_as_git_does(tmp_path: Path) -> None:
    tree(tmp_path)
    listed = git_listing(tmp_path)
    got = found([tmp_path], tmp_path)
    assert sorted(got) == sorted(listed)
    assert "pkg/a/gen.py" in got and "gen.py" not in got  # negated below, ignored above
    assert "pkg/util.py" in got and "pkg/a/util.py" not in got  # anchored to one folder
    assert got == sorted(got, key=lambda p: p.split("/"))  # path order, part by part
    assert got.index("pkg/a/b/util.py") < got.index("pkg/a-b/util.py")


def test_one_pattern_list_asked_about_a_name_in_many_folders(tmp_path: Path) -> None:
    # The same list of lines, asked about one name in folder after folder: an answer
    # remembered for the name must not stand for a path that an anchored line decides.
    patterns = parse_ignore_lines(GITIGNORE.splitlines(), tmp_path)
    for folder in ("", "pkg", "pkg/a", "pkg/b", "pkg/a", ""):
        path = tmp_path / folder / "util.py"
        assert is_ignored(path, patterns) == (folder == "pkg/a"), folder
        assert is_ignored(tmp_path / folder / "model_pb2.py", patterns)
        assert not is_ignored(tmp_path / folder / "keep_pb2.py", patterns)
