"""Find the files to migrate: walk directories, honour .gitignore and excludes, stay in the tree."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_EXCLUDED_DIRS", "IgnorePattern", "discover", "parse_ignore_lines"]

SUFFIXES = (".py", ".ipynb")

#: Directory names never walked into (they hold other people's code or build output).
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "site-packages",
        "build",
        "dist",
        "node_modules",
        "__pycache__",
        ".tox",
        ".nox",
        ".eggs",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        # Jupyter's autosave copies: migrating them would duplicate every notebook.
        ".ipynb_checkpoints",
    }
)


@dataclass(frozen=True)
class IgnorePattern:
    """One compiled gitignore line, matched against paths relative to ``base``."""

    base: Path
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    prefix: str = field(init=False, repr=False, compare=False)  # str(base) + separator

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", os.path.join(str(self.base), ""))

    def matches(self, rel: str, is_dir: bool) -> bool:
        """Whether the posix path ``rel`` (relative to ``base``) matches this line."""
        if self.dir_only and not is_dir:
            return False
        return self.regex.match(rel) is not None


def _translate(pattern: str) -> str:
    """Translate a gitignore glob (without anchoring) into a regex body."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
                rest = pattern[i + 2 : i + 3]
                if rest == "/":  # "**/" : zero or more directories
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                if rest == "":  # trailing "**": everything below
                    out.append(".*")
                    i += 2
                    continue
            # Any other run of stars behaves like one "*" (git does the same).
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:  # no closing bracket: a literal "["
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _compile_line(line: str, base: Path) -> IgnorePattern | None:
    line = line.rstrip("\n").rstrip("\r")
    # Trailing spaces are ignored unless escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "
    line = stripped
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    # "!x" negates; a backslash escapes a literal "!" or "#": either way one character goes.
    if negate or line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    # A slash anywhere but at the end anchors the pattern to the .gitignore's directory.
    anchored = "/" in line
    line = line.lstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    try:
        regex = re.compile(f"^{prefix}{_translate(line)}$", re.DOTALL)
    except re.error:
        return None  # git silently ignores lines it cannot use; so do we
    return IgnorePattern(base=base, regex=regex, negate=negate, dir_only=dir_only)


def parse_ignore_lines(lines: Iterable[str], base: Path) -> list[IgnorePattern]:
    """Compile gitignore-syntax ``lines`` whose paths are relative to ``base``."""
    return [p for p in (_compile_line(line, base) for line in lines) if p is not None]


def _read_ignore_file(path: Path, base: Path) -> list[IgnorePattern]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []  # an unreadable .gitignore is not worth failing the run for
    return parse_ignore_lines(text.splitlines(), base)


def _is_ignored(path: Path | str, is_dir: bool, patterns: Sequence[IgnorePattern]) -> bool:
    """Last matching pattern wins; patterns are ordered outermost file first.

    ``path`` is absolute and normalised (the walk builds it by joining names).
    """
    ignored = False
    path = str(path)
    for pat in patterns:
        if not path.startswith(pat.prefix):
            continue
        rel = path[len(pat.prefix) :]
        if os.sep != "/":  # pragma: no cover - not POSIX
            rel = rel.replace(os.sep, "/")
        if pat.matches(rel, is_dir):
            ignored = not pat.negate
    return ignored


def _find_git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _inherited_patterns(root: Path) -> list[IgnorePattern]:
    """Patterns from .gitignore files in ``root``'s parents, up to the git root."""
    git_root = _find_git_root(root)
    if git_root is None:
        return []
    chain = [root, *root.parents]
    chain = chain[: chain.index(git_root) + 1]
    patterns = _read_ignore_file(git_root / ".git" / "info" / "exclude", git_root)
    for d in reversed(chain[1:]):  # outermost first; root's own file is read by the walk
        patterns += _read_ignore_file(d / ".gitignore", d)
    return patterns


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _not_regular(path: Path | str) -> str | None:
    """Why ``path`` (followed through symlinks) is not a file we can read, or None.

    Reading a FIFO blocks until someone writes to it, and a device can be endless: only
    regular files are ever opened.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"not a regular file ({kind})"


def _is_venv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


@dataclass
class _Walk:
    """State of one walk under one root given on the command line.

    The walk works on absolute (not resolved) path strings so that .gitignore files above
    the current directory apply; results are yielded in the user's own spelling. It never
    enters a symlinked directory, so a regular file's real path is the real root joined
    with its path below the root (no `realpath` per file).
    """

    given: Path  # as the user spelled it
    root: str  # absolute, symlinks not resolved
    real_root: str
    excludes: list[IgnorePattern]
    cwd_excludes: list[IgnorePattern]
    # (path below the root, split at separators, for sorting; what to yield; real path)
    found: list[tuple[list[str], Path | tuple[Path, str], str | None]]
    links: list[tuple[list[str], Path, str]]  # symlinked files inside the tree: target
    # Every directory walked (absolute, not resolved) and the ignore patterns that apply in it.
    walked: dict[str, list[IgnorePattern]] = field(default_factory=dict)

    def spelled(self, rel: str) -> Path:
        return self.given / rel if rel else self.given

    def excluded(self, path: str, is_dir: bool) -> bool:
        return _is_ignored(path, is_dir, self.excludes) or _is_ignored(
            path, is_dir, self.cwd_excludes
        )

    def add(self, rel: str, item: Path | tuple[Path, str], real: str | None) -> None:
        self.found.append((rel.split(os.sep), item, real))

    def walk(self, directory: str, rel_dir: str, patterns: list[IgnorePattern]) -> None:
        # A stack, not recursion: a tree 1,000 directories deep is walked like any other.
        stack = [(directory, rel_dir, patterns)]
        while stack:
            stack.extend(reversed(self._walk_one(*stack.pop())))

    def _walk_one(
        self, directory: str, rel_dir: str, patterns: list[IgnorePattern]
    ) -> list[tuple[str, str, list[IgnorePattern]]]:
        """Walk one directory's entries; return its subdirectories to walk."""
        own = os.path.join(directory, ".gitignore")
        if os.path.isfile(own):
            patterns = patterns + _read_ignore_file(Path(own), Path(directory))
        self.walked[directory] = patterns
        subdirs: list[tuple[str, str, list[IgnorePattern]]] = []
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            reason = f"cannot read directory: {exc.strerror or exc}"
            self.add(rel_dir, (self.spelled(rel_dir), reason), None)
            return subdirs
        for entry in entries:
            path = os.path.join(directory, entry.name)
            rel = os.path.join(rel_dir, entry.name) if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as exc:
                reason = f"cannot stat: {exc.strerror or exc}"
                self.add(rel, (self.spelled(rel), reason), None)
                continue
            if is_dir:
                if entry.name in DEFAULT_EXCLUDED_DIRS or _is_venv(path):
                    continue
                if _is_ignored(path, True, patterns) or self.excluded(path, True):
                    continue
                subdirs.append((path, rel, patterns))
                continue
            if not entry.name.endswith(SUFFIXES):
                continue
            if _is_ignored(path, False, patterns) or self.excluded(path, False):
                continue
            if is_link:
                self._link(path, rel)
            elif entry.is_file(follow_symlinks=False):  # a regular file (no stat needed)
                self.add(rel, self.spelled(rel), os.path.join(self.real_root, rel))
            elif (odd := _not_regular(path)) is not None:
                self.add(rel, (self.spelled(rel), odd), None)
            else:  # pragma: no cover - d_type said "not a file" but stat says it is
                self.add(rel, self.spelled(rel), os.path.join(self.real_root, rel))
        return subdirs

    def target_excluded(self, target: str) -> bool:
        """Whether the walk leaves out the real file ``target`` (inside the real root).

        A symlink in the tree must not reach a file that the walk itself would not touch:
        one in `.venv`, `build/`, a gitignored directory, or excluded by name.
        """
        rel = os.path.relpath(target, self.real_root)
        path = os.path.join(self.root, rel)
        patterns = self.walked.get(os.path.dirname(path))
        if patterns is None:  # its directory was not walked: excluded, or below one
            return True
        return _is_ignored(path, False, patterns) or self.excluded(path, False)

    def _link(self, path: str, rel: str) -> None:
        # Symlinked directories are never entered (their contents inside the tree are found
        # through their real path; outside it they are none of our business), so only
        # symlinked files get here.
        target = os.path.realpath(path)
        if not os.path.exists(target):
            self.add(rel, (self.spelled(rel), "broken symlink"), None)
        elif os.path.isdir(target):
            return
        elif not _is_within(target, self.real_root):
            reason = f"symlink points outside the tree ({target})"
            self.add(rel, (self.spelled(rel), reason), None)
        elif (odd := _not_regular(target)) is not None:
            self.add(rel, (self.spelled(rel), odd), None)
        else:
            self.links.append((rel.split(os.sep), self.spelled(rel), target))


def _explicit_link_outside(given: Path, real: str) -> str | None:
    """Why a file named on the command line is a symlink out of the tree, or None.

    Its tree is the directory it was named in, or the working directory (a pre-commit hook
    names files from the repository's root): the walk refuses the same link.
    """
    if not os.path.islink(given):
        return None
    trees = (os.path.realpath(given.absolute().parent), os.path.realpath(os.getcwd()))
    if any(_is_within(real, tree) for tree in trees):
        return None
    return f"symlink points outside the tree ({real})"


def discover(
    paths: Sequence[Path | str], *, exclude: Sequence[str] = ()
) -> Iterator[Path | tuple[Path, str]]:
    """Yield the files to migrate under ``paths``, in a deterministic (sorted) order.

    Directories are walked for ``*.py`` and ``*.ipynb``; ``.gitignore`` files in the walked
    directories and in their parents up to the git root are honoured, as are
    :data:`DEFAULT_EXCLUDED_DIRS`, any directory holding a ``pyvenv.cfg``, and the
    gitignore-style ``exclude`` patterns (matched relative to each walked root and to the
    current directory). Symlinks are never followed out of the walked root, and no real
    file is yielded twice.

    A path given explicitly is always yielded, whatever the excludes say. A problem is
    yielded as ``(path, one-line reason)``: a missing path, an unreadable directory, a
    broken symlink, a symlinked file pointing outside the tree, or something that is not
    a regular file (a FIFO would block the run forever).
    """
    seen: set[str] = set()
    cwd_excludes = parse_ignore_lines(exclude, Path.cwd())
    for raw in paths:
        given = Path(raw)
        if not os.path.exists(given):
            reason = "broken symlink" if os.path.islink(given) else "no such file or directory"
            yield (given, reason)
            continue
        if not given.is_dir():
            real = os.path.realpath(given)
            if (odd := _not_regular(given)) is not None:
                yield (given, odd)
            elif (outside := _explicit_link_outside(given, real)) is not None:
                yield (given, outside)
            elif real not in seen:
                seen.add(real)
                yield given
            continue
        root = str(given.absolute())
        walk = _Walk(
            given=given,
            root=root,
            real_root=os.path.realpath(given),
            excludes=parse_ignore_lines(exclude, Path(root)),
            cwd_excludes=cwd_excludes,
            found=[],
            links=[],
        )
        walk.walk(root, "", _inherited_patterns(Path(root)))
        yield from _merge(walk, seen)


def _merge(walk: _Walk, seen: set[str]) -> Iterator[Path | tuple[Path, str]]:
    """Yield a walk's results in path order; a link is kept only if its target is not."""
    regular = {real for _, item, real in walk.found if real is not None}
    items = list(walk.found)
    items += [
        (parts, link, target)
        for parts, link, target in walk.links
        if target not in regular and not walk.target_excluded(target)
    ]
    items.sort(key=lambda entry: entry[0])
    for _, item, real in items:
        if real is not None:
            if real in seen:
                continue
            seen.add(real)
        yield item
