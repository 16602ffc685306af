"""The line length a project's linter configuration sets, found from a file on disk."""

from __future__ import annotations

import os
import stat
import sys

__all__ = ["configured_line_length"]

# Line lengths the linters use when their section is there without one.
_DEFAULT_LENGTH = {"ruff": 88, "black": 88, "flake8": 79, "pycodestyle": 79}


def configured_line_length(
    path: str, seen: dict[str, int | None] | None = None, reals: dict[str, str] | None = None
) -> int | None:
    """The line length of the linter configuration nearest above `path`, a file on disk:
    ruff (`ruff.toml`, `.ruff.toml`, `[tool.ruff]`), black (`[tool.black]`), flake8 or
    pycodestyle (`setup.cfg`, `tox.ini`, `.flake8`); a section without a length means
    the linter's default (88, or 79). None when no configuration sets one, or `path` is
    not a file (a text given on its own). `seen` holds the answers found already, by
    folder (a run asks for every file of a tree, and reads each configuration once), and
    `reals` the folders' real paths found already."""
    if path == "-":
        return None
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return None
    if seen is None:
        seen = {}
    if reals is None:
        reals = {}
    if stat.S_ISLNK(mode):  # its target's folder, not the folder it is named in
        if not os.path.isfile(path):
            return None
        return _length_above(os.path.dirname(os.path.realpath(path)), seen)
    if not stat.S_ISREG(mode):
        return None
    # by the folder as spelled too: its answer is the answer of the folder it resolves to
    spelled = os.path.dirname(path)
    if spelled not in seen:
        seen[spelled] = _length_above(_real_folder(path, reals), seen)
    return seen[spelled]


def _real_folder(path: str, reals: dict[str, str]) -> str:
    """`os.path.dirname(os.path.realpath(path))` of a file that is not a symlink, each
    folder above it resolved once a run: a folder's real path is its parent's joined with
    its name, resolved again only where that name is a symlink. A path that goes up (`..`) is resolved whole, as realpath
    resolves the symlinks before it, and so is one that starts with `//` (which abspath
    keeps and realpath does not)."""
    absolute = os.path.abspath(path)
    if ".." in path.split(os.sep) or absolute.startswith("//"):
        return os.path.dirname(os.path.realpath(path))
    return _real(os.path.dirname(absolute), reals)


def _real(folder: str, reals: dict[str, str]) -> str:
    """The real path of `folder` (absolute, normalised), from its nearest resolved ancestor
    down (a loop, not recursion: a file may be a thousand folders deep)."""
    names: list[str] = []
    at = folder
    while at not in reals:
        parent, name = os.path.split(at)
        if not name or parent == at:
            reals[at] = at  # the root
            break
        names.append(name)
        at = parent
    real = reals[at]
    for name in reversed(names):
        at = os.path.join(at, name)
        real = os.path.join(real, name)
        if os.path.islink(real):
            real = os.path.realpath(real)
        reals[at] = real
    return real


def _length_above(directory: str, seen: dict[str, int | None]) -> int | None:
    """The length configured in `directory` (absolute, resolved) or the nearest folder
    above it; each folder walked keeps the answer in `seen`."""
    walked: list[str] = []
    found: int | None = None
    folder = directory
    while True:
        if folder in seen:
            found = seen[folder]
            break
        walked.append(folder)
        found = _length_in(folder)
        parent = os.path.dirname(folder)
        if found is not None or parent == folder:
            break
        folder = parent
    for key in walked:
        seen[key] = found
    return found


def _length_in(folder: str) -> int | None:
    for name in ("ruff.toml", ".ruff.toml"):
        table = _toml(os.path.join(folder, name))
        if table is not None:
            return _int(table.get("line-length"), _DEFAULT_LENGTH["ruff"])
    pyproject = _toml(os.path.join(folder, "pyproject.toml"))
    tools = pyproject.get("tool", {}) if pyproject is not None else {}
    if isinstance(tools, dict):
        for tool, key in (("ruff", "line-length"), ("black", "line-length")):
            table = tools.get(tool)
            if isinstance(table, dict):
                return _int(table.get(key), _DEFAULT_LENGTH[tool])
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        file = os.path.join(folder, name)
        if not os.path.isfile(file):
            continue
        import configparser  # here: most folders have none of these files

        parser = configparser.RawConfigParser()
        try:
            parser.read(file, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError, OSError):
            continue
        for section in ("flake8", "pycodestyle"):
            if parser.has_section(section):
                value = parser.get(section, "max-line-length", fallback=None)
                if value is None:
                    value = parser.get(section, "max_line_length", fallback=None)
                return _int(value, _DEFAULT_LENGTH[section])
    return None


def _toml(file: str) -> dict[str, object] | None:
    if not os.path.isfile(file):
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        with open(file, encoding="utf-8") as f:
            return tomllib.loads(f.read())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        return None


def _int(value: object, default: int) -> int:
    try:
        number = int(str(value)) if value is not None else default
    except ValueError:
        return default
    return number if number > 0 else default
