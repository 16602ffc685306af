"""File discovery: .gitignore, default excludes, --exclude, symlinks, explicit paths."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from est2tpu.discovery import discover, parse_ignore_lines


def make(root: Path, *names: str) -> None:
    for name in names:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def found(paths: Iterable[Path | str], root: Path, **kw: object) -> list[str]:
    """Discovered files as posix paths relative to ``root``; errors as 'path: reason'."""
    out = []
    for item in discover([Path(p) for p in paths], **kw):  # type: ignore[arg-type]
        if isinstance(item, tuple):
            out.append(f"{Path(os.path.relpath(item[0], root)).as_posix()}: {item[1]}")
        else:
            out.append(Path(os.path.relpath(item, root)).as_posix())
    return out


def test_walks_py_and_ipynb_sorted(tmp_path: Path) -> None:
    make(tmp_path, "b.py", "a.py", "pkg/z.py", "pkg/a.ipynb", "notes.txt", "pkg/data.json")
    assert found([tmp_path], tmp_path) == ["a.py", "b.py", "pkg/a.ipynb", "pkg/z.py"]


def test_output_is_deterministic_across_runs(tmp_path: Path) -> None:
    make(tmp_path, *(f"d{i % 3}/f{i}.py" for i in range(20)))
    assert found([tmp_path], tmp_path) == found([tmp_path], tmp_path)


def test_default_excluded_directories(tmp_path: Path) -> None:
    excluded = [
        ".git", ".venv", "venv", "site-packages", "build", "dist", "node_modules",
        "__pycache__", ".tox", ".mypy_cache", ".ipynb_checkpoints",
    ]  # fmt: skip
    make(tmp_path, "keep.py", *(f"{d}/x.py" for d in excluded), "src/build/y.py")
    assert found([tmp_path], tmp_path) == ["keep.py"]


def test_any_directory_with_pyvenv_cfg_is_skipped(tmp_path: Path) -> None:
    make(tmp_path, "keep.py", "myenv/lib/mod.py")
    (tmp_path / "myenv" / "pyvenv.cfg").write_text("home = /usr\n")
    assert found([tmp_path], tmp_path) == ["keep.py"]


def test_a_virtual_environment_named_itself_is_walked_but_not_those_below(
    tmp_path: Path,
) -> None:
    """`pyvenv.cfg` is looked for among a walked directory's entries: the directory named on
    the command line is walked whatever it holds; a `pyvenv.cfg` that is a link to a file
    counts, one that is a directory does not."""
    make(tmp_path, "env/tool.py", "env/inner/lib/mod.py", "env/linked/lib/m.py", "env/dir/m.py")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "inner" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / "env" / "linked" / "pyvenv.cfg").symlink_to(tmp_path / "env" / "pyvenv.cfg")
    (tmp_path / "env" / "dir" / "pyvenv.cfg").mkdir()
    assert found([tmp_path / "env"], tmp_path) == ["env/dir/m.py", "env/tool.py"]


def test_explicit_path_is_always_yielded(tmp_path: Path) -> None:
    make(tmp_path, "build/gen.py", "venv/x.py", "notes.txt")
    (tmp_path / ".gitignore").write_text("gen.py\n")
    git_init(tmp_path)
    paths = [tmp_path / "build/gen.py", tmp_path / "notes.txt"]
    assert found(paths, tmp_path, exclude=["*.py"]) == ["build/gen.py", "notes.txt"]
    # An explicit directory is walked even when it is a default-excluded name.
    assert found([tmp_path / "venv"], tmp_path) == ["venv/x.py"]


def test_missing_path_is_an_error_and_the_rest_continues(tmp_path: Path) -> None:
    make(tmp_path, "a.py")
    assert found([tmp_path / "nope.py", tmp_path / "a.py"], tmp_path) == [
        "nope.py: no such file or directory",
        "a.py",
    ]


def test_gitignore_in_real_git_repo(tmp_path: Path) -> None:
    git_init(tmp_path)
    make(
        tmp_path,
        "main.py",
        "gen_pb2.py",
        "out/a.py",
        "src/out/b.py",
        "anchored/c.py",
        "src/anchored/d.py",
        "logs/keep.py",
        "logs/drop.py",
        "deep/x/y/z.py",
        "deep/x/keep.py",
    )
    (tmp_path / ".gitignore").write_text(
        "# comment\n\n*_pb2.py\nout/\n/anchored\nlogs/*.py\n!logs/keep.py\ndeep/**/y\n"
    )
    assert found([tmp_path], tmp_path) == [
        "deep/x/keep.py",
        "logs/keep.py",
        "main.py",
        "src/anchored/d.py",
    ]


def test_nested_gitignore_applies_below_its_directory_only(tmp_path: Path) -> None:
    git_init(tmp_path)
    make(tmp_path, "a/skip.py", "a/keep.py", "b/skip.py")
    (tmp_path / "a" / ".gitignore").write_text("skip.py\n")
    assert found([tmp_path], tmp_path) == ["a/keep.py", "b/skip.py"]


def test_deeper_gitignore_can_negate_a_parent_pattern(tmp_path: Path) -> None:
    git_init(tmp_path)
    make(tmp_path, "a/gen.py", "b/gen.py")
    (tmp_path / ".gitignore").write_text("gen.py\n")
    (tmp_path / "b" / ".gitignore").write_text("!gen.py\n")
    assert found([tmp_path], tmp_path) == ["b/gen.py"]


def test_parent_gitignore_up_to_git_root_applies_to_a_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git_init(repo)
    make(repo, "src/pkg/a.py", "src/pkg/generated/b.py", "src/pkg/c_pb2.py")
    (repo / ".gitignore").write_text("generated/\n*_pb2.py\n")
    # A .gitignore above the git root is not part of this repository.
    (tmp_path / ".gitignore").write_text("a.py\n")
    assert found([repo / "src" / "pkg"], repo) == ["src/pkg/a.py"]


def test_git_info_exclude_is_honoured(tmp_path: Path) -> None:
    git_init(tmp_path)
    make(tmp_path, "a.py", "scratch.py")
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n")
    assert found([tmp_path], tmp_path) == ["a.py"]


def test_without_git_root_only_gitignores_inside_the_tree_apply(tmp_path: Path) -> None:
    make(tmp_path, "proj/a.py", "proj/b.py")
    (tmp_path / "proj" / ".gitignore").write_text("b.py\n")
    assert found([tmp_path / "proj"], tmp_path) == ["proj/a.py"]


def test_exclude_globs(tmp_path: Path) -> None:
    make(tmp_path, "a.py", "legacy/b.py", "src/legacy/c.py", "tests/data/d.py", "e_test.py")
    got = found([tmp_path], tmp_path, exclude=["legacy/", "/tests/data", "*_test.py"])
    assert got == ["a.py"]


def test_exclude_relative_to_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "src/a.py", "src/old/b.py")
    monkeypatch.chdir(tmp_path)
    assert found(["src"], tmp_path, exclude=["src/old"]) == ["src/a.py"]


def test_relative_paths_keep_the_users_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "src/a.py")
    monkeypatch.chdir(tmp_path)
    assert list(discover([Path("src")])) == [Path("src/a.py")]
    assert list(discover([Path(".")])) == [Path("src/a.py")]


def test_symlinked_file_outside_the_tree_is_an_error(tmp_path: Path) -> None:
    make(tmp_path, "outside/secret.py", "proj/a.py")
    (tmp_path / "proj" / "link.py").symlink_to(tmp_path / "outside" / "secret.py")
    got = found([tmp_path / "proj"], tmp_path)
    assert got[0] == "proj/a.py"
    assert got[1].startswith("proj/link.py: symlink points outside the tree")
    assert len(got) == 2


def test_symlinked_directory_is_never_followed(tmp_path: Path) -> None:
    make(tmp_path, "outside/x.py", "proj/a.py", "proj/real/b.py")
    (tmp_path / "proj" / "ext").symlink_to(tmp_path / "outside", target_is_directory=True)
    (tmp_path / "proj" / "loop").symlink_to(tmp_path / "proj", target_is_directory=True)
    (tmp_path / "proj" / "alias").symlink_to(tmp_path / "proj" / "real")
    assert found([tmp_path / "proj"], tmp_path) == ["proj/a.py", "proj/real/b.py"]


def test_symlinked_file_inside_the_tree_is_yielded_once(tmp_path: Path) -> None:
    make(tmp_path, "proj/z_real.py", "proj/other.txt")
    (tmp_path / "proj" / "a_link.py").symlink_to(tmp_path / "proj" / "z_real.py")
    # The real file wins over a link to it, even though the link sorts first.
    assert found([tmp_path / "proj"], tmp_path) == ["proj/z_real.py"]
    # A link to an in-tree file that is not itself a candidate is yielded as the link.
    (tmp_path / "proj" / "b_link.py").symlink_to(tmp_path / "proj" / "other.txt")
    assert found([tmp_path / "proj"], tmp_path) == ["proj/b_link.py", "proj/z_real.py"]


def test_broken_symlink_is_an_error(tmp_path: Path) -> None:
    make(tmp_path, "proj/a.py")
    (tmp_path / "proj" / "gone.py").symlink_to(tmp_path / "nowhere.py")
    assert found([tmp_path / "proj"], tmp_path) == ["proj/a.py", "proj/gone.py: broken symlink"]


def test_same_file_given_twice_or_overlapping_roots_yields_once(tmp_path: Path) -> None:
    make(tmp_path, "a.py", "sub/b.py")
    got = found([tmp_path, tmp_path / "sub", tmp_path / "a.py"], tmp_path)
    assert got == ["a.py", "sub/b.py"]


def test_unreadable_directory_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make(tmp_path, "a.py", "locked/b.py")
    locked = tmp_path / "locked"
    real_scandir = os.scandir

    # chmod 0 does not stop root (these tests may run as root), so refuse like the OS would.
    def scandir(path: Path) -> object:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("est2tpu.discovery.os.scandir", scandir)
    assert found([tmp_path], tmp_path) == [
        "a.py",
        "locked: cannot read directory: Permission denied",
    ]


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "matches"),
    [
        pytest.param("*.py", "a/b/c.py", False, True, id="star_ext_any_depth"),
        pytest.param("*.py", "c.pyc", False, False, id="star_ext_exact_suffix"),
        pytest.param("/top.py", "top.py", False, True, id="anchored_top"),
        pytest.param("/top.py", "sub/top.py", False, False, id="anchored_not_below"),
        pytest.param("a/*.py", "a/b/c.py", False, False, id="star_does_not_cross_slash"),
        pytest.param("a/**/c.py", "a/c.py", False, True, id="double_star_zero_dirs"),
        pytest.param("a/**/c.py", "a/x/y/c.py", False, True, id="double_star_many_dirs"),
        pytest.param("**/c.py", "x/c.py", False, True, id="leading_double_star"),
        pytest.param("a/**", "a/x/y", False, True, id="trailing_double_star"),
        pytest.param("out/", "out", False, False, id="dir_only_not_file"),
        pytest.param("out/", "x/out", True, True, id="dir_only_dir_any_depth"),
        pytest.param("f?.py", "f1.py", False, True, id="question_mark"),
        pytest.param("f[0-9].py", "f7.py", False, True, id="char_class"),
        pytest.param("f[!0-9].py", "f7.py", False, False, id="negated_char_class"),
        pytest.param("\\#x.py", "#x.py", False, True, id="escaped_hash"),
    ],
)
def test_gitignore_pattern_semantics(pattern: str, path: str, is_dir: bool, matches: bool) -> None:
    (compiled,) = parse_ignore_lines([pattern], Path("/base"))
    assert compiled.matches(path, is_dir) is matches


def test_comments_and_blank_lines_compile_to_nothing() -> None:
    assert parse_ignore_lines(["# c", "", "   ", "/"], Path("/base")) == []
