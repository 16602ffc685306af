"""What a command-line run reads, reports and may write: the project around the files named,
and the directories a file may be written in."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from est2tpu.ftypes import FileResult

__all__ = ["around", "cache_dir_problem", "is_within", "related", "trees"]


def is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def trees(path: Path, given: Sequence[Path]) -> list[str]:
    """The real directories a file found under ``given`` may be written in: the directory
    it was found under, or for a file named itself, its own directory and the working one
    (the walk allows a symlink into either)."""
    for root in given:
        if root == path:
            return [os.path.realpath(path.absolute().parent), os.path.realpath(os.getcwd())]
    for root in given:
        if root.is_dir() and root in path.parents:
            return [os.path.realpath(root)]
    return [os.path.realpath(os.getcwd())]


def around(named: Sequence[Path], config_root: Path | None) -> list[Path]:
    """The project around files named on their own, to be read with them: the directory of
    the config that applies to a file, else its git work tree, else the Python files and
    notebooks beside it (its directory alone, not walked: it may be a home directory).
    Spelled from the working directory when inside it, as the files it holds are reported.
    """
    here = Path.cwd()
    out: dict[Path, None] = {}
    for path in named:
        absolute = Path(os.path.abspath(path))
        root = None
        if config_root is not None and config_root in absolute.parents:
            root = config_root
        else:
            root = next((d for d in absolute.parents if (d / ".git").exists()), None)
        if root is not None:
            out[_spelled(root, here)] = None
            continue
        try:
            beside = sorted(absolute.parent.iterdir())
        except OSError:
            continue
        for other in beside:
            if other.suffix in (".py", ".ipynb") and other != absolute:
                out[_spelled(other, here)] = None
    return [p for p in out if p not in named]


def _spelled(path: Path, here: Path) -> Path:
    return Path(os.path.relpath(path, here)) if path == here or here in path.parents else path


def cache_dir_problem(cache_dir: Path, paths: Sequence[str]) -> str | None:
    """Why a --cache-dir cannot be used, or None.

    A symlink would take the cache's writes wherever it points (out of the project); a
    directory that holds a path to migrate would hide it behind the cache's `*` .gitignore.
    """
    if cache_dir.is_symlink():
        return "is a symlink; give the directory it points to, or another one"
    real = os.path.realpath(cache_dir)
    for p in paths:
        if p != "-" and is_within(os.path.realpath(p), real):
            return f"holds {p}, which is to be migrated; keep the cache in a directory of its own"
    return None


def _words(result: FileResult) -> set[str]:
    return set(re.findall(r"\w+", result.old_text or ""))


def _module_name(path: Path) -> str:
    """The last part of the name a file is imported by (a package's `__init__.py`: the
    package's)."""
    return path.absolute().parent.name if path.stem == "__init__" else path.stem


def related(named: FileResult, other: FileResult) -> bool:
    """Whether two files of a project may depend on each other: either spells the other's
    module name (an import, a use). Over-approximates, never misses an import."""
    return _module_name(other.path) in _words(named) or _module_name(named.path) in _words(other)
